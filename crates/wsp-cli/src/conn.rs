//! The connection flags of `wsp serve` and `wsp mcp --http`: what a client's connection may
//! take (`--header-timeout`, `--idle-timeout`, `--body-timeout`, `--body-deadline`,
//! `--min-body-rate`, `--body-rate-window`, `--write-timeout`), how many may be open
//! (`--max-connections`, `--max-connections-per-address`), how long shutdown waits
//! (`--drain-timeout`), whether they speak TLS (`--tls-cert`, `--tls-key`), and for MCP which
//! hosts and browser origins are answered (`--allow-host`, `--allow-origin`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use wsp_listener::{ConnectionLimits, ServerTls};
use wsp_mcp::{HttpAllowList, HttpAuth, HttpOptions};

/// Timeouts and the connection cap, in seconds and connections; TLS.
#[derive(Debug, Clone, Args)]
pub struct ConnArgs {
    /// Serve HTTPS with this certificate chain (PEM: the server's certificate first, then any
    /// intermediates); needs --tls-key. Both files are read again on SIGHUP.
    #[arg(long, env = "WSP_TLS_CERT", value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1, unencrypted).
    #[arg(long, env = "WSP_TLS_KEY", value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Most client connections open at once. At the cap, the connection idle longest (no
    /// request in progress) is closed to make room, else the one whose request body is
    /// furthest behind --min-body-rate (answered 408); when all are busy otherwise, new ones
    /// wait. [default: three quarters of the open-file limit, which is raised to its hard
    /// limit at start, at most 16384]
    #[arg(long, env = "WSP_MAX_CONNECTIONS", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    max_connections: Option<u64>,
    /// Most connections open at once from one client address (an IPv4 address or an IPv6
    /// /64; loopback included). Over it, that address's own idle or slowest connection makes
    /// room, or the new connection is closed. Behind a reverse proxy every client has the
    /// proxy's address: raise it to --max-connections.
    #[arg(long, env = "WSP_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = ConnectionLimits::DEFAULT_MAX_CONNECTIONS_PER_ADDRESS as u64, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    max_connections_per_address: u64,
    /// Seconds a client has to send a whole request header (from connecting, or from the
    /// first byte of a later request on a kept-alive connection).
    #[arg(long, env = "WSP_HEADER_TIMEOUT", default_value_t = ConnectionLimits::DEFAULT_HEADER_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3600))]
    header_timeout: u64,
    /// Seconds a kept-alive connection may wait for its next request before it is closed.
    #[arg(long, env = "WSP_IDLE_TIMEOUT", default_value_t = ConnectionLimits::DEFAULT_IDLE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=86_400))]
    idle_timeout: u64,
    /// Seconds a request body may pause before the request fails and its connection closes.
    #[arg(long, env = "WSP_BODY_TIMEOUT", default_value_t = ConnectionLimits::DEFAULT_BODY_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3600))]
    body_timeout: u64,
    /// Seconds a whole request body may take to arrive.
    #[arg(long, env = "WSP_BODY_DEADLINE", default_value_t = ConnectionLimits::DEFAULT_BODY_DEADLINE.as_secs(), value_parser = clap::value_parser!(u64).range(1..=86_400))]
    body_deadline: u64,
    /// Bytes per second a request body must average over each --body-rate-window while the
    /// server waits for it; slower, the request is answered 408 and its connection closed
    /// (0: no minimum).
    #[arg(long, env = "WSP_MIN_BODY_RATE", default_value_t = ConnectionLimits::DEFAULT_MIN_BODY_RATE, value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    min_body_rate: u64,
    /// Seconds over which --min-body-rate is measured; a body starts with one window of grace.
    #[arg(long, env = "WSP_BODY_RATE_WINDOW", default_value_t = ConnectionLimits::DEFAULT_BODY_RATE_WINDOW.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3600))]
    body_rate_window: u64,
    /// Seconds a response may wait for the client to read it before the connection closes.
    #[arg(long, env = "WSP_WRITE_TIMEOUT", default_value_t = ConnectionLimits::DEFAULT_WRITE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3600))]
    write_timeout: u64,
    /// Seconds requests in progress get to finish at shutdown (Ctrl-C, SIGTERM) before their
    /// connections are closed.
    #[arg(long, env = "WSP_DRAIN_TIMEOUT", default_value_t = ConnectionLimits::DEFAULT_DRAIN_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(0..=3600))]
    drain_timeout: u64,
}

impl ConnArgs {
    /// Whether `--tls-cert` and `--tls-key` were given.
    pub fn tls_requested(&self) -> bool {
        self.tls_cert.is_some()
    }

