//! The listener over TLS as real clients meet it: a test CA made here signs the server's
//! certificate, a rustls client trusting that CA talks HTTP/1.1 through the handshake, and
//! hostile or confused clients (a stalled handshake, plain HTTP) are closed without harm.
//!
//! Every timeout here is short (hundreds of milliseconds) and every wait for an outcome is
//! long (seconds): a test checks that something happens, never how fast.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use wsp_listener::{ConnectionLimits, Listener, ServerTls, TlsFile, TlsProblem};
use wsp_testca::{Files, TestCa};

use crate::support::{PATIENCE, closed, read_response, relaxed};

/// A client that trusts `ca` only and offers HTTP/1.1.
fn client(ca: &TestCa) -> TlsConnector {
    TlsConnector::from(ca.client_config())
}

struct Server {
    addr: SocketAddr,
    tls: Arc<ServerTls>,
}

impl Server {
    async fn start(files: &Files, limits: ConnectionLimits) -> Self {
        let tls = Arc::new(ServerTls::load(files.cert(), files.key()).unwrap());
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let listener = Listener::new(tcp, Some(tls.clone()));
        assert_eq!(listener.scheme(), "https");
        let app = Router::new().route("/", get(|| async { "hello" }));
        tokio::spawn(wsp_listener::serve(
            listener,
            app,
            limits,
            std::future::pending(),
        ));
        Self { addr, tls }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    /// A TLS connection through `client`, handshake done.
    async fn tls(&self, client: &TlsConnector) -> std::io::Result<TlsStream<TcpStream>> {
        let name = ServerName::IpAddress("127.0.0.1".parse::<std::net::IpAddr>().unwrap().into());
        let tcp = self.connect().await;
        tokio::time::timeout(PATIENCE, client.connect(name, tcp))
            .await
            .expect("the handshake finished")
    }
}

/// The certificate the server presented on `stream`.
fn presented(stream: &TlsStream<TcpStream>) -> CertificateDer<'static> {
    stream.get_ref().1.peer_certificates().unwrap()[0].clone()
}

/// `GET /` on `stream`.
async fn hello(stream: &mut TlsStream<TcpStream>) -> (u16, String) {
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let answer = tokio::time::timeout(PATIENCE, read_response(stream)).await;
    answer.expect("an answer")
}

#[tokio::test]
async fn a_client_trusting_the_ca_is_served_over_tls_and_keeps_the_connection_alive() {
    let ca = TestCa::new("wsp test CA");
    let leaf = ca.leaf();
    let files = leaf.files();
    let server = Server::start(&files, relaxed()).await;
    let mut stream = server.tls(&client(&ca)).await.unwrap();
    assert_eq!(presented(&stream), leaf.der);
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(hello(&mut stream).await, (200, "hello".into()));
    assert_eq!(hello(&mut stream).await, (200, "hello".into()));
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_is_refused_and_the_server_goes_on() {
    let ca = TestCa::new("wsp test CA");
    let files = ca.leaf().files();
    let server = Server::start(&files, relaxed()).await;
    let stranger = TestCa::new("another CA");
    let refused = server.tls(&client(&stranger)).await;
    let e = refused.expect_err("a certificate of an unknown CA was accepted");
    assert!(e.to_string().contains("UnknownIssuer"), "{e}");
    let mut stream = server.tls(&client(&ca)).await.unwrap();
    assert_eq!(hello(&mut stream).await, (200, "hello".into()));
}

#[tokio::test]
async fn a_stalled_handshake_is_closed_at_the_header_timeout_and_blocks_nobody() {
    let ca = TestCa::new("wsp test CA");
    let files = ca.leaf().files();
    let server = Server::start(
        &files,
        relaxed().with_header_timeout(Duration::from_millis(500)),
    )
    .await;
    // One says nothing; one starts a TLS record and stops.
    let mut silent = server.connect().await;
    let mut started = server.connect().await;
    started.write_all(&[0x16, 0x03, 0x01, 0x02]).await.unwrap();
    // Meanwhile a prompt client is accepted and served at once.
    let mut prompt = server.tls(&client(&ca)).await.unwrap();
    assert_eq!(hello(&mut prompt).await, (200, "hello".into()));
    assert!(closed(&mut silent).await, "a silent connection stayed open");
    assert!(closed(&mut started).await, "a half handshake stayed open");
}

#[tokio::test]
async fn handshakes_count_against_the_cap_and_make_way_for_a_prompt_client() {
    let ca = TestCa::new("wsp test CA");
    let files = ca.leaf().files();
    let server = Server::start(&files, relaxed().with_max_connections(4)).await;
    let mut stalled = Vec::new();
    for _ in 0..6 {
        let mut s = server.connect().await;
        s.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
        stalled.push(s);
    }
    let mut prompt = server.tls(&client(&ca)).await.unwrap();
    assert_eq!(hello(&mut prompt).await, (200, "hello".into()));
    // Room was made by closing the oldest stalled handshakes.
    for (i, s) in stalled.iter_mut().take(3).enumerate() {
        assert!(closed(s).await, "stalled handshake {i} is still open");
    }
}

#[tokio::test]
async fn plain_http_to_the_tls_port_is_answered_400_and_harms_nothing() {
    let ca = TestCa::new("wsp test CA");
    let files = ca.leaf().files();
    let server = Server::start(&files, relaxed()).await;
    let mut kept = server.tls(&client(&ca)).await.unwrap();
    assert_eq!(hello(&mut kept).await, (200, "hello".into()));
    for _ in 0..3 {
        let mut plain = server.connect().await;
        plain
            .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let answer = tokio::time::timeout(PATIENCE, read_response(&mut plain)).await;
        let (status, body) = answer.expect("an answer to plain HTTP");
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("https://"), "{body}");
        assert!(closed(&mut plain).await, "the plain connection stayed open");
    }
    // Garbage that is neither TLS nor HTTP, then a handshake record holding no ClientHello.
    for junk in [&b"\x00\x01\x02\x03"[..], &b"\x16\x03\x01\x00\x05hello"[..]] {
        let mut s = server.connect().await;
        s.write_all(junk).await.unwrap();
        assert!(closed(&mut s).await, "{junk:?} kept its connection open");
    }
    // The connection opened before, and new ones, are served.
    assert_eq!(hello(&mut kept).await, (200, "hello".into()));
    let mut fresh = server.tls(&client(&ca)).await.unwrap();
    assert_eq!(hello(&mut fresh).await, (200, "hello".into()));
}

