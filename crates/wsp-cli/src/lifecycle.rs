//! What every long-running `wsp` command shares: logging to standard error, as many open files
//! as the system allows, stopping on Ctrl-C or SIGTERM, and re-reading the TLS certificate on
//! SIGHUP.

use std::sync::Arc;

use wsp_listener::ServerTls;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines: `<time> <LEVEL> request{id=.. method=.. path=..}: <message> <fields>`.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, the event's fields, and `span`
    /// with the request's `id`, `method` and `path` on every line written during a request).
    Json,
}

/// Logs to standard error at the level `WSP_LOG` names (default `info`) as text; `ansi`
/// colours them when standard error is a terminal and `NO_COLOR` is unset or empty.
pub fn init_logging(ansi: bool) {
    init_logging_as(ansi, LogFormat::Text);
}

/// Logs to standard error at the level `WSP_LOG` names (default `info`) in `format`, access
/// lines in batches ([`crate::logbuf`]: one waits at most 50 ms); `ansi` colours text when
/// standard error is a terminal and `NO_COLOR` is unset or empty (JSON is never coloured).
pub fn init_logging_as(ansi: bool, format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("WSP_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(crate::logbuf::Buffered);
    let _ = match format {
        LogFormat::Text => builder
            // Colours only for a person at a terminal who did not turn them off, never into a
            // log file or a pipe.
            .with_ansi(ansi && colours_wanted())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .with_ansi(false)
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}

/// Whether standard error may be coloured: it is a terminal, and `NO_COLOR` is unset or empty
/// (<https://no-color.org>). The only colours `wsp` writes are its log lines': clap is built
/// without colour.
fn colours_wanted() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    !no_color && std::io::IsTerminal::is_terminal(&std::io::stderr())
}

/// Raises the soft limit on open files to the hard limit, so a server can hold as many
/// connections as the system lets it, and logs the limit now in force (`None`: unlimited or
/// unknown).
pub fn raise_open_file_limit() -> Option<u64> {
    let limit = wsp_listener::raise_fd_limit();
    match limit {
        Some(open_files) => tracing::info!(open_files, "open-file limit"),
        None => tracing::info!("open-file limit: none"),
    }
    limit
}

/// Resolves when `signal` arrives; never when it could not be installed.
#[cfg(unix)]
async fn received(signal: &mut Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// A future that resolves on Ctrl-C or SIGTERM. The handlers are installed when this is
/// called, not when the future is first polled: call it before announcing that the server
/// listens, so a signal sent right after the announcement drains instead of killing.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let streams = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let (mut int, mut term) = streams;
            tokio::select! {
                () = received(&mut int) => {},
                () = received(&mut term) => {},
            }
            // tokio's handlers stay installed, so the default action never comes back: keep
            // listening, and a second Ctrl-C or SIGTERM ends the process without finishing the
            // drain.
            tokio::spawn(async move {
                let code = tokio::select! {
                    () = received(&mut int) => 130,
                    () = received(&mut term) => 143,
                };
                tracing::warn!("second signal: stopping without finishing the drain");
                crate::logbuf::flush();
                std::process::exit(code);
            });
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            tokio::spawn(async {
                let _ = tokio::signal::ctrl_c().await;
                std::process::exit(130);
            });
        }
        tracing::info!(
            "shutting down: draining in-flight requests (Ctrl-C or SIGTERM again stops at once)"
        );
    }
}

/// On SIGHUP, re-reads the TLS certificate and key of `tls`: new connections get the new
/// certificate (connections already open keep theirs) and an INFO line says so; when a file is
/// bad, the certificate in use stays and an ERROR line says why. Without TLS, SIGHUP is logged
/// and ignored. Either way it no longer ends the process (its default action). The handler is
/// installed when this is called: call it before announcing that the server listens.
pub fn reload_tls_on_hangup(tls: Option<Arc<ServerTls>>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangup = match signal(SignalKind::hangup()) {
            Ok(hangup) => hangup,
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    "cannot handle SIGHUP: the TLS certificate cannot be reloaded"
                );
                return;
            }
        };
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                let Some(tls) = &tls else {
                    tracing::info!("SIGHUP: no TLS certificate to reload (no --tls-cert); ignored");
                    continue;
                };
                // Reading files blocks: not on a worker that serves connections.
                let reloading = tls.clone();
                let reloaded = tokio::task::spawn_blocking(move || reloading.reload())
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|reloaded| reloaded.map_err(|e| e.to_string()));
                match reloaded {
                    Ok(()) => tracing::info!(
                        cert = %tls.cert_file().display(),
                        key = %tls.key_file().display(),
                        "SIGHUP: TLS certificate reloaded; new connections use it"
                    ),
                    Err(error) => tracing::error!(
                        %error,
                        "SIGHUP: TLS certificate not reloaded; still serving the previous one"
                    ),
                }
            }
        });
    }
    #[cfg(not(unix))]
    {
        let _ = tls;
    }
}
