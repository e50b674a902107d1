//! The suite against an `https://` host: the real `wsp-server` in process behind TLS, its
//! certificate signed by a CA made here. Given the CA (`--cacert`), the suite runs as over plain
//! HTTP (the run scenarios, which go through `wsp-client`, included); without it every scenario
//! is stopped by the refused certificate, and the report says so.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use wsp_client::CaCerts;
use wsp_conformance::{Config, Report, Verdict};
use wsp_server::{AppState, KeyAuthenticator, ServerConfig as HostConfig};
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry, MemoryKeyRegistry};
use wsp_store::{Limits, MemoryStore};
use wsp_types::{Owner, Scope, Scopes};

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

/// A CA, and the certificate it signed for 127.0.0.1 with its key.
fn ca_and_certificate() -> (String, ServerConfig) {
    let mut params = CertificateParams::new(Vec::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "wsp test CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_pem = params.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(params, ca_key);
    let mut leaf = CertificateParams::new(Vec::new()).unwrap();
    leaf.subject_alt_names = vec![SanType::IpAddress("127.0.0.1".parse().unwrap())];
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    let key: PrivateKeyDer<'static> = PrivatePkcs8KeyDer::from(key.serialize_der()).into();
    let config = ServerConfig::builder_with_provider(Arc::new(
        tokio_rustls::rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.der().clone()], key)
    .unwrap();
    (ca_pem, config)
}

async fn key(registry: &MemoryKeyRegistry, tenant: &str, scopes: Scopes) -> String {
    let k = ApiKey::generate();
    let owner = Owner::parse(tenant, "default").unwrap();
    registry
        .insert(KeyRecord::new(&k, owner, "conformance".into(), scopes))
        .await
        .unwrap();
    k.expose()
}

/// Runs the suite against the host behind TLS, trusting its CA or only the system's.
async fn run(trust_the_ca: bool) -> Report {
    let (ca_pem, tls) = ca_and_certificate();
    let registry = Arc::new(MemoryKeyRegistry::default());
    let key_a = key(&registry, "tenant-a", Scopes::all()).await;
    let key_b = key(&registry, "tenant-b", Scopes::all()).await;
    let read: Scopes = [Scope::WorkspaceRead].into_iter().collect();
    let key_ro = key(&registry, "tenant-a", read).await;
    let store = Arc::new(MemoryStore::new(Limits {
        max_file_bytes: 64 * 1024,
        max_files: 64,
        max_versions: 8,
    }));
    let state = AppState::new(
        store,
        Arc::new(KeyAuthenticator::new(registry)),
        HostConfig::default(),
    );
    let listener = TlsListener {
        tcp: TcpListener::bind("127.0.0.1:0").await.unwrap(),
        acceptor: TlsAcceptor::from(Arc::new(tls)),
    };
    let port = listener.tcp.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        axum::serve(listener, wsp_server::router(state))
            .await
            .unwrap()
    });
    let mut config = Config::new(format!("https://127.0.0.1:{port}"));
    config.key_a = Some(key_a);
    config.key_b = Some(key_b);
    config.key_readonly = Some(key_ro);
    config.request_timeout = Duration::from_secs(10);
    if trust_the_ca {
        config.ca_certs = CaCerts::from_pem(ca_pem.as_bytes()).unwrap();
    }
    let report = wsp_conformance::run(&config).await;
    server.abort();
    report
}

fn ids(report: &Report, verdict: Verdict) -> BTreeSet<&str> {
    report
        .scenarios
        .iter()
        .filter(|s| s.verdict == verdict)
        .map(|s| s.id.as_str())
        .collect()
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
