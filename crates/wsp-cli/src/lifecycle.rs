//! What every long-running `wsp` command shares: logging to standard error, and stopping on
//! Ctrl-C or SIGTERM.

/// Logs to standard error at the level `WSP_LOG` names (default `info`); `ansi` colours them
/// when standard error is a terminal.
pub fn init_logging(ansi: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("WSP_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal, never into a log file or a pipe.
        .with_ansi(ansi && std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: draining in-flight requests");
}
