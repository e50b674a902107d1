//! TLS to PostgreSQL against real servers: a throwaway cluster with `ssl=on`, a certificate
//! for `localhost` signed by a CA made here, and a `pg_hba.conf` that refuses plain TCP (so a
//! store that connects at all connects over TLS, its listening connection included); and a
//! throwaway cluster without TLS.
//!
//! Both are clusters of this test process's own from `wsp-pgtest` (its shared cluster has no
//! TLS and no `pg_hba.conf` of its own, and `WSP_TEST_POSTGRES_URL` may name any server), made
//! from the machine's PostgreSQL programs and removed when this process ends. Without the
//! programs every test fails with one line saying so.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use wsp_pgtest::{Cluster, Setup};
use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore};
use wsp_store_postgres::{ConnectError, PgOptions, PgStore};
use wsp_testca::TestCa;
use wsp_types::{Owner, WorkspacePath};

/// The password of the role that logs in with SCRAM.
const SCRAM_PASSWORD: &str = "hunter2-scram";

fn own_cluster(name: &str, setup: &Setup) -> Cluster {
    wsp_pgtest::own_cluster(name, setup).unwrap_or_else(|e| panic!("{e}"))
}

/// The cluster with TLS only, shared by the tests of this process: `ssl=on` with a certificate
/// for `localhost` signed by a CA made here (in its data directory as `ca.pem`), no plain TCP,
/// no password but for the role `scram` (see [`create_scram_role`]), which logs in with SCRAM.
fn tls_cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let ca = TestCa::new("wsp test CA");
        // A certificate for the DNS name `localhost` only.
        let leaf = ca.issue(&["localhost"]);
        own_cluster(
            "tls",
            &Setup {
                conf: "ssl = on\nmax_connections = 60\npassword_encryption = 'scram-sha-256'\n"
                    .into(),
                hba: Some(
                    "local all all trust\n\
                     hostssl all scram 127.0.0.1/32 scram-sha-256\n\
                     hostssl all all 127.0.0.1/32 trust\n\
                     host all all 127.0.0.1/32 reject\n"
                        .into(),
                ),
                files: vec![
                    ("server.crt".into(), leaf.cert_pem.into()),
                    ("server.key".into(), leaf.key_pem.into()),
                    ("ca.pem".into(), ca.pem().into()),
                ],
            },
        )
    })
}

/// The CA that signed the TLS cluster's certificate, as a PEM file.
fn ca_file() -> PathBuf {
    tls_cluster().data_dir().join("ca.pem")
}

/// The cluster without TLS.
fn plain_cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| own_cluster("plain", &Setup::default()))
}

/// Creates the role `scram` on the TLS cluster, through its Unix socket (where no TLS is asked
/// for).
async fn create_scram_role() {
    let cluster = tls_cluster();
    let (admin, connection) = tokio_postgres::Config::new()
        .host_path(cluster.dir())
        .port(cluster.port())
        .user("postgres")
        .dbname("postgres")
        .connect(tokio_postgres::NoTls)
        .await
        .expect("the TLS cluster takes a connection on its socket");
    tokio::spawn(connection);
    admin
        .batch_execute(&format!(
            "CREATE ROLE scram LOGIN SUPERUSER PASSWORD '{SCRAM_PASSWORD}'"
        ))
        .await
        .expect("creating the SCRAM role");
}

/// A fresh schema name per store.
fn schema() -> String {
    format!("wsp_tls_{:016x}", wsp_store::new_life_id())
}

fn options() -> PgOptions {
    PgOptions::default()
        .with_max_connections(4)
        .with_connect_timeout(Duration::from_secs(10))
        .with_schema(schema())
}

async fn connect(url: &str) -> Result<PgStore, ConnectError> {
    PgStore::connect(url, Limits::default(), options()).await
}

/// A store that writes and reads a file back.
async fn works(store: &PgStore) {
    let owner = Owner::parse("acme", "main").unwrap();
    let path = WorkspacePath::parse("notes/tls.md").unwrap();
    let written = store
        .put(
            &owner,
            &path,
            FileWrite::markdown("over TLS"),
            Precondition::None,
        )
        .await
        .unwrap();
    assert_eq!(store.get(&owner, &path, None).await.unwrap(), written);
}

/// `postgres://postgres@{host}:{port}/postgres?hostaddr=127.0.0.1&{query}`: the TLS cluster,
/// reached at 127.0.0.1 whatever `host` the certificate is checked against.
fn tls_url(host: &str, query: &str) -> String {
    let port = tls_cluster().port();
    format!("postgres://postgres@{host}:{port}/postgres?hostaddr=127.0.0.1&{query}")
}

