//! The listener as a hostile client meets it: raw TCP against an axum app.
//!
//! Every timeout here is short (hundreds of milliseconds) and every wait for an outcome is
//! long (seconds): a test checks that something happens, never how fast.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::StatusCode;
use axum::routing::{get, post};
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;
use wsp_listener::ConnectionLimits;

use crate::support::{PATIENCE, closed, read_response, relaxed};

/// The app: `/` answers at once, `/echo` reads its body (408 with the error when reading
/// fails), `/shrug` reads its body and answers 200 even when reading fails, `/wait` answers
/// when the test releases it, `/forever` never answers, `/stream` streams without end.
fn app(release: Arc<Notify>) -> Router {
    Router::new()
        .route("/", get(|| async { "hello" }))
        .route("/echo", post(echo))
        .route(
            "/shrug",
            post(|body: Body| async move {
                let (_, said) = echo(body).await;
                said
            }),
        )
        .route("/late", post(late_echo))
        .route(
            "/wait",
            get(move || {
                let release = release.clone();
                async move {
                    release.notified().await;
                    "done"
                }
            }),
        )
        .route("/forever", get(std::future::pending::<&'static str>))
        .route(
            "/stream",
            get(|| async {
                let chunk = bytes::Bytes::from(vec![b'x'; 64 * 1024]);
                let chunks = futures_util::stream::repeat_with(move || {
                    Ok::<_, std::io::Error>(chunk.clone())
                });
                Body::from_stream(chunks)
            }),
        )
}

async fn echo(mut body: Body) -> (StatusCode, String) {
    let mut n = 0;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => n += frame.data_ref().map_or(0, |d| d.len()),
            Err(e) => return (StatusCode::REQUEST_TIMEOUT, format!("{e}")),
        }
    }
    (StatusCode::OK, format!("{n} bytes"))
}

/// Reads one piece of the body, works for 1.5 s without reading, then reads the rest.
async fn late_echo(mut body: Body) -> (StatusCode, String) {
    let first = match body.frame().await {
        Some(Ok(frame)) => frame.data_ref().map_or(0, |d| d.len()),
        other => return (StatusCode::BAD_REQUEST, format!("{other:?}")),
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, rest) = echo(body).await;
    (status, format!("{first} then {rest}"))
}

struct Server {
    addr: SocketAddr,
    release: Arc<Notify>,
    stop: Option<oneshot::Sender<()>>,
    served: JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start(limits: ConnectionLimits) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let release = Arc::new(Notify::new());
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let served = tokio::spawn(wsp_listener::serve(
            listener,
            app(release.clone()),
            limits,
            shutdown,
        ));
        Self {
            addr,
            release,
            stop: Some(stop),
            served,
        }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    /// A connection from another loopback address, `127.0.0.2`.
    async fn connect_from_elsewhere(&self) -> TcpStream {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        socket.connect(self.addr).await.unwrap()
    }

    fn shut_down(&mut self) {
        let _ = self.stop.take().unwrap().send(());
    }
}

/// Sends `GET path` on `stream` and reads the answer.
async fn get_on(stream: &mut TcpStream, path: &str) -> (u16, String) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    read_response(stream).await
}

