//! The stdio transport (or any byte pipe): newline-delimited JSON-RPC.

use std::io;

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::McpServer;

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
}
