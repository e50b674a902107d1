//! The baseline of `cargo xtask bench http`: a bare hyper 1.x HTTP/1.1 server that answers every
//! request with the same body, so that what it costs is the machine, the kernel, tokio and
//! hyper, with no application at all.
//!
//! Usage: `hello BYTES` (the body's size). Binds a free port of 127.0.0.1 and prints
//! `listening on ADDR`, then serves until killed, on tokio's multi-threaded runtime like
//! `wsp serve`.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let bytes: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| std::io::Error::other("usage: hello BYTES"))?;
    let body = Bytes::from(vec![b'x'; bytes]);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on {}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let body = body.clone();
        tokio::spawn(async move {
            let service = service_fn(move |_: Request<hyper::body::Incoming>| {
                let body = body.clone();
                async move { Ok::<_, Infallible>(Response::new(Full::new(body))) }
            });
            // A client that goes away ends its connection; nothing to report.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
