//! What the listener's tests share: the limits where nothing times out unless a test shortens
//! them, and the raw-socket reading of a response or of a close.
//!
//! Every timeout a test sets is short (hundreds of milliseconds) and every wait for an outcome
//! here is long ([`PATIENCE`]): a test checks that something happens, never how fast.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use wsp_listener::ConnectionLimits;

/// Long enough for anything that should happen to have happened, on a busy machine.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// Limits where nothing times out during a test unless the test shortens it.
pub fn relaxed() -> ConnectionLimits {
    ConnectionLimits::default()
        .with_max_connections(1000)
        .with_header_timeout(Duration::from_secs(60))
        .with_idle_timeout(Duration::from_secs(60))
        .with_body_timeout(Duration::from_secs(60))
        .with_body_deadline(Duration::from_secs(60))
        .with_body_rate_window(Duration::from_secs(60))
        .with_write_timeout(Duration::from_secs(60))
        .with_drain_timeout(Duration::from_secs(60))
}

/// One response read from `stream`: the status and the body (by `Content-Length`).
pub async fn read_response(stream: &mut (impl AsyncRead + Unpin)) -> (u16, String) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before a response: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed in a response body");
        body.extend_from_slice(&chunk[..n]);
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Whether the server closes `stream` (end of file or reset) within [`PATIENCE`]; whatever
/// it still sends is read and dropped.
pub async fn closed(stream: &mut (impl AsyncRead + Unpin)) -> bool {
    let until_closed = async {
        let mut sink = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(PATIENCE, until_closed).await.is_ok()
}
