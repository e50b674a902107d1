//! A throwaway PostgreSQL cluster that lives as long as one process (its *keeper*: the `cargo`
//! of a test run, or a program such as `cargo xtask conformance`).
//!
//! Layout, under the temporary directory: `wsp-pgtest-<euid>/` (the user's, checked to be
//! private), and in it, per cluster (named `<pid>` after its keeper, or `<pid>-<name>` for a
//! process's own), `<name>.lock` (taken with `flock` while the cluster is found or made, so
//! processes racing to start it get the same one) and `<name>/` (the data directory `data/`,
//! the server's socket, `log`, and `url` once it answers). A watchdog
//! (`sh`, in a process group of its own so Ctrl-C does not reach it) waits for the keeper to
//! exit, stops the server and removes both.
//!
//! PostgreSQL refuses to run as root: as root, the server programs run as the `postgres`
//! system user through `runuser`, in a cluster directory owned by that user.

use std::ffi::OsString;
use std::fs::{DirBuilder, OpenOptions};
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::os::unix::fs::{PermissionsExt as _, chown};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::{Binaries, ClusterError};

/// The database superuser the tests connect as.
const SUPERUSER: &str = "postgres";
/// The system user that runs the server when the tests run as root.
const SYSTEM_USER: &str = "postgres";
/// Attempts at starting the server, each on a newly chosen free port.
const START_ATTEMPTS: usize = 3;

/// Waits for the keeper (`$1`) to exit, then stops the server in `$2/data` with the command in
/// `$4...` (`[runuser -u postgres --] pg_ctl`) and removes `$2` and the lock file `$3`.
const WATCHDOG: &str = r#"keeper=$1 dir=$2 lock=$3
shift 3
while kill -0 "$keeper" 2>/dev/null; do sleep 1; done
"$@" stop -D "$dir/data" -m immediate -w -t 60 >/dev/null 2>&1
rm -rf "$dir" "$lock"
"#;

/// A running throwaway cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Its URL (with the superuser's password).
    pub(crate) url: String,
    /// Its directory.
    pub(crate) dir: PathBuf,
}

impl Cluster {
    /// Its URL, `postgres://postgres:<password>@127.0.0.1:<port>/postgres`: pass it to the code
    /// under test, never print it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        port_of(&self.url).expect("a cluster's URL names its port")
    }

    /// Its directory, where its Unix socket is.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its data directory, where [`Setup::files`] are.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }
}

/// How a cluster is set up beyond what every throwaway cluster has (see [`crate::own_cluster`]).
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Lines appended to `postgresql.conf`, e.g. `ssl = on`.
    pub conf: String,
    /// The whole `pg_hba.conf`, in place of initdb's (a password for everyone).
    pub hba: Option<String>,
    /// Files written into the data directory, readable by the server's user only (e.g.
    /// `server.crt` and `server.key`, where `ssl = on` looks for them).
    pub files: Vec<(String, Vec<u8>)>,
}

/// How the server programs are run: as this user, or (as root) as the `postgres` user.
struct ServerUser {
    /// `runuser -u postgres --`, or nothing.
    prefix: Vec<OsString>,
    /// The uid and gid to give the cluster directory, when not this user's.
    owner: Option<(u32, u32)>,
}

impl ServerUser {
    fn find(euid: u32) -> Result<Self, ClusterError> {
        if euid != 0 {
            return Ok(Self {
                prefix: Vec::new(),
                owner: None,
            });
        }
        let id = |flag: &str| -> Option<u32> {
            let out = Command::new("id").args([flag, SYSTEM_USER]).output().ok()?;
            let text = String::from_utf8(out.stdout).ok()?;
            out.status
                .success()
                .then(|| text.trim().parse().ok())
                .flatten()
        };
        let (Some(uid), Some(gid)) = (id("-u"), id("-g")) else {
            return Err(ClusterError::new(format!(
                "the PostgreSQL tests run as root, which PostgreSQL refuses, and there is no \
                 `{SYSTEM_USER}` user to run a throwaway server as: create it (apt-get install \
                 postgresql does), run the tests as another user, or point them at a server \
                 ({}=postgres://user:password@host:port/db)",
                crate::URL_VAR
            )));
        };
        let runuser = find_program("runuser", &["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
            .ok_or_else(|| {
                ClusterError::new(format!(
                    "the PostgreSQL tests run as root, which PostgreSQL refuses, and runuser \
                     (util-linux) is not installed to run a throwaway server as `{SYSTEM_USER}`: \
                     install it, run the tests as another user, or point them at a server \
                     ({}=postgres://user:password@host:port/db)",
                    crate::URL_VAR
                ))
            })?;
        Ok(Self {
            prefix: vec![runuser.into(), "-u".into(), SYSTEM_USER.into(), "--".into()],
            owner: Some((uid, gid)),
        })
    }

    /// `program` run as the server's user, in `dir` (which that user can enter), no input.
    fn command(&self, program: &Path, dir: &Path) -> Command {
        let mut command = match self.prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(program);
                c
            }
            None => Command::new(program),
        };
        command.current_dir(dir).stdin(Stdio::null());
        command
    }

