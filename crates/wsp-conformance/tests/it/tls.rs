//! The suite against an `https://` host: the real `wsp-server` in process behind TLS, its
//! certificate signed by a CA made here. Given the CA (`--cacert`), the suite runs as over plain
//! HTTP (the run scenarios, which go through `wsp-client`, included); without it every scenario
//! is stopped by the refused certificate, and the report says so.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use wsp_client::CaCerts;
use wsp_conformance::{Config, Report, Verdict};
use wsp_server::{AppState, KeyAuthenticator, ServerConfig as HostConfig};
use wsp_store::MemoryStore;
use wsp_store::keys::MemoryKeyRegistry;
use wsp_testca::TestCa;

use crate::support;
use crate::support::ids;

/// TCP connections that completed a TLS handshake (those that did not are dropped).
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// Runs the suite against the host behind TLS, trusting its CA or only the system's.
async fn run(trust_the_ca: bool) -> Report {
    let ca = TestCa::new("wsp test CA");
    let listener = TlsListener {
        tcp: TcpListener::bind("127.0.0.1:0").await.unwrap(),
        acceptor: TlsAcceptor::from(ca.issue(&["127.0.0.1"]).server_config()),
    };
    let port = listener.tcp.local_addr().unwrap().port();
    let mut config = Config::new(format!("https://127.0.0.1:{port}"));
    let registry = Arc::new(MemoryKeyRegistry::default());
    support::add_keys(&registry, &mut config).await;
    let state = AppState::new(
        Arc::new(MemoryStore::new(support::limits())),
        Arc::new(KeyAuthenticator::new(registry)),
        HostConfig::default(),
    );
    let server = tokio::spawn(async move {
        axum::serve(listener, wsp_server::router(state))
            .await
            .unwrap()
    });
    config.request_timeout = Duration::from_secs(10);
    if trust_the_ca {
        config.ca_certs = CaCerts::from_pem(ca.pem().as_bytes()).unwrap();
    }
    let report = wsp_conformance::run(&config).await;
    server.abort();
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_https_host_signed_by_the_given_ca_passes() {
    let report = run(true).await;
    let summary = report.summary_text();
    assert_eq!(ids(&report, Verdict::Fail), BTreeSet::new(), "{summary}");
    let passed = ids(&report, Verdict::Pass);
    for id in ["WS-DISC-001", "WS-PUT-001", "WS-RUN-001", "WS-EVT-001"] {
        assert!(passed.contains(id), "{id} did not pass:\n{summary}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_ca_the_report_names_the_refused_certificate() {
    let report = run(false).await;
    assert_eq!(ids(&report, Verdict::Pass), BTreeSet::new());
    let summary = report.summary_text();
    assert!(
        summary.contains("invalid peer certificate: UnknownIssuer"),
        "{summary}"
    );
}
