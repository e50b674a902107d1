//! The load generator of `cargo xtask bench http`: closed-loop keep-alive HTTP/1.1 connections
//! (each sends its next request as soon as it has read the last answer), the same program for
//! every server measured, so that the servers are compared under the same client.
//!
//! ```text
//! load --target http://HOST:PORT [--target ...] --connections N --seconds S [--warmup S]
//!      [--bearer KEY] [--get PATH] [--put PREFIX --put-percent P --body BYTES [--json]]
//! ```
//!
//! Connections are spread over the targets in turn. A connection sends `GET PATH`, or with
//! `--put` a `PUT PREFIX<connection>-<i % 100>.md` of `BYTES` bytes (wrapped as
//! `{"content": ...}` with `--json`) for `P`% of its requests (every request when there is no
//! `--get`). Nothing is recorded during the warm-up. Prints one JSON object: `requests`,
//! `errors` (answers outside 2xx, and failed connections), `seconds`, `rps`, `p50_ms`,
//! `p99_ms`.

use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use wsp_bench::load::{Options, Plan, Tally};

/// How long an answer may take before it counts as an error.
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

#[tokio::main]
async fn main() {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let warm_up_end = Instant::now() + options.warmup;
    let end = warm_up_end + options.duration;
    let tasks: Vec<_> = (0..options.connections)
        .map(|c| {
            let plan = options.plan(c);
            tokio::spawn(connection(plan, warm_up_end, end))
        })
        .collect();
    let mut outcome = Tally::default();
    for task in tasks {
        match task.await {
            Ok(o) => outcome.merge(o),
            Err(_) => outcome.errors += 1,
        }
    }
    println!("{}", outcome.report(options.duration));
}

/// One connection's closed loop until `end`; latencies are recorded after `record_from`. A
/// connection the server closes (`Connection: close`, or its cap on requests per connection)
/// is opened again, as a browser or wrk would; a failed connect or a request lost in flight
/// counts as an error.
async fn connection(plan: Plan, record_from: Instant, end: Instant) -> Tally {
    let mut outcome = Tally::default();
    let mut i = 0u64;
    while Instant::now() < end {
        let Some(mut sender) = connect(&plan.authority).await else {
            outcome.errors += 1;
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        while Instant::now() < end {
            if sender.ready().await.is_err() {
                break;
            }
            let (method, path, body) = plan.request(i);
            i += 1;
            let mut request = Request::builder()
                .method(method)
                .uri(path)
                .header("host", plan.authority.as_str());
            if let Some(key) = &plan.bearer {
                request = request.header("authorization", key.as_str());
            }
            if body.is_some() {
                request = request.header("content-type", plan.content_type);
            }
            let request = request
                .body(Full::new(body.unwrap_or_else(Bytes::new)))
                .expect("a well-formed request");
            let started = Instant::now();
            let exchange = async {
                let response = sender.send_request(request).await.ok()?;
                let ok = response.status().is_success();
                let closing = response
                    .headers()
                    .get("connection")
                    .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
                let read = response.into_body().collect().await.is_ok();
                Some((read && ok, closing))
            };
            // No answer within the bound, or a broken one: an error, and a new connection.
            let (answered, closing) = tokio::time::timeout(ANSWER_WITHIN, exchange)
                .await
                .ok()
                .flatten()
                .unwrap_or((false, true));
            if started >= record_from {
                outcome.record(started.elapsed(), answered);
            }
            if closing {
                break;
            }
        }
    }
    outcome
}

/// A keep-alive HTTP/1.1 connection to `authority`, when it can be opened.
async fn connect(authority: &str) -> Option<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(authority).await.ok()?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(conn);
    Some(sender)
}
