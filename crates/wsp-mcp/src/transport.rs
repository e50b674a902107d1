//! Transports: stdio (or any byte pipe) and streamable HTTP mounted in axum.

use std::future::Future;
use std::io;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

use crate::{HttpAuth, McpServer};

/// Where [`McpServer::http_router`] serves MCP: `http://ADDR/mcp`.
pub const HTTP_PATH: &str = "/mcp";

impl McpServer {
    /// Speaks MCP over stdin and stdout until the client closes stdin.
    ///
    /// One client sends one message at a time here, so a current-thread tokio runtime serves it
    /// best (no hand-off between threads per message); `wsp mcp` runs it on one.
    pub async fn serve_stdio(self) -> io::Result<()> {
        // Non-blocking pipes when the host gave us pipes: no thread hand-off per message.
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        self.serve_io(stdin, stdout).await
    }

    /// Speaks MCP (newline-delimited JSON-RPC) over any byte pipe until it closes.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> io::Result<()>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .serve((reader, writer))
            .await
            .map_err(|e| io::Error::other(format!("MCP session did not start: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| io::Error::other(format!("MCP session failed: {e}")))?;
        Ok(())
    }

    /// The streamable HTTP endpoint at [`HTTP_PATH`], as an axum router to serve or nest, and
    /// the function that ends its sessions and open streams (call it on shutdown, or a
    /// graceful shutdown waits for clients' event streams forever).
    ///
    /// Every HTTP session gets a clone of this server. With [`HttpAuth::Bearer`], a request
    /// without the token is answered 401 before MCP sees it. Only loopback `Host` headers are
    /// accepted (rmcp's DNS-rebinding protection).
    pub fn http_router(&self, auth: HttpAuth) -> (axum::Router, impl FnOnce() + Send + 'static) {
        let config = StreamableHttpServerConfig::default();
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
        (router, move || token.cancel())
    }

    /// Serves streamable HTTP on `listener` until `shutdown` completes, then ends the
    /// sessions and drains in-flight requests.
    pub async fn serve_http(
        self,
        listener: TcpListener,
        auth: HttpAuth,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let (router, close_sessions) = self.http_router(auth);
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                close_sessions();
            })
            .await
    }
}
