//! TLS to PostgreSQL against real servers: a throwaway cluster with `ssl=on`, a certificate
//! for `localhost` signed by a CA made here, and a `pg_hba.conf` that refuses plain TCP (so a
//! store that connects at all connects over TLS, its listening connection included); and a
//! throwaway cluster without TLS.
//!
//! The clusters are made from the machine's PostgreSQL programs, found as `wsp-pgtest` finds
//! them (`PATH`, else the newest `/usr/lib/postgresql/<version>/bin`); as root they run as the
//! `postgres` system user, since PostgreSQL refuses to run as root. Each is stopped and removed
//! when this test process ends (a shell waits for its standard input, held by this process, to
//! close). Without the programs every test fails with one line saying so. (`wsp-pgtest`'s shared
//! cluster has no TLS and no `pg_hba.conf` of its own, hence these.)

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use wsp_store::{FileWrite, Limits, Precondition, WorkspaceStore};
use wsp_store_postgres::{ConnectError, PgOptions, PgStore};
use wsp_types::{Owner, WorkspacePath};

/// The password of the role that logs in with SCRAM.
const SCRAM_PASSWORD: &str = "hunter2-scram";

/// A CA made for this test process.
struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl TestCa {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Self {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A certificate for the DNS name `localhost` only (PEM) and its key (PEM).
    fn localhost(&self) -> (String, String) {
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.subject_alt_names = vec![SanType::DnsName("localhost".try_into().unwrap())];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// A running throwaway cluster.
struct Cluster {
    port: u16,
    /// Its directory (the CA files of a TLS cluster are in it too).
    dir: PathBuf,
    /// The shell that stops and removes the cluster once its standard input (held open
    /// here) closes, at the exit of this process.
    _keeper: Mutex<Child>,
}

/// The directory of the PostgreSQL programs, found as for the other PostgreSQL tests; where
/// `initdb` is a link (into `/usr/lib/postgresql/<version>/bin`), the directory it points into,
/// which has `psql` and `pg_isready` too.
fn binaries() -> PathBuf {
    let path = std::env::var_os("PATH");
    let found = wsp_pgtest::find_binaries(path.as_deref(), Path::new(wsp_pgtest::LIB_ROOT))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::canonicalize(found.initdb())
        .ok()
        .and_then(|initdb| initdb.parent().map(Path::to_owned))
        .unwrap_or_else(|| found.dir().to_owned())
}

fn as_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("id -u runs");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// `program` of the PostgreSQL programs (from `PATH` when `bin` lacks it), run as the
/// `postgres` user when this process is root.
fn pg_command(bin: &Path, program: &str) -> Command {
    let program = match bin.join(program) {
        path if path.is_file() => path,
        _ => PathBuf::from(program),
    };
    if as_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn run(mut command: Command, what: &str) {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Cluster {
    /// Makes and starts a cluster on a free port of 127.0.0.1: with `tls`, `ssl=on` with a
    /// certificate for `localhost` signed by `tls`'s CA and no plain TCP allowed.
    fn start(tls: Option<&TestCa>) -> Self {
        let bin = binaries();
        let dir = tempfile::Builder::new()
            .prefix("wsp-pg-tls-")
            .tempdir()
            .unwrap()
            .keep();
        let chown = |path: &Path| {
            if as_root() {
                let mut chown = Command::new("chown");
                chown.args(["-R", "postgres:"]).arg(path);
                run(chown, "chown of the cluster directory");
            }
        };
        chown(&dir);
        let data = dir.join("data");
        // From here on a shell owns the directory: it waits for a line on its standard input,
        // starts the server on `start`, then waits for its standard input to close (this
        // process ending, however it ends), stops the server and removes the directory. A
        // signal to the shell (its process group ending) does the same.
        let script = format!(
            "stop() {{ [ -n \"$pid\" ] && kill -INT $pid && wait $pid; rm -rf '{dir}'; exit; }}; \
             trap stop HUP INT TERM; read go; [ \"$go\" = start ] || stop; \
             '{postgres}' -D '{data}' > '{dir}/log' 2>&1 & pid=$!; read line; stop",
            postgres = bin.join("postgres").display(),
            data = data.display(),
            dir = dir.display(),
        );
        let mut keeper = if as_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--", "sh", "-c", &script]);
            command
        } else {
            let mut command = Command::new("sh");
            command.args(["-c", &script]);
            command
        };
        let mut keeper = keeper
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the cluster's shell starts");
        let port = free_port();
        let mut conf = format!(
            "listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\n\
             fsync = off\nmax_connections = 60\npassword_encryption = 'scram-sha-256'\n",
            dir.display()
        );
        let mut hba = String::from("local all all trust\n");
        if let Some(ca) = tls {
            let (cert, key) = ca.localhost();
            std::fs::write(dir.join("server.crt"), cert).unwrap();
            std::fs::write(dir.join("server.key"), key).unwrap();
            std::fs::write(dir.join("ca.pem"), &ca.pem).unwrap();
            let mut chmod = Command::new("chmod");
            chmod.arg("600").arg(dir.join("server.key"));
            run(chmod, "chmod of the server key");
            chown(&dir);
            conf.push_str(&format!(
                "ssl = on\nssl_cert_file = '{0}/server.crt'\nssl_key_file = '{0}/server.key'\n",
                dir.display()
            ));
            hba.push_str(
                "hostssl all scram 127.0.0.1/32 scram-sha-256\n\
                 hostssl all all 127.0.0.1/32 trust\n\
                 host all all 127.0.0.1/32 reject\n",
            );
        } else {
            hba.push_str("host all all 127.0.0.1/32 trust\n");
        }
        let mut initdb = pg_command(&bin, "initdb");
        initdb
            .args(["-U", "postgres", "-A", "trust", "--no-sync", "-D"])
            .arg(&data);
        run(initdb, "initdb");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .unwrap();
        file.write_all(conf.as_bytes()).unwrap();
        std::fs::write(data.join("pg_hba.conf"), hba).unwrap();
        keeper
            .stdin
            .as_mut()
            .unwrap()
            .write_all(b"start\n")
            .expect("the cluster's shell listens");
        let cluster = Self {
            port,
            dir,
            _keeper: Mutex::new(keeper),
        };
        cluster.wait_until_ready(&bin);
        if tls.is_some() {
            let mut psql = pg_command(&bin, "psql");
            psql.arg("-h")
                .arg(&cluster.dir)
                .args(["-p", &port.to_string(), "-U", "postgres", "-d", "postgres"])
                .args([
                    "-c",
                    &format!("CREATE ROLE scram LOGIN SUPERUSER PASSWORD '{SCRAM_PASSWORD}'"),
                ]);
            run(psql, "creating the SCRAM role");
        }
        cluster
    }

    /// Waits (at most a minute, in steps) until the server accepts connections.
    fn wait_until_ready(&self, bin: &Path) {
        for _ in 0..600 {
            let mut ready = pg_command(bin, "pg_isready");
            ready
                .arg("-h")
                .arg(&self.dir)
                .args(["-p", &self.port.to_string(), "-q"]);
            if ready.status().is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        panic!("the throwaway PostgreSQL did not start:\n{log}");
    }

    /// The CA that signed the server's certificate, as a PEM file.
    fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
}

/// The cluster with TLS only, shared by the tests of this process.
fn tls_cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| Cluster::start(Some(&TestCa::new("wsp test CA"))))
}

/// The cluster without TLS.
fn plain_cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| Cluster::start(None))
}

/// A fresh schema name per store.
fn schema() -> String {
    format!("wsp_tls_{:016x}", wsp_store::new_life_id())
}

fn options() -> PgOptions {
    PgOptions {
        max_connections: 4,
        connect_timeout: Duration::from_secs(10),
        schema: schema(),
        ..PgOptions::default()
    }
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
    let port = tls_cluster().port;
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
    let ca = tls_cluster().ca_file();
    let url = tls_url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    );
    works(&connect(&url).await.unwrap()).await;
    // The same in the key=value form.
    let kv = format!(
        "host=localhost hostaddr=127.0.0.1 port={} user=postgres dbname=postgres \
         sslmode=verify-full sslrootcert='{}'",
        tls_cluster().port,
        ca.display()
    );
    works(&connect(&kv).await.unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_refuses_a_certificate_for_another_name() {
    let ca = tls_cluster().ca_file();
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
    let ca = tls_cluster().ca_file();
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
    std::fs::write(&other, TestCa::new("another CA").pem).unwrap();
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
    let port = tls_cluster().port;
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
    let port = plain_cluster().port;
    let url = format!("postgres://postgres:hunter2@127.0.0.1:{port}/postgres?sslmode=require");
    let (mode, reason) = tls_error(connect(&url).await);
    assert_eq!(mode, "require");
    assert_eq!(reason, "server does not support TLS");
    let text = connect(&url).await.unwrap_err().to_string();
    assert_eq!(
        text,
        "cannot connect to PostgreSQL over TLS (sslmode=require): server does not support TLS"
    );
    // prefer falls back to plain TCP there.
    let plain = format!("postgres://postgres@127.0.0.1:{port}/postgres?sslmode=prefer");
    works(&connect(&plain).await.unwrap()).await;
}