    /// Hands `path` to the server's user.
    fn give(&self, path: &Path) -> Result<(), ClusterError> {
        match self.owner {
            Some((uid, gid)) => chown(path, Some(uid), Some(gid)).map_err(|e| {
                ClusterError::io(
                    format!("cannot hand {} to {SYSTEM_USER}", path.display()),
                    e,
                )
            }),
            None => Ok(()),
        }
    }
}

/// The cluster `name` kept by the process `keeper`: found running, or made as `setup` says and
/// started.
pub(crate) fn for_keeper(
    keeper: u32,
    name: &str,
    binaries: &Binaries,
    setup: &Setup,
) -> Result<Cluster, ClusterError> {
    let euid = rustix::process::geteuid().as_raw();
    let base = private_base(euid)?;
    let lock_path = base.join(format!("{name}.lock"));
    let lock = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|e| ClusterError::io(format!("cannot open {}", lock_path.display()), e))?;
    lock.lock()
        .map_err(|e| ClusterError::io(format!("cannot lock {}", lock_path.display()), e))?;
    let dir = base.join(name);
    if let Some(url) = answering(&dir) {
        return Ok(Cluster { url, dir });
    }
    let user = ServerUser::find(euid)?;
    if dir.exists() {
        // Left by a keeper whose server no longer answers (a crash, or a reused pid).
        let _ = stop(&dir, binaries, &user);
        std::fs::remove_dir_all(&dir)
            .map_err(|e| ClusterError::io(format!("cannot remove {}", dir.display()), e))?;
    }
    DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| ClusterError::io(format!("cannot create {}", dir.display()), e))?;
    user.give(&dir)?;
    spawn_watchdog(keeper, &dir, &lock_path, binaries, &user)?;
    let url = init_and_start(&dir, binaries, &user, setup)?;
    write_private(&dir.join("url"), &url)?;
    drop(lock);
    Ok(Cluster { url, dir })
}

/// `wsp-pgtest-<euid>` in the temporary directory: made if missing, and refused unless it is a
/// directory of this user's that nobody else may write (0700; 0711 for root, so that the
/// `postgres` user can reach its own cluster directory inside).
fn private_base(euid: u32) -> Result<PathBuf, ClusterError> {
    let base = std::env::temp_dir().join(format!("wsp-pgtest-{euid}"));
    let mode = if euid == 0 { 0o711 } else { 0o700 };
    match DirBuilder::new().mode(mode).create(&base) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(ClusterError::io(
                format!("cannot create {}", base.display()),
                e,
            ));
        }
    }
    let meta = std::fs::symlink_metadata(&base)
        .map_err(|e| ClusterError::io(format!("cannot inspect {}", base.display()), e))?;
    if !meta.is_dir() || meta.uid() != euid || meta.mode() & 0o022 != 0 {
        return Err(ClusterError::new(format!(
            "{} is not a private directory of this user's (uid {euid}); remove it",
            base.display()
        )));
    }
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(mode))
        .map_err(|e| ClusterError::io(format!("cannot set the mode of {}", base.display()), e))?;
    Ok(base)
}

/// The URL of the cluster in `dir` when its server accepts connections.
fn answering(dir: &Path) -> Option<String> {
    let url = std::fs::read_to_string(dir.join("url")).ok()?;
    let url = url.trim().to_owned();
    let port = port_of(&url)?;
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    Some(url)
}

/// The port of `postgres://user:password@127.0.0.1:<port>/db`.
fn port_of(url: &str) -> Option<u16> {
    let (_, after) = url.rsplit_once(':')?;
    after.split('/').next()?.parse().ok()
}

/// Starts the watchdog that stops and removes the cluster when `keeper` has exited. It is never
/// waited for: it outlives this process on purpose, and init reaps it.
fn spawn_watchdog(
    keeper: u32,
    dir: &Path,
    lock: &Path,
    binaries: &Binaries,
    user: &ServerUser,
) -> Result<(), ClusterError> {
    Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG)
        .arg("wsp-pgtest-watchdog")
        .arg(keeper.to_string())
        .arg(dir)
        .arg(lock)
        .args(&user.prefix)
        .arg(binaries.pg_ctl())
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| ClusterError::io("cannot start the cluster's watchdog (sh)".into(), e))?;
    Ok(())
}

/// Stops the server of the cluster in `dir`, if one runs.
fn stop(dir: &Path, binaries: &Binaries, user: &ServerUser) -> std::io::Result<Output> {
    user.command(&binaries.pg_ctl(), dir)
        .args(["stop", "-m", "immediate", "-w", "-D"])
        .arg(dir.join("data"))
        .output()
}