#[tokio::test]
async fn reload_serves_the_new_certificate_to_new_connections_and_keeps_old_ones() {
    let ca = TestCa::new("wsp test CA");
    let (first, second) = (ca.leaf(), ca.leaf());
    let files = first.files();
    let server = Server::start(&files, relaxed()).await;
    let client = client(&ca);
    let mut old = server.tls(&client).await.unwrap();
    assert_eq!(presented(&old), first.der);

    files.write(&second);
    server.tls.reload().unwrap();
    let mut new = server.tls(&client).await.unwrap();
    assert_eq!(presented(&new), second.der);
    assert_eq!(hello(&mut new).await, (200, "hello".into()));
    // The connection made before the reload goes on with its certificate.
    assert_eq!(hello(&mut old).await, (200, "hello".into()));

    // A bad key: the reload fails, naming the file, and the second certificate stays.
    std::fs::write(files.key(), "garbage\n").unwrap();
    let e = server.tls.reload().unwrap_err();
    assert_eq!(e.file(), TlsFile::PrivateKey);
    assert_eq!(e.path(), files.key());
    let mut after = server.tls(&client).await.unwrap();
    assert_eq!(presented(&after), second.der);
    assert_eq!(hello(&mut after).await, (200, "hello".into()));
}

/// The error of loading `cert` and `key`.
fn load_error(cert: &Path, key: &Path) -> wsp_listener::TlsError {
    ServerTls::load(cert, key).expect_err("bad files were loaded")
}

#[test]
fn bad_files_are_refused_naming_the_file_and_the_cause() {
    let ca = TestCa::new("wsp test CA");
    let leaf = ca.leaf();
    let files = leaf.files();
    let dir = files.dir();

    let missing = dir.join("missing.pem");
    let e = load_error(&missing, files.key());
    assert_eq!((e.file(), e.path()), (TlsFile::Certificate, &*missing));
    assert!(matches!(e.problem(), TlsProblem::Unreadable(_)), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "TLS certificate {}: cannot be read",
            missing.display()
        )),
        "{text}"
    );
    let e = load_error(files.cert(), &missing);
    assert_eq!((e.file(), e.path()), (TlsFile::PrivateKey, &*missing));

    let not_pem = files.add("not.pem", "just some text\n");
    let e = load_error(&not_pem, files.key());
    assert!(matches!(e.problem(), TlsProblem::NotPem(_)), "{e}");
    assert!(e.to_string().contains("not a PEM file"), "{e}");
    let e = load_error(files.cert(), &not_pem);
    assert!(matches!(e.problem(), TlsProblem::NotPem(_)), "{e}");
    assert_eq!(e.file(), TlsFile::PrivateKey);
    let broken = files.add(
        "broken.pem",
        "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
    );
    let e = load_error(&broken, files.key());
    assert!(matches!(e.problem(), TlsProblem::NotPem(_)), "{e}");

    // The two files swapped: a key where the certificate belongs, and the reverse.
    let e = load_error(files.key(), files.cert());
    assert!(matches!(e.problem(), TlsProblem::NoCertificate), "{e}");
    assert!(e.to_string().contains("no certificate"), "{e}");
    let e = load_error(files.cert(), files.cert());
    assert!(matches!(e.problem(), TlsProblem::NoPrivateKey), "{e}");
    assert!(e.to_string().contains("no private key"), "{e}");

    let encrypted = files.add(
        "encrypted.pem",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n",
    );
    let e = load_error(files.cert(), &encrypted);
    assert!(matches!(e.problem(), TlsProblem::EncryptedKey), "{e}");

    let other_key = files.add("other-key.pem", &ca.leaf().key_pem);
    let e = load_error(files.cert(), &other_key);
    assert!(matches!(e.problem(), TlsProblem::KeyMismatch), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "TLS private key {}: it does not match the certificate in {}",
            other_key.display(),
            files.cert().display()
        )
    );

    // A chain (the leaf, then the CA) with its key loads.
    let chain = files.add("chain.pem", &format!("{}{}", leaf.cert_pem, ca.pem()));
    ServerTls::load(&chain, files.key()).unwrap();
}

#[tokio::test]
async fn shutdown_closes_handshakes_in_progress_at_once() {
    let ca = TestCa::new("wsp test CA");
    let files = ca.leaf().files();
    let tls = Arc::new(ServerTls::load(files.cert(), files.key()).unwrap());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let app = Router::new().route("/", get(|| async { "hello" }));
    let served = tokio::spawn(wsp_listener::serve(
        Listener::new(tcp, Some(tls)),
        app,
        relaxed(),
        async move {
            let _ = stopped.await;
        },
    ));
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.send(()).unwrap();
    // Not after the drain timeout (a minute): a handshake is no request in progress.
    let served = tokio::time::timeout(PATIENCE, served).await;
    served.expect("serve returned").unwrap().unwrap();
    assert!(
        closed(&mut stalled).await,
        "a stalled handshake outlived shutdown"
    );
}
