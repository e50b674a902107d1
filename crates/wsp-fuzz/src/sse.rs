//! The `sse_chunks` target: `wsp-client`'s change-feed reader, fed the same byte stream cut
//! into network chunks in different ways.
//!
//! The reader is reached the way a program reaches it, through [`wsp_client::Client::events`]
//! against a small HTTP server on loopback that answers with the stream in chunked transfer
//! encoding, one HTTP chunk per intended cut (hyper never merges two HTTP chunks into one read
//! of the body). The connection is kept alive between streams.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The byte that marks a cut in the input; it is not part of the stream.
pub const SSE_CUT: u8 = 0xFF;

/// Streams longer than this are not also sent one byte per chunk.
const MAX_BYTEWISE: usize = 2048;

/// Items read from one stream at most (a stream of the fuzzer's size yields far fewer).
const MAX_ITEMS: usize = 10_000;

/// How long one stream may take to read; longer is a hang.
const STREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// The loopback host of this thread and a client of it.
struct Loopback {
    client: wsp_client::Client,
    /// The chunks of the next answer.
    plan: Arc<Mutex<Vec<Vec<u8>>>>,
}

async fn start() -> Loopback {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    let plan: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    tokio::spawn(accept(listener, plan.clone()));
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a plain HTTP client builds");
    let client = wsp_client::Client::with_http_client(&format!("http://{addr}"), http)
        .expect("a loopback base URL");
    Loopback { client, plan }
}

async fn accept(listener: TcpListener, plan: Arc<Mutex<Vec<Vec<u8>>>>) {
    while let Ok((conn, _)) = listener.accept().await {
        tokio::spawn(answer(conn, plan.clone()));
    }
}

/// Answers every request on `conn` with the planned chunks, until the client hangs up.
async fn answer(conn: TcpStream, plan: Arc<Mutex<Vec<Vec<u8>>>>) -> std::io::Result<()> {
    // Each chunk goes out at once (Nagle's algorithm would hold small writes back).
    conn.set_nodelay(true)?;
    let mut conn = BufReader::new(conn);
    loop {
        // The request head: lines up to a blank one (a GET has no body).
        let mut line = String::new();
        loop {
            line.clear();
            if conn.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
        }
        let chunks = std::mem::take(&mut *plan.lock().expect("the plan lock"));
        let out = conn.get_mut();
        out.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
              transfer-encoding: chunked\r\n\r\n",
        )
        .await?;
        for chunk in chunks.iter().filter(|c| !c.is_empty()) {
            let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
            frame.extend_from_slice(chunk);
            frame.extend_from_slice(b"\r\n");
            out.write_all(&frame).await?;
        }
        out.write_all(b"0\r\n\r\n").await?;
        out.flush().await?;
    }
}

/// What the reader made of one stream: every item (events and errors, in order), and the last
/// event id it remembers.
#[derive(Debug, PartialEq)]
struct Outcome {
    items: Vec<String>,
    last_event_id: Option<u64>,
}

async fn read(loopback: &Loopback, chunks: Vec<Vec<u8>>) -> Outcome {
    *loopback.plan.lock().expect("the plan lock") = chunks;
    let read = async {
        let mut stream = loopback
            .client
            .events(None)
            .await
            .expect("the loopback host answers");
        let mut items = Vec::new();
        while let Some(item) = stream.next().await {
            items.push(format!("{item:?}"));
            assert!(items.len() <= MAX_ITEMS, "the stream never ends");
        }
        Outcome {
            items,
            last_event_id: stream.last_event_id(),
        }
    };
    tokio::time::timeout(STREAM_TIMEOUT, read)
        .await
        .unwrap_or_else(|_| panic!("reading the stream took over {STREAM_TIMEOUT:?}"))
}

/// Reads the input as an event stream three ways: in one chunk, cut where the input has a
/// [`SSE_CUT`] byte (`0xFF`, which is removed), and one byte per chunk (streams up to 2 KiB). When
/// the stream is UTF-8, all three must give the same items and the same last event id: where
/// the network cuts a stream must not change what it means.
///
/// ```no_run
/// // Plain text seeds; libFuzzer inserts the cuts.
/// wsp_fuzz::sse_chunks(b"id: 1\nevent: workspace.updated\ndata: {}\n\n");
/// ```
pub fn sse_chunks(data: &[u8]) {
    thread_local! {
        static LOOPBACK: Arc<Loopback> = Arc::new(crate::block_on(start()));
    }
    let loopback = LOOPBACK.with(Arc::clone);
    let chunks: Vec<Vec<u8>> = data.split(|b| *b == SSE_CUT).map(<[u8]>::to_vec).collect();
    let stream: Vec<u8> = chunks.concat();
    crate::block_on(async {
        let whole = read(&loopback, vec![stream.clone()]).await;
        let cut = read(&loopback, chunks).await;
        let bytewise = if stream.len() <= MAX_BYTEWISE {
            Some(read(&loopback, stream.iter().map(|b| vec![*b]).collect()).await)
        } else {
            None
        };
        // A stream that is not UTF-8 is refused; where that shows depends on the cuts.
        if std::str::from_utf8(&stream).is_err() {
            return;
        }
        let shown = String::from_utf8_lossy(&stream);
        assert_eq!(
            cut,
            whole,
            "cut at the 0xFF bytes (shown as U+FFFD) of {:?}",
            String::from_utf8_lossy(data)
        );
        if let Some(bytewise) = bytewise {
            assert_eq!(bytewise, whole, "one byte per chunk, the stream {shown:?}");
        }
    });
}
