//! The wsp web console: server-rendered pages under `/console/` for the people who curate
//! agent workspaces (browse, view, edit with conflict merge, history, runs, context, agents).
//!
//! **Invariant:** the console is a client of the same handlers, never a second store path:
//! every read and write is a `/v1` request through the API router it is given, authorized by
//! the signed-in person's own key, so it reaches nothing that key could not reach over `/v1`.
//!
//! A host mounts it beside the API:
//!
//! ```no_run
//! # fn demo(api: axum::Router) -> axum::Router {
//! use wsp_console::ConsoleConfig;
//!
//! // `api` is `wsp_server::router(state)`; the console calls it in process.
//! wsp_console::router(api.clone(), ConsoleConfig::default()).merge(api)
//! # }
//! ```

mod api;
mod assets;
mod diff;
mod error;
mod markdown;
mod multipart;
mod pages;
mod session;
mod view;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;

/// Settings of the console.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConsoleConfig {
    /// How long a session lives without a request before it ends (default 30 minutes).
    pub idle_timeout: Duration,
    /// Whether the session cookie is marked `Secure` (set it when the server is reached over
    /// TLS; default off).
    pub secure_cookie: bool,
}

impl ConsoleConfig {
    /// This configuration with [`ConsoleConfig::idle_timeout`] set.
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// This configuration with [`ConsoleConfig::secure_cookie`] set.
    pub fn with_secure_cookie(mut self, secure_cookie: bool) -> Self {
        self.secure_cookie = secure_cookie;
        self
    }
}

impl Default for ConsoleConfig {
    /// Sessions end after 30 idle minutes; the cookie is not marked `Secure`.
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(30 * 60),
            secure_cookie: false,
        }
    }
}

/// The console's routes: `/console/...` and a redirect from `/` to `/console/`. Every page
/// calls `api` (the wsp API router, e.g. `wsp_server::router(state)`) in process with the
/// signed-in person's key; merge the result with `api` to serve both.
pub fn router(api: Router, config: ConsoleConfig) -> Router {
    pages::routes(Arc::new(pages::Console::new(api, config)))
}
