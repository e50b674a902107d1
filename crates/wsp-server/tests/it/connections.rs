//! `wsp_server::serve_with` under hostile connections: raw TCP against the real router.
//!
//! Timeouts are short (hundreds of milliseconds); every wait for an outcome is long (5 s): a
//! test checks that something happens, never how fast.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use wsp_server::{AppState, ConnectionLimits, KeyAuthenticator, ServerConfig};
use wsp_store::MemoryStore;
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
use wsp_types::{Owner, Scopes};

const PATIENCE: Duration = Duration::from_secs(5);

/// Limits where nothing times out unless a test shortens it.
fn relaxed() -> ConnectionLimits {
    ConnectionLimits::default()
        .with_max_connections(1000)
        .with_header_timeout(Duration::from_secs(60))
        .with_idle_timeout(Duration::from_secs(60))
        .with_body_timeout(Duration::from_secs(60))
        .with_body_deadline(Duration::from_secs(60))
        .with_write_timeout(Duration::from_secs(60))
        .with_drain_timeout(Duration::from_secs(60))
}

struct Server {
    addr: SocketAddr,
    key: String,
    stop: Option<oneshot::Sender<()>>,
    served: JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start(limits: ConnectionLimits) -> Self {
        let registry = Arc::new(MemoryKeyRegistry::default());
        let key = ApiKey::generate();
        let owner = Owner::parse("tenant-a", "default").unwrap();
        registry
            .insert(KeyRecord::new(&key, owner, "alice".into(), Scopes::all()))
            .await
            .unwrap();
        let state = AppState::new(
            Arc::new(MemoryStore::default()),
            Arc::new(KeyAuthenticator::new(registry)),
            ServerConfig::default(),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(wsp_server::serve_with(
            listener,
            state,
            limits,
            async move {
                let _ = stopped.await;
            },
        ));
        Self {
            addr,
            key: key.expose(),
            stop: Some(stop),
            served,
        }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    /// The head of a `PUT` of `body_len` bytes to `notes/a.md`.
    fn put_head(&self, body_len: usize) -> String {
        format!(
            "PUT /v1/host/workspace/files/notes%2Fa.md HTTP/1.1\r\nHost: test\r\n\
             Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Content-Length: {body_len}\r\n\r\n",
            self.key
        )
    }
}

/// The status of the next response on `stream` (its head only; the rest is left unread).
async fn status(stream: &mut TcpStream) -> u16 {
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

/// Whether the server closes `stream` within [`PATIENCE`] (whatever it sends is dropped).
async fn closed(stream: &mut TcpStream) -> bool {
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

const DISCOVERY: &[u8] = b"GET /.well-known/openwop HTTP/1.1\r\nHost: test\r\n\r\n";

#[tokio::test]
async fn half_a_header_is_closed_after_the_header_timeout() {
    let server = Server::start(relaxed().with_header_timeout(Duration::from_millis(300))).await;
    let mut half = server.connect().await;
    half.write_all(b"GET /.well-known/openwop HTTP/1.1\r\nHo")
        .await
        .unwrap();
    assert!(closed(&mut half).await, "half a header stayed open");
}

#[tokio::test]
async fn idle_sockets_over_the_cap_do_not_lock_out_a_client() {
    let server = Server::start(relaxed().with_max_connections(50)).await;
    let mut idle = Vec::new();
    for i in 0..60 {
        let mut s = server.connect().await;
        if i % 2 == 1 {
            s.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        }
        idle.push(s);
    }
    let mut client = server.connect().await;
    client.write_all(DISCOVERY).await.unwrap();
    let answer = tokio::time::timeout(PATIENCE, status(&mut client)).await;
    assert_eq!(answer.expect("the client was locked out"), 200);
    assert!(closed(&mut idle[0]).await, "the oldest idle socket is open");
}

#[tokio::test]
async fn a_stalled_upload_is_refused_and_its_connection_closed() {
    let server = Server::start(relaxed().with_body_timeout(Duration::from_millis(300))).await;
    let mut stream = server.connect().await;
    let body = r#"{"content":"hello"}"#;
    stream
        .write_all(server.put_head(body.len()).as_bytes())
        .await
        .unwrap();
    stream.write_all(&body.as_bytes()[..5]).await.unwrap();
    let answer = tokio::time::timeout(PATIENCE, status(&mut stream)).await;
    // The listener answers a body it cut, whatever the handler made of the error.
    assert_eq!(answer.expect("the upload was waited for forever"), 408);
    assert!(closed(&mut stream).await, "the connection stayed open");
}

#[tokio::test]
async fn an_upload_in_progress_finishes_on_graceful_shutdown() {
    let mut server = Server::start(relaxed()).await;
    let mut stream = server.connect().await;
    let body = r#"{"content":"written during shutdown"}"#;
    stream
        .write_all(server.put_head(body.len()).as_bytes())
        .await
        .unwrap();
    stream.write_all(&body.as_bytes()[..10]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = server.stop.take().unwrap().send(());
    tokio::time::sleep(Duration::from_millis(300)).await;
    stream.write_all(&body.as_bytes()[10..]).await.unwrap();
    let answer = tokio::time::timeout(PATIENCE, status(&mut stream)).await;
    assert_eq!(answer.expect("the upload in progress was dropped"), 200);
    let served = tokio::time::timeout(PATIENCE, &mut server.served).await;
    served.expect("serve returned").unwrap().unwrap();
}