    /// The certificate and key of `--tls-cert` and `--tls-key`, read and checked (`None`
    /// without them); a bad file is an error naming it and what is wrong.
    pub fn tls(&self) -> Result<Option<Arc<ServerTls>>, crate::CliError> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let tls = ServerTls::load(cert, key).map_err(|e| crate::CliError(e.to_string()))?;
        tracing::info!(cert = %cert.display(), key = %key.display(), "TLS certificate loaded");
        Ok(Some(Arc::new(tls)))
    }

    /// Raises the process's open-file limit to its hard limit (and logs it), then the limits
    /// these flags describe, with the cap derived from the raised limit unless
    /// `--max-connections` is given. Call it once, after logging starts.
    pub fn connection_limits(&self) -> ConnectionLimits {
        let open_files = crate::lifecycle::raise_open_file_limit();
        let max_connections = match self.max_connections {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            // The listener's own rule, over the limit just raised.
            None => ConnectionLimits::default().max_connections,
        };
        if open_files.is_some_and(|limit| max_connections as u64 >= limit) {
            tracing::warn!(
                max_connections,
                "--max-connections is not below the open-file limit: when descriptors run out, \
                 idle connections are closed to accept new ones"
            );
        }
        let per_address = usize::try_from(self.max_connections_per_address).unwrap_or(usize::MAX);
        tracing::info!(
            max_connections,
            max_connections_per_address = per_address,
            "connection cap"
        );
        ConnectionLimits::default()
            .with_max_connections(max_connections)
            .with_max_connections_per_address(per_address)
            .with_min_body_rate(self.min_body_rate)
            .with_body_rate_window(Duration::from_secs(self.body_rate_window))
            .with_header_timeout(Duration::from_secs(self.header_timeout))
            .with_idle_timeout(Duration::from_secs(self.idle_timeout))
            .with_body_timeout(Duration::from_secs(self.body_timeout))
            .with_body_deadline(Duration::from_secs(self.body_deadline))
            .with_write_timeout(Duration::from_secs(self.write_timeout))
            .with_drain_timeout(Duration::from_secs(self.drain_timeout))
    }
}

/// The connection flags of `wsp mcp --http`: [`ConnArgs`], and the hosts and origins answered
/// besides loopback (DNS-rebinding protection).
#[derive(Debug, Clone, Args)]
pub struct McpConnArgs {
    #[command(flatten)]
    conn: ConnArgs,
    /// A `Host` the server answers besides loopback names, e.g. behind a proxy: NAME (any
    /// port) or NAME:PORT. Repeatable; WSP_MCP_ALLOW_HOST takes a comma-separated list.
    #[arg(long = "allow-host", value_name = "HOST", env = "WSP_MCP_ALLOW_HOST", value_delimiter = ',', value_parser = valid_host)]
    allow_host: Vec<String>,
    /// A browser `Origin` allowed to call the server besides loopback origins:
    /// https://NAME or https://NAME:PORT (or http://). Repeatable; WSP_MCP_ALLOW_ORIGIN takes a
    /// comma-separated list. Requests carrying any other Origin are refused (403).
    #[arg(long = "allow-origin", value_name = "ORIGIN", env = "WSP_MCP_ALLOW_ORIGIN", value_delimiter = ',', value_parser = valid_origin)]
    allow_origin: Vec<String>,
}

impl McpConnArgs {
    /// [`ConnArgs::tls_requested`].
    pub fn tls_requested(&self) -> bool {
        self.conn.tls_requested()
    }

    /// [`ConnArgs::tls`].
    pub fn tls(&self) -> Result<Option<Arc<ServerTls>>, crate::CliError> {
        self.conn.tls()
    }

    /// How `wsp mcp --http` serves with `auth`: the allow list and the connection limits
    /// ([`ConnArgs::connection_limits`], which raises the open-file limit).
    pub fn http_options(&self, auth: HttpAuth) -> HttpOptions {
        let mut allow = HttpAllowList::loopback();
        for host in &self.allow_host {
            allow = allow.allow_host(host).expect("checked when parsed");
        }
        for origin in &self.allow_origin {
            allow = allow.allow_origin(origin).expect("checked when parsed");
        }
        HttpOptions {
            auth,
            allow,
            limits: self.conn.connection_limits(),
        }
    }
}

fn valid_host(raw: &str) -> Result<String, String> {
    HttpAllowList::loopback()
        .allow_host(raw)
        .map(|_| raw.to_owned())
        .map_err(|e| e.to_string())
}

fn valid_origin(raw: &str) -> Result<String, String> {
    HttpAllowList::loopback()
        .allow_origin(raw)
        .map(|_| raw.to_owned())
        .map_err(|e| e.to_string())
}
