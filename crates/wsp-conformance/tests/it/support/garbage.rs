//! TCP listeners that misbehave in one fixed way, and a port nobody listens on.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a listener answers every request.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Writes these bytes after the request head, then closes.
    Reply(Vec<u8>),
    /// Closes the connection as soon as the request head arrived.
    Close,
    /// Reads the request and never answers.
    Hang,
    /// Answers discovery (advertising the workspace) properly and everything else with `other`.
    DiscoveryThen(Box<Behaviour>),
}

/// A running listener; dropped, it stops accepting.
pub struct Listener {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A full HTTP/1.1 response with a body.
pub fn http(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

pub const DISCOVERY: &str = r#"{"protocolVersion":"1.0","supportedEnvelopes":[],"schemaVersions":{},"limits":{"clarificationRounds":1,"schemaRounds":1,"envelopesPerTurn":1},"workspace":{"supported":true,"versioned":true,"maxFileBytes":1024,"maxFiles":100,"maxVersions":3}}"#;

pub async fn start(behaviour: Behaviour) -> Listener {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(serve(stream, behaviour.clone()));
        }
    });
    Listener { url, task }
}

async fn serve(mut stream: TcpStream, behaviour: Behaviour) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let is_discovery = head.starts_with(b"GET /.well-known/openwop ");
    let behaviour = match behaviour {
        Behaviour::DiscoveryThen(_) if is_discovery => {
            Behaviour::Reply(http("200 OK", "application/json", DISCOVERY))
        }
        Behaviour::DiscoveryThen(other) => *other,
        b => b,
    };
    match behaviour {
        Behaviour::Reply(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Behaviour::Close => drop(stream),
        Behaviour::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(stream);
        }
        Behaviour::DiscoveryThen(_) => unreachable!("resolved above"),
    }
}

/// A loopback URL whose port had a listener a moment ago and has none now.
pub async fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}
