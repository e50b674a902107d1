//! `wsp files watch`: the change feed, one line per change, across lost connections.
//!
//! When the stream breaks (the server restarted, the network dropped, the server shut down with
//! `service_unavailable`), the watcher says so on standard error and reconnects with
//! `Last-Event-ID` set to the last event it printed, so that no change is lost or printed twice;
//! it waits [`FIRST_RETRY`] before the first attempt and doubles the wait up to [`LAST_RETRY`].
//! A failure that a retry cannot mend (a refused key, a position the feed no longer keeps, a
//! host that could not be reached at all at the start) ends the command.

use std::time::Duration;

use wsp_client::{Client, Error, EventStream, FeedItem};
use wsp_types::ErrorCode;

use crate::failure::Failure;
use crate::out::{errln, outln};

/// The wait before the first reconnection attempt.
pub const FIRST_RETRY: Duration = Duration::from_millis(250);
/// The longest wait between attempts.
pub const LAST_RETRY: Duration = Duration::from_secs(5);

/// The waits between reconnection attempts: [`FIRST_RETRY`], doubled each time up to
/// [`LAST_RETRY`].
#[derive(Debug)]
struct Backoff(Duration);

impl Backoff {
    fn new() -> Self {
        Self(FIRST_RETRY)
    }

    /// The next wait.
    fn next_wait(&mut self) -> Duration {
        let wait = self.0;
        self.0 = (wait * 2).min(LAST_RETRY);
        wait
    }
}

/// Whether reconnecting may succeed after `e`: the host was unreachable or overloaded, not a
/// refusal of this request.
fn worth_retrying(e: &Error) -> bool {
    match e {
        Error::Transport(_) => true,
        Error::UnexpectedBody { status, .. } => *status >= 500,
        Error::Api(api) => api.status == 429 || api.status >= 500,
        Error::Certificate { .. } | Error::InvalidBaseUrl(_) | Error::InvalidArgument(_) => false,
        _ => false,
    }
}

/// Where a reconnection starts, in words.
fn resume_point(position: Option<u64>) -> String {
    match position {
        Some(n) => format!("after sequence {n}"),
        None => "at the live tail (no event had arrived to resume after, so changes made while \
                 disconnected are not shown; --since N resumes from a known position)"
            .into(),
    }
}

/// Prints the feed from `since` (default: the live tail) until a failure no retry can mend.
pub async fn follow(client: &Client, since: Option<u64>, json: bool) -> Result<(), Failure> {
    let mut position = since;
    // The first connection fails at once: a wrong URL or key is not worth retrying.
    let mut stream = client.events(position).await.map_err(Failure::remote)?;
    loop {
        // A closed standard output (`| head`) ends the watch quietly, as a filter's.
        let lost = print_until_lost(&mut stream, &mut position, json).await?;
        errln!(
            "change feed lost ({lost}); reconnecting {}",
            resume_point(position)
        );
        stream = reconnect(client, position).await?;
        errln!(
            "change feed reconnected; resuming {}",
            resume_point(position)
        );
    }
}

/// Prints events as they come; returns why printing stopped when reconnecting may help, and
/// fails when reconnecting cannot help (or standard output was closed).
async fn print_until_lost(
    stream: &mut EventStream,
    position: &mut Option<u64>,
    json: bool,
) -> Result<Failure, Failure> {
    loop {
        match stream.next().await {
            Some(Ok(FeedItem::Updated(e))) => {
                let line = if json {
                    crate::out::json_safe(serde_json::to_string(&e)?)
                } else {
                    format!(
                        "{}\t{}\tv{}",
                        e.sequence,
                        e.payload.path.as_str(),
                        e.payload.version
                    )
                };
                outln!("{line}")?;
                *position = Some(e.sequence.get());
            }
            Some(Ok(FeedItem::Error(mut api))) => {
                // An event arrives in a 200 stream: give it its code's own status.
                if let Some(code) = api.code() {
                    api.status = code.http_status();
                }
                let retry = api.code() == Some(ErrorCode::ServiceUnavailable);
                let failure = Failure::remote(Error::Api(api));
                return if retry { Ok(failure) } else { Err(failure) };
            }
            // A kind of item this build does not know: not a change to print.
            Some(Ok(_)) => {}
            Some(Err(e)) if worth_retrying(&e) => return Ok(Failure::remote(e)),
            Some(Err(e)) => return Err(Failure::remote(e)),
            None => {
                return Ok(crate::CliError("the host closed the stream".into()).into());
            }
        }
    }
}

/// Opens the feed again after `position`, waiting longer after each failed attempt.
async fn reconnect(client: &Client, position: Option<u64>) -> Result<EventStream, Failure> {
    let mut backoff = Backoff::new();
    let mut wait = backoff.next_wait();
    loop {
        tokio::time::sleep(wait).await;
        match client.events(position).await {
            Ok(stream) => return Ok(stream),
            Err(e) if worth_retrying(&e) => {
                wait = backoff.next_wait();
                errln!(
                    "reconnect failed ({}); retrying in {:.2} s",
                    Failure::remote(e),
                    wait.as_secs_f64()
                );
            }
            Err(e) => return Err(Failure::remote(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_its_bound() {
        let mut backoff = Backoff::new();
        let waits: Vec<u128> = (0..8).map(|_| backoff.next_wait().as_millis()).collect();
        assert_eq!(waits, [250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
    }
}
