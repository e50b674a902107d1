//! The streamable HTTP transport (feature `http`, on by default): MCP at [`HTTP_PATH`] in an
//! axum router, behind the allow list and the bearer token ([`crate::auth`]), served by
//! wsp-listener. This module and `auth` are the only places the crate names axum, and both
//! compile only with the feature, so `default-features = false` leaves axum out.

use std::future::Future;
use std::io;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::{HttpAllowList, HttpAuth, McpServer};

pub use wsp_listener::{ConnectionLimits, Listener, ServerTls};

/// Where [`McpServer::http_router`] serves MCP: `http://ADDR/mcp`.
pub const HTTP_PATH: &str = "/mcp";

/// How [`McpServer::serve_http`] serves: who may call, which hosts and origins it answers,
/// and what a connection may take.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The bearer token every request carries (or authentication upstream).
    pub auth: HttpAuth,
    /// Accepted `Host` and `Origin` values beyond loopback.
    pub allow: HttpAllowList,
    /// Timeouts and the connection cap.
    pub limits: ConnectionLimits,
}

impl HttpOptions {
    /// `auth`, loopback hosts and origins only, default connection limits.
    pub fn new(auth: HttpAuth) -> Self {
        Self {
            auth,
            allow: HttpAllowList::loopback(),
            limits: ConnectionLimits::default(),
        }
    }
}

impl McpServer {
    /// The streamable HTTP endpoint at [`HTTP_PATH`], as an axum router to serve or nest, and
    /// the function that ends its sessions and open streams (call it on shutdown, or a
    /// graceful shutdown waits for clients' event streams forever).
    ///
    /// Every HTTP session gets a clone of this server. A request that does not name this
    /// server (one `Host` header, loopback or in `allow`; an absolute-form target with the same
    /// authority; an `Origin`, if any, loopback or in `allow`) is answered 403 first
    /// (DNS-rebinding protection); then, with [`HttpAuth::Bearer`], a request without the
    /// token is answered 401 before MCP sees it.
    pub fn http_router(
        &self,
        auth: HttpAuth,
        allow: HttpAllowList,
    ) -> (axum::Router, impl FnOnce() + Send + 'static) {
        // The Host check is the allow list's (exactly one Host, the target's authority, the
        // Origin), applied to every route before the token.
        let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
        let token = config.cancellation_token.clone();
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let mut router = axum::Router::new().route_service(HTTP_PATH, service);
        if let HttpAuth::Bearer(bearer) = auth {
            router = router.layer(axum::middleware::from_fn_with_state(
                bearer,
                crate::auth::require_bearer,
            ));
        }
        // Added last, so it runs first.
        let router = router.layer(axum::middleware::from_fn_with_state(
            Arc::new(allow),
            crate::auth::require_allowed_host,
        ));
        (router, move || token.cancel())
    }

    /// Serves streamable HTTP on `listener` (a `TcpListener`, or a [`Listener`] with
    /// [`ServerTls`] for HTTPS) under `options` (wsp-listener: header, idle, body and write
    /// timeouts, and a connection cap that closes the connection idle longest) until
    /// `shutdown` completes, then ends the sessions and drains in-flight requests for at most
    /// `options.limits.drain_timeout`.
    pub async fn serve_http(
        self,
        listener: impl Into<Listener>,
        options: HttpOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let (router, close_sessions) = self.http_router(options.auth, options.allow);
        let shutdown = async move {
            shutdown.await;
            close_sessions();
        };
        wsp_listener::serve(listener, router, options.limits, shutdown).await
    }
}