#[tokio::test]
async fn a_connection_without_a_whole_header_is_closed_after_the_header_timeout() {
    let server = Server::start(relaxed().with_header_timeout(Duration::from_millis(300))).await;
    let mut silent = server.connect().await;
    let mut half = server.connect().await;
    half.write_all(b"GET / HTTP/1.1\r\nHost: te").await.unwrap();
    let mut dribble = server.connect().await;
    let dribbler = tokio::spawn(async move {
        // One byte every 100 ms: each byte is progress, the header is never whole.
        for b in b"GET / HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if dribble.write_all(&[*b]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    });
    assert!(closed(&mut silent).await, "a silent connection stayed open");
    assert!(closed(&mut half).await, "half a header stayed open");
    let cut = tokio::time::timeout(PATIENCE, dribbler).await;
    assert!(matches!(cut, Ok(Ok(true))), "a dribbled header was not cut");
    // Meanwhile a prompt client is served.
    let mut prompt = server.connect().await;
    assert_eq!(get_on(&mut prompt, "/").await, (200, "hello".into()));
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let server = Server::start(relaxed().with_idle_timeout(Duration::from_millis(300))).await;
    let mut stream = server.connect().await;
    assert_eq!(get_on(&mut stream, "/").await, (200, "hello".into()));
    assert!(closed(&mut stream).await, "an idle connection stayed open");
}

#[tokio::test]
async fn between_requests_the_idle_timeout_applies_not_the_header_timeout() {
    let server = Server::start(relaxed().with_header_timeout(Duration::from_millis(300))).await;
    let mut stream = server.connect().await;
    assert_eq!(get_on(&mut stream, "/").await, (200, "hello".into()));
    // Three header timeouts of quiet: well inside the idle timeout.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(get_on(&mut stream, "/").await, (200, "hello".into()));
}

#[tokio::test]
async fn a_stalled_body_is_cut_after_the_body_timeout() {
    let server = Server::start(relaxed().with_body_timeout(Duration::from_millis(300))).await;
    let mut stream = server.connect().await;
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n0123456789")
        .await
        .unwrap();
    let answer = tokio::time::timeout(PATIENCE, read_response(&mut stream)).await;
    let (status, body) = answer.expect("the handler was left waiting for the body");
    assert_eq!(status, 408, "{body}");
    assert!(body.contains("request body"), "{body}");
    assert!(closed(&mut stream).await, "the connection stayed open");
}

#[tokio::test]
async fn a_pause_of_the_handler_is_not_blamed_on_the_client() {
    // Neither as a pause nor against the rate: 20 bytes over 2 s at 10 bytes per second, of
    // which the handler waits 0.5 s.
    let limits = relaxed()
        .with_body_timeout(Duration::from_secs(1))
        .with_min_body_rate(10)
        .with_body_rate_window(Duration::from_secs(1));
    let server = Server::start(limits).await;
    let mut stream = server.connect().await;
    stream
        .write_all(b"POST /late HTTP/1.1\r\nHost: test\r\nContent-Length: 20\r\n\r\n0123456789")
        .await
        .unwrap();
    // The rest comes 2 s after the first piece: half a second after the handler asks for it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    stream.write_all(b"0123456789").await.unwrap();
    let answer = tokio::time::timeout(PATIENCE, read_response(&mut stream)).await;
    assert_eq!(answer.expect("an answer"), (200, "10 then 10 bytes".into()));
}

#[tokio::test]
async fn a_trickling_body_is_cut_at_the_body_deadline() {
    let server = Server::start(relaxed().with_body_deadline(Duration::from_millis(500))).await;
    let stream = server.connect().await;
    let (mut reader, mut writer) = stream.into_split();
    writer
        .write_all(b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n")
        .await
        .unwrap();
    let trickle = tokio::spawn(async move {
        // Never a pause the body timeout would notice, never the whole body.
        for _ in 0..1000 {
            if writer.write_all(b"x").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let answer = tokio::time::timeout(PATIENCE, async {
        let mut head = vec![0u8; 12];
        reader.read_exact(&mut head).await.map(|_| head)
    })
    .await;
    let head = answer
        .expect("the handler was left reading a trickle")
        .unwrap();
    assert_eq!(&head[9..12], b"408", "{}", String::from_utf8_lossy(&head));
    trickle.abort();
}

#[tokio::test]
async fn idle_connections_over_the_cap_make_way_for_a_prompt_client() {
    let server = Server::start(relaxed().with_max_connections(50)).await;
    // 60 connections that never complete a request: 30 silent, 30 with half a header.
    let mut idle = Vec::new();
    for i in 0..60 {
        let mut s = server.connect().await;
        if i >= 30 {
            s.write_all(b"GET / HTTP/1.1\r\nHo").await.unwrap();
        }
        idle.push(s);
    }
    let mut client = server.connect().await;
    let answer = tokio::time::timeout(PATIENCE, get_on(&mut client, "/")).await;
    assert_eq!(
        answer.expect("a prompt client was locked out by idle sockets"),
        (200, "hello".into())
    );
    // Room was made by closing the oldest idle connections: 10 for the 60, one more for the
    // client.
    for (i, s) in idle.iter_mut().take(11).enumerate() {
        assert!(closed(s).await, "idle connection {i} is still open");
    }
}

#[tokio::test]
async fn busy_connections_are_never_shed_and_new_ones_wait_for_a_slot() {
    let server = Server::start(relaxed().with_max_connections(2)).await;
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut s = server.connect().await;
        s.write_all(b"GET /wait HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .unwrap();
        busy.push(s);
    }
    // Both requests have reached the handler before the third client arrives.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut third = server.connect().await;
    third
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let early = tokio::time::timeout(Duration::from_millis(300), read_response(&mut third)).await;
    assert!(early.is_err(), "a third connection was served over the cap");
    server.release.notify_waiters();
    for s in &mut busy {
        let answer = tokio::time::timeout(PATIENCE, read_response(s)).await;
        assert_eq!(answer.expect("a busy request"), (200, "done".into()));
    }
    let answer = tokio::time::timeout(PATIENCE, read_response(&mut third)).await;
    assert_eq!(answer.expect("the waiting client"), (200, "hello".into()));
}

#[tokio::test]
async fn a_response_the_client_does_not_read_is_cut_after_the_write_timeout() {
    let server = Server::start(relaxed().with_write_timeout(Duration::from_millis(300))).await;
    let mut stream = server.connect().await;
    stream
        .write_all(b"GET /stream HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    // Not reading: the server's writes stall once the socket buffers are full.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(closed(&mut stream).await, "an unread stream was kept open");
}

#[tokio::test]
async fn graceful_shutdown_lets_requests_in_progress_finish() {
    let mut server = Server::start(relaxed()).await;
    let mut idle = server.connect().await;
    assert_eq!(get_on(&mut idle, "/").await, (200, "hello".into()));
    let mut waiting = server.connect().await;
    waiting
        .write_all(b"GET /wait HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.shut_down();
    // The idle connection closes at once; nothing new is accepted.
    assert!(
        closed(&mut idle).await,
        "an idle connection outlived shutdown"
    );
    let refused = tokio::time::timeout(PATIENCE, async {
        while TcpStream::connect(server.addr).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(refused.is_ok(), "still accepting after shutdown");
    server.release.notify_waiters();
    let answer = tokio::time::timeout(PATIENCE, read_response(&mut waiting)).await;
    assert_eq!(
        answer.expect("the request in progress"),
        (200, "done".into())
    );
    let served = tokio::time::timeout(PATIENCE, &mut server.served).await;
    served.expect("serve returned").unwrap().unwrap();
}

#[tokio::test]
async fn the_drain_timeout_closes_requests_that_do_not_finish() {
    let mut server = Server::start(relaxed().with_drain_timeout(Duration::from_millis(300))).await;
    let mut stuck = server.connect().await;
    stuck
        .write_all(b"GET /forever HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.shut_down();
    let served = tokio::time::timeout(PATIENCE, &mut server.served).await;
    served
        .expect("serve waited for a request that never ends")
        .unwrap()
        .unwrap();
    assert!(closed(&mut stuck).await);
}

/// Starts a `POST path` of `length` bytes on `stream` and sends one byte of it every `every`
/// until the server answers or closes; returns what it read (empty when it was closed without
/// an answer).
fn trickle(stream: TcpStream, path: &str, length: usize, every: Duration) -> JoinHandle<String> {
    let head = format!("POST {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {length}\r\n\r\n");
    tokio::spawn(async move {
        let (mut reader, mut writer) = stream.into_split();
        writer.write_all(head.as_bytes()).await.unwrap();
        let writing = async move {
            for _ in 0..length {
                if writer.write_all(b"x").await.is_err() {
                    break;
                }
                tokio::time::sleep(every).await;
            }
            std::future::pending::<()>().await;
        };
        let reading = async {
            let mut answer = Vec::new();
            let _ = reader.read_to_end(&mut answer).await;
            String::from_utf8_lossy(&answer).into_owned()
        };
        tokio::select! {
            answer = reading => answer,
            () = writing => unreachable!(),
        }
    })
}

#[tokio::test]
async fn a_body_below_the_minimum_rate_is_cut_and_answered_408() {
    // 1,000 bytes per second over 500 ms windows; the client sends 10 a second.
    let limits = relaxed()
        .with_min_body_rate(1000)
        .with_body_rate_window(Duration::from_millis(500));
    let server = Server::start(limits).await;
    // The handler answers 200 whatever it reads: the listener's 408 stands instead.
    let slow = trickle(
        server.connect().await,
        "/shrug",
        1000,
        Duration::from_millis(100),
    );
    let answer = tokio::time::timeout(PATIENCE, slow).await;
    let answer = answer
        .expect("a body below the rate was waited for")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("slower than 1000 bytes per second"),
        "{answer}"
    );
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    // A body at the rate, sent at once, is read whole.
    let mut prompt = server.connect().await;
    prompt
        .write_all(b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 5000\r\n\r\n")
        .await
        .unwrap();
    prompt.write_all(&[b'y'; 5000]).await.unwrap();
    let answer = tokio::time::timeout(PATIENCE, read_response(&mut prompt)).await;
    assert_eq!(answer.expect("an answer"), (200, "5000 bytes".into()));
}

#[tokio::test]
async fn trickling_bodies_at_the_cap_make_way_for_a_prompt_client() {
    // 20 connections; a window so long that no body is cut for its rate during the test:
    // only shedding can let anyone in.
    let limits = relaxed()
        .with_max_connections(20)
        .with_min_body_rate(1000)
        .with_body_rate_window(Duration::from_secs(600));
    let server = Server::start(limits).await;
    let mut tricklers = Vec::new();
    for _ in 0..20 {
        let stream = server.connect().await;
        tricklers.push(trickle(
            stream,
            "/echo",
            100_000,
            Duration::from_millis(200),
        ));
    }
    // Every handler is reading its body when the 21st trickler and the client arrive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stream = server.connect().await;
    tricklers.push(trickle(
        stream,
        "/echo",
        100_000,
        Duration::from_millis(200),
    ));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut client = server.connect().await;
    let answer = tokio::time::timeout(PATIENCE, get_on(&mut client, "/")).await;
    assert_eq!(
        answer.expect("a prompt client was locked out by trickling bodies"),
        (200, "hello".into())
    );
    // Two tricklers made room (for the 21st and for the client); each was answered 408.
    let mut shed = 0;
    for trickler in &mut tricklers {
        if let Ok(answer) = tokio::time::timeout(Duration::from_millis(100), trickler).await {
            let answer = answer.unwrap();
            assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
            assert!(answer.contains("connection limit"), "{answer}");
            shed += 1;
        }
    }
    assert_eq!(shed, 2, "tricklers shed");
    for trickler in tricklers {
        trickler.abort();
    }
}

#[tokio::test]
async fn busy_connections_not_reading_a_body_are_not_shed_for_trickling_ones() {
    // At the cap, a handler that works (no body to wait for) is never a candidate.
    let limits = relaxed()
        .with_max_connections(2)
        .with_min_body_rate(1000)
        .with_body_rate_window(Duration::from_secs(600));
    let server = Server::start(limits).await;
    let mut working = server.connect().await;
    working
        .write_all(b"GET /wait HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let slow = trickle(
        server.connect().await,
        "/echo",
        100_000,
        Duration::from_millis(200),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut client = server.connect().await;
    let answer = tokio::time::timeout(PATIENCE, get_on(&mut client, "/")).await;
    assert_eq!(
        answer.expect("the client was locked out"),
        (200, "hello".into())
    );
    let cut = tokio::time::timeout(PATIENCE, slow).await;
    assert!(
        cut.expect("the trickler was kept")
            .unwrap()
            .starts_with("HTTP/1.1 408")
    );
    server.release.notify_waiters();
    let answer = tokio::time::timeout(PATIENCE, read_response(&mut working)).await;
    assert_eq!(answer.expect("the working request"), (200, "done".into()));
}

#[tokio::test]
async fn one_address_holds_at_most_its_limit_of_connections() {
    let server = Server::start(relaxed().with_max_connections_per_address(3)).await;
    // Three busy connections from 127.0.0.1.
    let mut busy = Vec::new();
    for _ in 0..3 {
        let mut s = server.connect().await;
        s.write_all(b"GET /wait HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .unwrap();
        busy.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A fourth from the same address is closed without an answer...
    let mut fourth = server.connect().await;
    let _ = fourth
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .await;
    let mut sink = Vec::new();
    let read = tokio::time::timeout(PATIENCE, fourth.read_to_end(&mut sink)).await;
    assert!(
        read.is_ok(),
        "a connection over the address's limit was kept"
    );
    assert!(sink.is_empty(), "{}", String::from_utf8_lossy(&sink));
    // ... while another address is served.
    let mut elsewhere = server.connect_from_elsewhere().await;
    let answer = tokio::time::timeout(PATIENCE, get_on(&mut elsewhere, "/")).await;
    assert_eq!(answer.expect("another address"), (200, "hello".into()));
    // Once they are idle, the address's own idle connection makes room for its next one.
    server.release.notify_waiters();
    for s in &mut busy {
        let answer = tokio::time::timeout(PATIENCE, read_response(s)).await;
        assert_eq!(answer.expect("a busy request"), (200, "done".into()));
    }
    let mut next = server.connect().await;
    let answer = tokio::time::timeout(PATIENCE, get_on(&mut next, "/")).await;
    assert_eq!(
        answer.expect("the address's next connection"),
        (200, "hello".into())
    );
    // One of the three (the one idle longest) was closed to make that room.
    let mut closed_now = 0;
    for s in &mut busy {
        let mut byte = [0u8; 1];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_secs(1), s.read(&mut byte)).await
        {
            closed_now += 1;
        }
    }
    assert_eq!(
        closed_now, 1,
        "idle connections of the address closed to make room"
    );
}
