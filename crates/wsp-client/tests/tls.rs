//! HTTPS against a real TLS peer on loopback: a test CA made here signs the certificate of a
//! tiny HTTPS host; the client reaches it when given the CA, and without it fails with an error
//! that says the certificate was refused.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use wsp_client::{CaCerts, Client, Error};
use wsp_testca::{Leaf, TestCa};

/// An HTTPS host on 127.0.0.1 that answers every request with an empty file list and reports
/// each request head it read. Returns its port.
async fn https_host(cert: Leaf) -> (u16, mpsc::UnboundedReceiver<String>) {
    let acceptor = TlsAcceptor::from(cert.server_config());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (heads, received) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            let heads = heads.clone();
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake: nothing to answer.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if tls.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let _ = heads.send(String::from_utf8_lossy(&head).into_owned());
                let body = br#"{"files":[]}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n",
                    body.len()
                );
                tls.write_all(answer.as_bytes()).await.unwrap();
                tls.write_all(body).await.unwrap();
                tls.shutdown().await.unwrap();
            });
        }
    });
    (port, received)
}

#[tokio::test]
async fn a_host_signed_by_a_given_ca_is_reached() {
    let ca = TestCa::new("wsp test CA");
    let (port, mut heads) = https_host(ca.issue(&["127.0.0.1"])).await;
    let client = Client::builder(&format!("https://127.0.0.1:{port}"))
        .key("wsp_test_key")
        .ca_certs(CaCerts::from_pem(ca.pem().as_bytes()).unwrap())
        .build()
        .unwrap();
    let list = client.list(Some("notes/")).await.unwrap();
    assert!(list.files.is_empty());
    let head = heads.recv().await.unwrap();
    assert!(
        head.starts_with("GET /v1/host/workspace/files?prefix=notes%2F HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.contains("authorization: Bearer wsp_test_key\r\n"),
        "{head}"
    );
}

#[tokio::test]
async fn one_pem_file_may_hold_several_cas() {
    let (other, ca) = (TestCa::new("another CA"), TestCa::new("wsp test CA"));
    let (port, _heads) = https_host(ca.issue(&["127.0.0.1"])).await;
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle.pem");
    std::fs::write(&bundle, format!("{}{}", other.pem(), ca.pem())).unwrap();
    let cas = CaCerts::from_pem_file(&bundle).unwrap();
    assert_eq!(cas.len(), 2);
    let client = Client::builder(&format!("https://127.0.0.1:{port}"))
        .ca_certs(cas)
        .build()
        .unwrap();
    client.list(None).await.unwrap();
}

#[tokio::test]
async fn without_the_ca_the_certificate_is_refused_and_the_error_says_so() {
    let ca = TestCa::new("wsp test CA");
    let (port, mut heads) = https_host(ca.issue(&["127.0.0.1"])).await;
    let url = format!("https://127.0.0.1:{port}");
    // Only the system's CAs, which never signed this certificate.
    let refused = Client::new(&url).unwrap().list(None).await.unwrap_err();
    let Error::Certificate { reason, .. } = &refused else {
        panic!("expected a certificate error, got {refused:?}");
    };
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    assert!(
        refused
            .to_string()
            .starts_with("the host's TLS certificate was refused: invalid peer certificate"),
        "{refused}"
    );
    // Another CA is no better.
    let other = CaCerts::from_pem(TestCa::new("another CA").pem().as_bytes()).unwrap();
    let client = Client::builder(&url).ca_certs(other).build().unwrap();
    let refused = client.list(None).await.unwrap_err();
    assert!(matches!(refused, Error::Certificate { .. }), "{refused:?}");
    // The host never saw a request.
    assert!(heads.try_recv().is_err());
}

#[tokio::test]
async fn a_certificate_for_another_name_is_refused() {
    let ca = TestCa::new("wsp test CA");
    let (port, _heads) = https_host(ca.issue(&["wsp.example"])).await;
    let client = Client::builder(&format!("https://127.0.0.1:{port}"))
        .ca_certs(CaCerts::from_pem(ca.pem().as_bytes()).unwrap())
        .build()
        .unwrap();
    let refused = client.list(None).await.unwrap_err();
    let Error::Certificate { reason, .. } = &refused else {
        panic!("expected a certificate error, got {refused:?}");
    };
    assert!(reason.contains("not valid for name"), "{reason}");
}

#[test]
fn ca_files_without_a_certificate_are_refused() {
    let e = CaCerts::from_pem(b"no certificate here\n").unwrap_err();
    assert!(e.to_string().contains("no PEM certificate"), "{e}");
    let key_only = TestCa::new("wsp test CA").leaf().key_pem;
    let e = CaCerts::from_pem(key_only.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("no PEM certificate"), "{e}");
    let broken = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    let e = CaCerts::from_pem(broken.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("unusable CA certificate"), "{e}");
    let e = CaCerts::from_pem_file("/nonexistent/ca.pem".as_ref()).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
}
