//! The PostgreSQL server that wsp's PostgreSQL tests run against (a development crate, never
//! published).
//!
//! **Invariant:** a test that needs PostgreSQL runs against a real server or fails with one
//! line that says what to do; it is never skipped, so it never counts as passed without running.
//!
//! The server is [`URL_VAR`] when it is set. Otherwise it is a throwaway cluster made from the
//! machine's PostgreSQL programs ([`find_binaries`]: `PATH`, else the newest
//! `/usr/lib/postgresql/<version>/bin`): a temporary directory, a free port on 127.0.0.1, the
//! socket inside that directory, no fsync, a random password (so that no other local user can
//! use it while it runs). The test binaries of one `cargo test` share one cluster (they have the
//! same parent, the `cargo` process, whose pid names the cluster; a file lock makes binaries
//! that race to start it agree), and a watchdog stops and removes it when that `cargo` exits,
//! since libtest has no teardown of its own. A test binary run without `cargo` gets a cluster
//! for as long as it runs. As root, the server runs as the `postgres` system user (PostgreSQL
//! refuses to run as root).
//!
//! ```no_run
//! // In a test: the URL, after one stderr line naming the server (without its password).
//! let url: &str = wsp_pgtest::database_url();
//! ```
//!
//! A test that needs a server unlike the shared one (TLS, a `pg_hba.conf` of its own) gets a
//! throwaway cluster of its process's own from [`own_cluster`], set up as its [`Setup`] says.
//!
//! The `wsp-pgtest` binary prints the URL of a cluster that lives as long as the program that
//! runs it (`cargo xtask conformance` uses it, since xtask links no wsp crate).

#![cfg(unix)]

mod cluster;
mod discover;

use std::ffi::OsString;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use cluster::{Cluster, Setup};
pub use discover::{Binaries, LIB_ROOT, NoBinaries, find_binaries};

/// The variable naming a PostgreSQL server for the tests (`postgres://user:password@host:port/db`,
/// a role that may create schemas); when set, no cluster is started.
pub const URL_VAR: &str = "WSP_TEST_POSTGRES_URL";

/// How long a throwaway cluster lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// As long as the `cargo` process (`cargo test`, `cargo nextest`) that started this process,
    /// shared by everything that cargo runs; when cargo did not start this process, as long as
    /// this process.
    Run,
    /// As long as this process's parent, shared by everything that parent runs.
    Parent,
}

/// Why no server is available, in one line that says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterError {
    message: String,
}

impl ClusterError {
    pub(crate) fn new(message: String) -> Self {
        Self { message }
    }

    pub(crate) fn io(context: String, e: std::io::Error) -> Self {
        Self::new(format!("{context}: {e}"))
    }
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ClusterError {}

impl From<NoBinaries> for ClusterError {
    fn from(e: NoBinaries) -> Self {
        Self::new(e.to_string())
    }
}

/// The server the tests use.
#[derive(Debug, Clone)]
pub struct Server {
    url: String,
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    Variable,
    Cluster { dir: PathBuf, kept_by: String },
}

impl Server {
    /// Its URL, password included: pass it to the code under test, never print it.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Which server, without its password: `postgres://postgres@127.0.0.1:5432/test (from ...)`.
impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", without_password(&self.url))?;
        match &self.source {
            Source::Variable => write!(f, " (from {URL_VAR})"),
            Source::Cluster { dir, kept_by } => write!(
                f,
                " (a throwaway cluster in {}, removed when {kept_by} ends)",
                dir.display()
            ),
        }
    }
}

/// The server for tests: [`URL_VAR`] when set, else a throwaway cluster that lives `lifetime`.
pub fn server(lifetime: Lifetime) -> Result<Server, ClusterError> {
    server_from(
        std::env::var(URL_VAR).ok(),
        lifetime,
        std::env::var_os("PATH"),
        Path::new(LIB_ROOT),
    )
}

fn server_from(
    variable: Option<String>,
    lifetime: Lifetime,
    path: Option<OsString>,
    lib_root: &Path,
) -> Result<Server, ClusterError> {
    if let Some(url) = variable.filter(|url| !url.trim().is_empty()) {
        return Ok(Server {
            url,
            source: Source::Variable,
        });
    }
    let binaries = find_binaries(path.as_deref(), lib_root)?;
    let (keeper, kept_by) = keeper(lifetime);
    let cluster = cluster::for_keeper(keeper, &keeper.to_string(), &binaries, &Setup::default())?;
    Ok(Server {
        url: cluster.url,
        source: Source::Cluster {
            dir: cluster.dir,
            kept_by,
        },
    })
}

