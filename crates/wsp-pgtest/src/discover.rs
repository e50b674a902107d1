//! Finding PostgreSQL's server programs: on `PATH`, else the newest version under
//! `/usr/lib/postgresql/<version>/bin` (where Debian and Ubuntu install them, off `PATH`).

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::URL_VAR;

/// Where distributions put one directory of server programs per major version.
pub const LIB_ROOT: &str = "/usr/lib/postgresql";

/// The programs a throwaway cluster needs, all from one installation.
const PROGRAMS: [&str; 3] = ["initdb", "pg_ctl", "postgres"];

/// A directory holding `initdb`, `pg_ctl` and `postgres`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    dir: PathBuf,
}

impl Binaries {
    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `initdb` in it.
    pub fn initdb(&self) -> PathBuf {
        self.dir.join("initdb")
    }

    /// `pg_ctl` in it.
    pub fn pg_ctl(&self) -> PathBuf {
        self.dir.join("pg_ctl")
    }
}

/// No PostgreSQL server programs were found: the one line that says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoBinaries {
    lib_root: PathBuf,
}

impl fmt::Display for NoBinaries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the PostgreSQL tests found no PostgreSQL server programs (initdb, pg_ctl, postgres) \
             on PATH nor under {}/*/bin: install them (apt-get install postgresql) or point the \
             tests at a server ({URL_VAR}=postgres://user:password@host:port/db)",
            self.lib_root.display()
        )
    }
}

impl std::error::Error for NoBinaries {}

/// The first directory of `path` (a `PATH` value) that holds all three programs, else the
/// highest version under `lib_root` that does (versions compare as numbers: 10 > 9.6).
pub fn find_binaries(path: Option<&OsStr>, lib_root: &Path) -> Result<Binaries, NoBinaries> {
    let on_path = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .find(|dir| complete(dir));
    let newest = || {
        std::fs::read_dir(lib_root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let version = version(&entry.file_name().to_string_lossy())?;
                let dir = entry.path().join("bin");
                complete(&dir).then_some((version, dir))
            })
            .max()
            .map(|(_, dir)| dir)
    };
    on_path
        .or_else(newest)
        .map(|dir| Binaries { dir })
        .ok_or_else(|| NoBinaries {
            lib_root: lib_root.to_owned(),
        })
}

/// Whether `dir` holds every program as an executable file.
fn complete(dir: &Path) -> bool {
    PROGRAMS.iter().all(|name| {
        std::fs::metadata(dir.join(name))
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

/// `15` -> `[15]`, `9.6` -> `[9, 6]`; anything else is not a version directory.
fn version(name: &str) -> Option<Vec<u64>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    /// Creates `dir` holding `programs` as executable files (or not).
    fn install(dir: &Path, programs: &[&str], executable: bool) {
        std::fs::create_dir_all(dir).unwrap();
        for name in programs {
            let file = dir.join(name);
            std::fs::write(&file, "#!/bin/sh\n").unwrap();
            let mode = if executable { 0o755 } else { 0o644 };
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }

    fn path_of(dirs: &[&Path]) -> OsString {
        std::env::join_paths(dirs).unwrap()
    }

    #[test]
    fn the_first_complete_directory_on_path_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let (partial, full, later) = (
            tmp.path().join("partial"),
            tmp.path().join("full"),
            tmp.path().join("later"),
        );
        install(&partial, &["initdb", "pg_ctl"], true);
        install(&full, &PROGRAMS, true);
        install(&later, &PROGRAMS, true);
        let root = tmp.path().join("lib");
        install(&root.join("16/bin"), &PROGRAMS, true);
        let path = path_of(&[&partial, &full, &later]);
        assert_eq!(
            find_binaries(Some(&path), &root).unwrap().dir(),
            full.as_path()
        );
    }

    #[test]
    fn off_path_the_newest_complete_version_wins_compared_as_numbers() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("lib");
        install(&root.join("9.6/bin"), &PROGRAMS, true);
        install(&root.join("10/bin"), &PROGRAMS, true);
        install(&root.join("15/bin"), &PROGRAMS, true);
        // Newer, but without its server program, or not executable: not usable.
        install(&root.join("16/bin"), &["initdb", "pg_ctl"], true);
        install(&root.join("17/bin"), &PROGRAMS, false);
        install(&root.join("latest/bin"), &PROGRAMS, true);
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let found = find_binaries(Some(&path_of(&[&empty])), &root).unwrap();
        assert_eq!(found.dir(), root.join("15/bin"));
        assert_eq!(found.pg_ctl(), root.join("15/bin/pg_ctl"));
        assert_eq!(found.initdb(), root.join("15/bin/initdb"));
    }

    #[test]
    fn without_any_the_error_is_one_line_saying_what_to_do() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        install(&bin, &["psql", "pg_ctl"], true);
        let root = tmp.path().join("no-lib");
        let err = find_binaries(Some(&path_of(&[&bin])), &root).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "the PostgreSQL tests found no PostgreSQL server programs (initdb, pg_ctl, \
                 postgres) on PATH nor under {}/*/bin: install them (apt-get install postgresql) \
                 or point the tests at a server \
                 (WSP_TEST_POSTGRES_URL=postgres://user:password@host:port/db)",
                root.display()
            )
        );
        assert!(!err.to_string().contains('\n'));
        assert!(find_binaries(None, &root).is_err());
    }
}