/// Creates the cluster in `dir/data` as `setup` says and starts its server; returns its URL.
fn init_and_start(
    dir: &Path,
    binaries: &Binaries,
    user: &ServerUser,
    setup: &Setup,
) -> Result<String, ClusterError> {
    let password = wsp_types::random_hex(16);
    let pwfile = dir.join("password");
    write_private(&pwfile, &password)?;
    user.give(&pwfile)?;
    let data = dir.join("data");
    let initdb = user
        .command(&binaries.initdb(), dir)
        .arg("-D")
        .arg(&data)
        // `password`: the client sends the password as it is, over loopback only, and the
        // server checks it against its SCRAM secret. With `scram-sha-256` the client would run
        // 4096 rounds of PBKDF2 per connection, which in unoptimized test builds on a busy
        // machine made connections miss the tests' connect timeout.
        .args(["-U", SUPERUSER, "-A", "password", "-E", "UTF8"])
        .args(["--locale=C", "--no-sync"])
        .arg(format!("--pwfile={}", pwfile.display()))
        .output();
    let _ = std::fs::remove_file(&pwfile);
    check(initdb, "initdb", dir)?;

    // Settings of a server nobody else uses and nobody needs after the run: loopback only, the
    // socket in the cluster directory, no durability, small memory.
    let socket_dir = dir.display().to_string().replace('\'', "''");
    let settings = format!(
        "\n# wsp-pgtest: a throwaway cluster\nlisten_addresses = '127.0.0.1'\n\
         unix_socket_directories = '{socket_dir}'\nfsync = off\nsynchronous_commit = off\n\
         full_page_writes = off\nshared_buffers = 32MB\n{}\n",
        setup.conf
    );
    OpenOptions::new()
        .append(true)
        .open(data.join("postgresql.conf"))
        .and_then(|mut f| f.write_all(settings.as_bytes()))
        .map_err(|e| {
            ClusterError::io(
                format!("cannot configure the cluster in {}", dir.display()),
                e,
            )
        })?;
    let hba = setup
        .hba
        .as_ref()
        .map(|hba| ("pg_hba.conf", hba.as_bytes()));
    let files = setup
        .files
        .iter()
        .map(|(name, bytes)| (name.as_str(), &bytes[..]));
    for (name, contents) in hba.into_iter().chain(files) {
        let file = data.join(name);
        write_private(&file, contents)?;
        user.give(&file)?;
    }

    let mut last = None;
    for _ in 0..START_ATTEMPTS {
        // Another process may take the port before the server binds it: then try another.
        let port = free_port()?;
        let started = user
            .command(&binaries.pg_ctl(), dir)
            .arg("start")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.join("log"))
            .args(["-w", "-t", "120", "-o", &format!("-p {port}")])
            .output();
        match check(started, "pg_ctl start", dir) {
            Ok(()) => {
                return Ok(format!(
                    "postgres://{SUPERUSER}:{password}@127.0.0.1:{port}/postgres"
                ));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| ClusterError::new("the server did not start".into())))
}

/// A program's outcome as a result: its failure says what it printed and what the log says.
fn check(output: std::io::Result<Output>, what: &str, dir: &Path) -> Result<(), ClusterError> {
    let output = output.map_err(|e| ClusterError::io(format!("cannot run {what}"), e))?;
    if output.status.success() {
        return Ok(());
    }
    let said = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let log = std::fs::read(dir.join("log")).unwrap_or_default();
    let log = said(&log);
    let tail: String = log
        .char_indices()
        .nth_back(600)
        .map_or(&log[..], |(i, _)| &log[i..])
        .to_owned();
    Err(ClusterError::new(format!(
        "the throwaway PostgreSQL cluster in {} could not be started: {what} failed ({}): {} {}{}",
        dir.display(),
        output.status,
        said(&output.stderr),
        said(&output.stdout),
        if tail.is_empty() {
            String::new()
        } else {
            format!("; server log: {tail}")
        }
    )))
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
fn free_port() -> Result<u16, ClusterError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| ClusterError::io("cannot find a free port on 127.0.0.1".into(), e))
}

/// Writes `text` to a new file at `path` that only its owner may read (replacing any).
fn write_private(path: &Path, text: impl AsRef<[u8]>) -> Result<(), ClusterError> {
    let partial = path.with_extension("partial");
    let _ = std::fs::remove_file(&partial);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .and_then(|mut f| f.write_all(text.as_ref()))
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| ClusterError::io(format!("cannot write {}", path.display()), e))
}

/// The first `name` found on `PATH` or in `extra` directories.
fn find_program(name: &str, extra: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(extra.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|file| file.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_read_back_from_the_url() {
        assert_eq!(
            port_of("postgres://postgres:0a1b@127.0.0.1:41234/postgres"),
            Some(41234)
        );
        assert_eq!(port_of("postgres://postgres@127.0.0.1/postgres"), None);
    }
}