/// A throwaway cluster of this process's own, set up as `setup` says, for tests that need a
/// server unlike the shared one (TLS, a `pg_hba.conf` of their own); stopped and removed when
/// this process ends. `name` (a short word) tells this process's clusters apart. [`URL_VAR`]
/// plays no part: the cluster is made from the machine's PostgreSQL programs.
pub fn own_cluster(name: &str, setup: &Setup) -> Result<Cluster, ClusterError> {
    let binaries = find_binaries(std::env::var_os("PATH").as_deref(), Path::new(LIB_ROOT))?;
    let me = std::process::id();
    cluster::for_keeper(me, &format!("{me}-{name}"), &binaries, setup)
}

/// The process whose exit ends the cluster, and how to name it.
fn keeper(lifetime: Lifetime) -> (u32, String) {
    let parent = std::os::unix::process::parent_id();
    match lifetime {
        Lifetime::Parent => (parent, format!("process {parent}")),
        Lifetime::Run => {
            let comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
            if comm.starts_with("cargo") {
                (parent, format!("this cargo run (pid {parent})"))
            } else {
                let me = std::process::id();
                (me, format!("this process (pid {me})"))
            }
        }
    }
}

/// The URL of the server this test process uses ([`server`] with [`Lifetime::Run`], found
/// once), after writing once to stderr which server it is (without its password, past the
/// test harness's output capture). Panics with the one-line [`ClusterError`] when there is none.
pub fn database_url() -> &'static str {
    static SERVER: OnceLock<Result<Server, ClusterError>> = OnceLock::new();
    let found = SERVER.get_or_init(|| {
        let found = server(Lifetime::Run);
        if let Ok(server) = &found {
            let line = format!("PostgreSQL tests run against {server}\n");
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        found
    });
    match found {
        Ok(server) => server.url(),
        Err(e) => panic!("{e}"),
    }
}

/// `url` without its password, for printing: `postgres://user:secret@host/db` becomes
/// `postgres://user@host/db`; a `password=` setting (in the query or a `key=value` connection
/// string) becomes `password=***`.
pub fn without_password(url: &str) -> String {
    let hide = |settings: &str, separator: char| {
        settings
            .split(separator)
            .map(|kv| {
                if kv.starts_with("password=") {
                    "password=***"
                } else {
                    kv
                }
            })
            .collect::<Vec<_>>()
            .join(&separator.to_string())
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return hide(url, ' ');
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            format!("{user}@{host}")
        }
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => format!("{path}?{}", hide(query, '&')),
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_the_printed_url() {
        for (url, shown) in [
            (
                "postgres://postgres:s3cret@127.0.0.1:5432/test",
                "postgres://postgres@127.0.0.1:5432/test",
            ),
            (
                "postgres://postgres@127.0.0.1:5432/test",
                "postgres://postgres@127.0.0.1:5432/test",
            ),
            (
                "postgresql://u:p@a@db.internal/wsp?sslmode=disable&password=x",
                "postgresql://u@db.internal/wsp?sslmode=disable&password=***",
            ),
            ("postgres://db.internal", "postgres://db.internal"),
            (
                "host=127.0.0.1 user=u password=x dbname=d",
                "host=127.0.0.1 user=u password=*** dbname=d",
            ),
        ] {
            assert_eq!(without_password(url), shown, "{url}");
        }
    }

    #[test]
    fn the_variable_wins_and_an_empty_one_counts_as_unset() {
        let none = tempfile::tempdir().unwrap();
        let server = server_from(
            Some("postgres://u:pw@db:5432/t".into()),
            Lifetime::Run,
            Some(OsString::new()),
            none.path(),
        )
        .unwrap();
        assert_eq!(server.url(), "postgres://u:pw@db:5432/t");
        assert_eq!(
            server.to_string(),
            "postgres://u@db:5432/t (from WSP_TEST_POSTGRES_URL)"
        );
        // Empty: the programs are looked for, and here there are none.
        let err = server_from(
            Some("  ".into()),
            Lifetime::Run,
            Some(OsString::new()),
            none.path(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            find_binaries(None, none.path()).unwrap_err().to_string()
        );
    }

    #[test]
    fn without_programs_or_variable_the_error_is_the_one_line() {
        let none = tempfile::tempdir().unwrap();
        let err = server_from(None, Lifetime::Run, Some(OsString::new()), none.path()).unwrap_err();
        let line = err.to_string();
        assert!(
            line.starts_with("the PostgreSQL tests found no PostgreSQL server programs"),
            "{line}"
        );
        assert!(line.contains("apt-get install postgresql"), "{line}");
        assert!(line.contains("WSP_TEST_POSTGRES_URL=postgres://"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }
}