fn tls_error(result: Result<PgStore, ConnectError>) -> (&'static str, String) {
    match result {
        Err(ConnectError::Tls { mode, reason }) => (mode, reason),
        Err(other) => panic!("expected a TLS error, got {other:?}"),
        Ok(_) => panic!("expected a TLS error, but the store connected"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_encrypts_without_checking_the_certificate() {
    // The server refuses plain TCP: connecting at all means TLS.
    let store = connect(&tls_url("127.0.0.1", "sslmode=require"))
        .await
        .unwrap();
    works(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefer_is_the_default_and_takes_tls_when_offered() {
    let store = connect(&tls_url("127.0.0.1", "application_name=wsp-tls"))
        .await
        .unwrap();
    works(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_sends_no_tls_and_this_server_refuses_that() {
    let refused = connect(&tls_url("127.0.0.1", "sslmode=disable"))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ConnectError::Unreachable { .. }),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("no encryption"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_accepts_the_certificate_of_the_host_named() {
    let ca = ca_file();
    let url = tls_url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    );
    works(&connect(&url).await.unwrap()).await;
    // The same in the key=value form.
    let kv = format!(
        "host=localhost hostaddr=127.0.0.1 port={} user=postgres dbname=postgres \
         sslmode=verify-full sslrootcert='{}'",
        tls_cluster().port(),
        ca.display()
    );
    works(&connect(&kv).await.unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_refuses_a_certificate_for_another_name() {
    let ca = ca_file();
    for host in ["wrong.example", "127.0.0.1"] {
        let url = tls_url(
            host,
            &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
        );
        let (mode, reason) = tls_error(connect(&url).await);
        assert_eq!(mode, "verify-full");
        assert!(
            reason.contains(&format!("certificate not valid for name \"{host}\"")),
            "{host}: {reason}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_ca_checks_the_chain_but_not_the_name() {
    let ca = ca_file();
    let url = tls_url(
        "wrong.example",
        &format!("sslmode=verify-ca&sslrootcert={}", ca.display()),
    );
    works(&connect(&url).await.unwrap()).await;
    // Without the CA (the system's CAs never signed it) the chain fails.
    let (mode, reason) = tls_error(connect(&tls_url("localhost", "sslmode=verify-ca")).await);
    assert_eq!(mode, "verify-ca");
    assert!(reason.contains("UnknownIssuer"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_without_the_root_refuses_the_certificate() {
    let (mode, reason) = tls_error(connect(&tls_url("localhost", "sslmode=verify-full")).await);
    assert_eq!(mode, "verify-full");
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    assert!(reason.contains("system's CA certificates"), "{reason}");
    // Another CA's file is no better; nor is `require` once a root file is named (libpq's rule).
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other-ca.pem");
    std::fs::write(&other, TestCa::new("another CA").pem()).unwrap();
    for mode in ["verify-full", "require"] {
        let url = tls_url(
            "localhost",
            &format!("sslmode={mode}&sslrootcert={}", other.display()),
        );
        let (_, reason) = tls_error(connect(&url).await);
        assert!(reason.contains("UnknownIssuer"), "{mode}: {reason}");
        assert!(reason.contains("other-ca.pem"), "{mode}: {reason}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scram_login_binds_to_the_tls_session() {
    create_scram_role().await;
    let port = tls_cluster().port();
    // channel_binding=require: the login fails unless the client sends tls-server-end-point
    // data that the server agrees with.
    let url = format!(
        "postgres://scram:{SCRAM_PASSWORD}@127.0.0.1:{port}/postgres?sslmode=require&\
         channel_binding=require"
    );
    works(&connect(&url).await.unwrap()).await;
    let wrong = format!(
        "postgres://scram:not-{SCRAM_PASSWORD}@127.0.0.1:{port}/postgres?sslmode=require&\
         channel_binding=require"
    );
    let refused = connect(&wrong).await.unwrap_err().to_string();
    assert!(
        refused.contains("password authentication failed"),
        "{refused}"
    );
    assert!(!refused.contains(SCRAM_PASSWORD), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listening_connection_uses_tls_too() {
    let url = tls_url("127.0.0.1", "sslmode=require");
    let options = options();
    let listening = PgStore::connect(&url, Limits::default(), options.clone())
        .await
        .unwrap();
    let writing = PgStore::connect(&url, Limits::default(), options)
        .await
        .unwrap();
    let mut notices = listening.subscribe().expect("the store announces changes");
    let owner = Owner::parse("acme", "feed").unwrap();
    let path = WorkspacePath::parse("a.md").unwrap();
    // The listener connects in the background: write until a notice from the other replica
    // arrives (it can only come through the listener's TLS connection).
    let heard = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            writing
                .put(&owner, &path, FileWrite::markdown("x"), Precondition::None)
                .await
                .unwrap();
            if let Ok(Ok(notice)) =
                tokio::time::timeout(Duration::from_millis(500), notices.recv()).await
            {
                return notice;
            }
        }
    })
    .await
    .expect("a notice from the other replica arrives through the listener");
    assert_eq!(heard.owner, owner);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_against_a_server_without_tls_says_so() {
    let base = plain_cluster().url();
    let url = format!("{base}?sslmode=require");
    let (mode, reason) = tls_error(connect(&url).await);
    assert_eq!(mode, "require");
    assert_eq!(reason, "server does not support TLS");
    let text = connect(&url).await.unwrap_err().to_string();
    assert_eq!(
        text,
        "cannot connect to PostgreSQL over TLS (sslmode=require): server does not support TLS"
    );
    // prefer falls back to plain TCP there.
    let plain = format!("{base}?sslmode=prefer");
    works(&connect(&plain).await.unwrap()).await;
}
