//! The load of `cargo xtask bench soak`: hours of mixed traffic against one `wsp serve`, the
//! kinds of work a deployment sees side by side, each in its own closed loop.
//!
//! ```text
//! soak --target http://HOST:PORT --bearer KEY --seconds S
//!      [--connections N] [--subscribers N] [--runs N]
//! ```
//!
//! - `--connections` (16) keep-alive connections read `bench/get-1k.md` and write
//!   `bench/soak-<connection>-<i % 100>.md` (1 KiB, one request in five);
//! - `--subscribers` (8) change-feed subscribers each hold `GET /v1/host/workspace/events`
//!   open for 2 to 20 s, reading its events, then open a new one;
//! - `--runs` (2) loops each start a run, read a file through it and cancel it.
//!
//! Prints one JSON object at the end: `requests`, `errors`, `events` (change-feed bytes read,
//! in events), `streams` (subscriptions opened), `runs` (runs started and cancelled).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use wsp_bench::load::Options;

/// How long an answer may take before it counts as an error.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

const FILES: &str = "/v1/host/workspace/files/";

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    errors: AtomicU64,
    events: AtomicU64,
    streams: AtomicU64,
    runs: AtomicU64,
}

struct Soak {
    authority: String,
    bearer: String,
    end: Instant,
    counts: Counts,
}

#[tokio::main]
async fn main() {
    let (options, subscribers, runs) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let soak = Arc::new(Soak {
        authority: options.targets[0].clone(),
        bearer: options.bearer.clone().unwrap_or_default(),
        end: Instant::now() + options.duration,
        counts: Counts::default(),
    });
    let mut tasks = Vec::new();
    for c in 0..options.connections {
        tasks.push(tokio::spawn(reads_and_writes(soak.clone(), c)));
    }
    for s in 0..subscribers {
        tasks.push(tokio::spawn(subscriber(soak.clone(), s)));
    }
    for _ in 0..runs {
        tasks.push(tokio::spawn(run_loop(soak.clone())));
    }
    for task in tasks {
        if task.await.is_err() {
            soak.counts.errors.fetch_add(1, Relaxed);
        }
    }
    let c = &soak.counts;
    println!(
        "{{\"requests\":{},\"errors\":{},\"events\":{},\"streams\":{},\"runs\":{}}}",
        c.requests.load(Relaxed),
        c.errors.load(Relaxed),
        c.events.load(Relaxed),
        c.streams.load(Relaxed),
        c.runs.load(Relaxed),
    );
}

/// The options of `load` that apply (`--target`, `--bearer`, `--connections`, `--seconds`),
/// and the subscribers and run loops.
fn parse(args: impl Iterator<Item = String>) -> Result<(Options, usize, usize), String> {
    let (mut subscribers, mut runs, mut connections) = (8, 2, 16);
    let mut rest = Vec::new();
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let mut number = |slot: &mut usize| -> Result<(), String> {
            let v = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            *slot = v
                .parse()
                .map_err(|_| format!("{flag}: not a whole number: {v:?}"))?;
            Ok(())
        };
        match flag.as_str() {
            "--subscribers" => number(&mut subscribers)?,
            "--runs" => number(&mut runs)?,
            "--connections" => number(&mut connections)?,
            _ => rest.push(flag),
        }
    }
    rest.extend(["--get".into(), "/".into(), "--warmup".into(), "0".into()]);
    rest.extend(["--connections".into(), connections.max(1).to_string()]);
    let options = Options::parse(rest)?;
    if options.bearer.is_none() {
        return Err("give --bearer KEY".into());
    }
    Ok((options, subscribers, runs))
}

impl Soak {
    fn going(&self) -> bool {
        Instant::now() < self.end
    }

