//! Checksums of versioned migrations, so that an applied migration is never edited.
//!
//! A SQL backend keeps its migrations as an ordered list of embedded SQL texts; a database
//! records how many it applied. Editing a migration that databases already ran would leave
//! them with a schema no build describes, so each backend commits the SHA-256 of every
//! migration (one line per migration: `<set> <version> <hex>`) and a test compares the
//! committed list with the texts in the build ([`verify`]). A new migration is appended to
//! both the list of texts and the committed list; an edit fails the test.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

/// The SHA-256 of a migration's text, as lowercase hex.
pub fn checksum(sql: &str) -> String {
    Sha256::digest(sql.as_bytes())
        .iter()
        .fold(String::with_capacity(64), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        })
}

/// Checks the migrations of `set` (version 1 first) against the `committed` list.
///
/// `Err` says what to do: an edited migration must be restored (and the change made by a new
/// migration), a new one must have its line appended, and a committed line must not outlive
/// its migration.
pub fn verify(set: &str, migrations: &[&str], committed: &str) -> Result<(), String> {
    let recorded: Vec<(usize, &str)> = committed
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(set)).then_some(())?;
            let version = words.next()?.parse().ok()?;
            Some((version, words.next()?))
        })
        .collect();
    for (index, sql) in migrations.iter().enumerate() {
        let version = index + 1;
        let sum = checksum(sql);
        match recorded.iter().find(|(v, _)| *v == version) {
            Some((_, old)) if *old == sum => {}
            Some((_, old)) => {
                return Err(format!(
                    "migration {version} of {set} was edited (committed checksum {old}, now \
                     {sum}); databases that applied it ran the old text: restore it and make \
                     the change in a new migration"
                ));
            }
            None => {
                return Err(format!(
                    "migration {version} of {set} has no committed checksum; append the line \
                     `{set} {version} {sum}`"
                ));
            }
        }
    }
    if let Some((version, _)) = recorded.iter().find(|(v, _)| *v > migrations.len()) {
        return Err(format!(
            "migration {version} of {set} has a committed checksum but no migration: migrations \
             are never removed"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "CREATE TABLE t (x INTEGER)";
    const TWO: &str = "ALTER TABLE t ADD COLUMN y INTEGER";

    fn committed() -> String {
        format!(
            "other 1 {}\nfiles 1 {}\nfiles 2 {}\n",
            checksum("x"),
            checksum(ONE),
            checksum(TWO)
        )
    }

    #[test]
    fn checksums_are_sha256_hex() {
        assert_eq!(
            checksum(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn unchanged_migrations_pass() {
        assert_eq!(verify("files", &[ONE, TWO], &committed()), Ok(()));
    }

    #[test]
    fn an_edited_migration_fails() {
        let edited = "CREATE TABLE t (x INTEGER NOT NULL)";
        let err = verify("files", &[edited, TWO], &committed()).unwrap_err();
        assert!(err.contains("migration 1 of files was edited"), "{err}");
        // Whitespace is part of the text a database ran.
        let err = verify("files", &[ONE, &format!("{TWO} ")], &committed()).unwrap_err();
        assert!(err.contains("migration 2 of files was edited"), "{err}");
    }

    #[test]
    fn a_new_migration_needs_its_line_and_none_is_removed() {
        let three = "DROP TABLE t";
        let err = verify("files", &[ONE, TWO, three], &committed()).unwrap_err();
        assert!(
            err.contains(&format!("`files 3 {}`", checksum(three))),
            "{err}"
        );
        let err = verify("files", &[ONE], &committed()).unwrap_err();
        assert!(
            err.contains("migration 2 of files has a committed checksum"),
            "{err}"
        );
    }
}