    fn request(&self, method: &str, path: &str, body: Option<Bytes>) -> Request<Full<Bytes>> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.authority.as_str())
            .header("authorization", self.bearer.as_str());
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        request
            .body(Full::new(body.unwrap_or_default()))
            .expect("a well-formed request")
    }

    /// Sends one request on `sender` and reads the answer: its status and body, or `None`
    /// (an error, counted) when it failed or took too long.
    async fn exchange(
        &self,
        sender: &mut SendRequest<Full<Bytes>>,
        request: Request<Full<Bytes>>,
    ) -> Option<(u16, Bytes)> {
        self.counts.requests.fetch_add(1, Relaxed);
        let answer = async {
            sender.ready().await.ok()?;
            let response = sender.send_request(request).await.ok()?;
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.ok()?.to_bytes();
            Some((status, body))
        };
        let answer = tokio::time::timeout(ANSWER_WITHIN, answer)
            .await
            .ok()
            .flatten();
        if !answer.as_ref().is_some_and(|(s, _)| (200..300).contains(s)) {
            self.counts.errors.fetch_add(1, Relaxed);
        }
        answer
    }

    /// A connection, or `None` (an error, counted, after a short pause).
    async fn connect(&self) -> Option<SendRequest<Full<Bytes>>> {
        let connected = async {
            let stream = TcpStream::connect(&self.authority).await.ok()?;
            let _ = stream.set_nodelay(true);
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .ok()?;
            tokio::spawn(conn);
            Some(sender)
        };
        let sender = connected.await;
        if sender.is_none() {
            self.counts.errors.fetch_add(1, Relaxed);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        sender
    }
}

/// Four reads of the shared file, then a write of one of the connection's 100 files.
async fn reads_and_writes(soak: Arc<Soak>, connection: usize) {
    let body = Bytes::from(format!("{{\"content\":\"{}\"}}", "x".repeat(1024)));
    let mut i = 0u64;
    while soak.going() {
        let Some(mut sender) = soak.connect().await else {
            continue;
        };
        while soak.going() {
            let request = if i % 5 == 4 {
                let path = format!("{FILES}bench/soak-{connection}-{}.md", i % 100);
                soak.request("PUT", &path, Some(body.clone()))
            } else {
                soak.request("GET", &format!("{FILES}bench/get-1k.md"), None)
            };
            i += 1;
            if soak.exchange(&mut sender, request).await.is_none() {
                break;
            }
        }
    }
}

/// Change-feed streams, each held 2 to 20 s (a different length each time), reading events.
async fn subscriber(soak: Arc<Soak>, which: usize) {
    let mut round = which as u64;
    while soak.going() {
        round += 1;
        let hold = Duration::from_secs(2 + (round * 7) % 19);
        let Some(mut sender) = soak.connect().await else {
            continue;
        };
        soak.counts.requests.fetch_add(1, Relaxed);
        soak.counts.streams.fetch_add(1, Relaxed);
        let request = soak.request("GET", "/v1/host/workspace/events", None);
        let response = tokio::time::timeout(ANSWER_WITHIN, async {
            sender.ready().await.ok()?;
            sender.send_request(request).await.ok()
        })
        .await
        .ok()
        .flatten();
        let Some(response) = response.filter(|r| r.status().is_success()) else {
            soak.counts.errors.fetch_add(1, Relaxed);
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let until = (Instant::now() + hold).min(soak.end);
        let mut body = response.into_body();
        while let Ok(Some(Ok(frame))) = tokio::time::timeout_at(until.into(), body.frame()).await {
            if let Some(data) = frame.data_ref() {
                let events = data.windows(2).filter(|w| w == b"\n\n").count() as u64;
                soak.counts.events.fetch_add(events, Relaxed);
            }
        }
        // Dropping the body and the connection ends the subscription.
    }
}

/// Start a run, read a file through it, cancel it; again.
async fn run_loop(soak: Arc<Soak>) {
    let create = Bytes::from_static(br#"{"workflowId":"soak"}"#);
    while soak.going() {
        let Some(mut sender) = soak.connect().await else {
            continue;
        };
        while soak.going() {
            let request = soak.request("POST", "/v1/runs", Some(create.clone()));
            let Some((201, body)) = soak.exchange(&mut sender, request).await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                break;
            };
            let Some(id) = run_id(&body) else {
                soak.counts.errors.fetch_add(1, Relaxed);
                break;
            };
            let read = soak.request(
                "GET",
                &format!("/v1/runs/{id}/workspace/files/bench/get-1k.md"),
                None,
            );
            if soak.exchange(&mut sender, read).await.is_none() {
                break;
            }
            let cancel = soak.request("POST", &format!("/v1/runs/{id}/cancel"), None);
            if soak.exchange(&mut sender, cancel).await.is_none() {
                break;
            }
            soak.counts.runs.fetch_add(1, Relaxed);
        }
    }
}

/// The `runId` of a `POST /v1/runs` answer, read without a JSON parser: the string after
/// `"runId":"`.
fn run_id(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let start = text.find("\"runId\":\"")? + "\"runId\":\"".len();
    let len = text[start..].find('"')?;
    let id = &text[start..start + len];
    id.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        .then(|| id.to_owned())
}
