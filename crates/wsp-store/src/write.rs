//! The write decision every backend makes the same way, free of I/O.
//!
//! A backend reads, inside its own transaction and under its own locks, the state of the path
//! ([`Current`]) and the owner's live-file count, calls [`decide_put`] or [`decide_delete`],
//! and executes what the decision says in its own SQL (or memory). The decision is the one
//! place that knows the precondition check, "next version or new life", the `maxFiles` and
//! `maxFileBytes` checks and the tombstone's version; a backend never re-derives them.
//!
//! Also here: the helpers the SQL backends share to store a life id in a signed 64-bit column
//! ([`life_id`], [`stored_life`]), to turn a prefix into a key range ([`prefix_end`]) and to
//! build [`FileMeta`] from stored columns ([`file_meta`]); every backend answers a write with
//! [`PutDecision::stored_file`].

use chrono::{DateTime, Utc};
use wsp_types::wire::ContentEncoding;
use wsp_types::{ETag, LimitKind, MediaType, WorkspacePath};

use crate::{FileMeta, FileWrite, Limits, Precondition, StoreError, StoredFile, new_life_id};

/// The state of one path as a backend stores it: its newest row, a version or a tombstone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current {
    /// The life the newest row belongs to (a random id per life of the path).
    pub life: u64,
    /// The newest row's version: the live version, or the tombstone's own version.
    pub version: u64,
    /// Whether the newest row is a live version (not a tombstone).
    pub live: bool,
}

impl Current {
    /// A path as read from a SQL row: `life` as stored, `version`, and whether it is live.
    pub fn from_stored(life: i64, version: i64, live: bool) -> Self {
        Self {
            life: life_id(life),
            version: version as u64,
            live,
        }
    }

    /// The live file's etag; `None` when the newest row is a tombstone.
    pub fn live_etag(&self) -> Option<ETag> {
        self.live.then(|| ETag::mint(self.life, self.version))
    }

    /// The live version, 0 when the newest row is a tombstone (what a conflict reports).
    pub fn live_version(&self) -> u64 {
        if self.live { self.version } else { 0 }
    }
}

/// What a write that passed every check stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutDecision {
    /// The life of the new version: the live one's, or a fresh id when the write creates.
    pub life: u64,
    /// The new version: the live version plus one, or 1 when the write creates.
    pub version: u64,
    /// Whether the write creates a live file (the owner's live-file count goes up by one).
    pub creates: bool,
    /// The highest version of the new version's life that history no longer keeps (0: none).
    pub history_floor: u64,
    /// The etag of the new version.
    pub etag: ETag,
    /// The body's size in bytes (decoded bytes of base64), what the store records.
    pub size: u64,
}

impl PutDecision {
    /// The file the decided write stores: `write` at `path` as the new version, written at
    /// `updated_at`.
    pub fn stored_file(
        self,
        path: &WorkspacePath,
        write: FileWrite,
        updated_at: DateTime<Utc>,
    ) -> StoredFile {
        StoredFile {
            meta: FileMeta {
                path: path.clone(),
                content_type: write.content_type,
                encoding: write.encoding,
                version: self.version,
                etag: self.etag,
                updated_at,
                size: self.size,
                author: write.author,
            },
            content: write.content,
        }
    }
}

/// What a delete that passed every check stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteDecision {
    /// The life being ended.
    pub life: u64,
    /// The version being deleted (the live one).
    pub last_version: u64,
    /// The tombstone's version: the deleted version plus one, reported to the client.
    pub tombstone: u64,
}

/// Decides a write of `write` over `current`, given the owner's `live_files` count.
///
/// The checks run in the wire's order: the content size, then the precondition (a conflict
/// reports the live version, 0 when absent), then `maxFiles` when the write creates a file.
pub fn decide_put(
    current: Option<&Current>,
    write: &FileWrite,
    precondition: &Precondition,
    limits: &Limits,
    live_files: u64,
) -> Result<PutDecision, StoreError> {
    let size = crate::check_file_size(limits, write)?;
    let live = current.and_then(Current::live_etag);
    if !precondition.admits(live.as_ref()) {
        return Err(StoreError::Conflict {
            current_version: current.map_or(0, Current::live_version),
        });
    }
    let (life, version, creates) = match current {
        Some(c) if c.live => (c.life, c.version + 1, false),
        _ => (fresh_life(current), 1, true),
    };
    if creates && live_files >= limits.max_files {
        return Err(StoreError::TooLarge {
            limit: LimitKind::MaxFiles,
            max: limits.max_files,
        });
    }
    Ok(PutDecision {
        life,
        version,
        creates,
        history_floor: version.saturating_sub(limits.max_versions.max(1)),
        etag: ETag::mint(life, version),
        size,
    })
}

/// Decides a delete of `current`: only a live file can be deleted (else `NotFound`), and only
/// when the precondition admits it.
pub fn decide_delete(
    current: Option<&Current>,
    precondition: &Precondition,
) -> Result<DeleteDecision, StoreError> {
    let current = match current {
        Some(c) if c.live => c,
        _ => return Err(StoreError::NotFound),
    };
    if !precondition.admits(current.live_etag().as_ref()) {
        return Err(StoreError::Conflict {
            current_version: current.live_version(),
        });
    }
    Ok(DeleteDecision {
        life: current.life,
        last_version: current.version,
        tombstone: current.version + 1,
    })
}

/// A new life id, never the previous life's (its etags must not come back).
fn fresh_life(previous: Option<&Current>) -> u64 {
    loop {
        let life = new_life_id();
        if previous.is_none_or(|p| p.life != life) {
            return life;
        }
    }
}

/// A life id as a SQL backend stores it: the u64 bit pattern in a signed 64-bit column.
pub fn stored_life(life: u64) -> i64 {
    life as i64
}

/// A life id from its stored form (see [`stored_life`]).
pub fn life_id(stored: i64) -> u64 {
    stored as u64
}

/// The least string greater than every string that starts with `prefix`, when there is one
/// that is easy to name: `prefix` with its last byte incremented. Prefixes are ASCII
/// (`WorkspacePrefix` allows `A-Z a-z 0-9 . _ / -`), so the result is ASCII and, under a
/// byte-wise collation, `prefix <= path < end` holds exactly for the paths that start with
/// `prefix`. `None` for the empty prefix (every path matches).
pub fn prefix_end(prefix: &str) -> Option<String> {
    let last = *prefix.as_bytes().last()?;
    if last >= 0x7f {
        return None;
    }
    let mut end = prefix[..prefix.len() - 1].to_owned();
    end.push(char::from(last + 1));
    Some(end)
}

/// The stored columns of one version, as a SQL backend reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredColumns {
    /// The life, as stored (see [`stored_life`]).
    pub life: i64,
    /// The version.
    pub version: i64,
    /// The media type (read back through [`MediaType::parse`]: every writer stored a valid one).
    pub content_type: MediaType,
    /// The author, if recorded.
    pub author: Option<String>,
    /// When the version was written.
    pub updated_at: DateTime<Utc>,
    /// The body's size in bytes (decoded bytes of base64).
    pub size: i64,
    /// Whether the content is base64 (stored as a flag: 1 or `true`).
    pub base64: bool,
}

/// The metadata of the version stored as `columns` at `path`; its etag is minted from the life
/// and version, as every backend mints it.
pub fn file_meta(path: WorkspacePath, columns: StoredColumns) -> FileMeta {
    let version = columns.version as u64;
    FileMeta {
        path,
        content_type: columns.content_type,
        encoding: if columns.base64 {
            ContentEncoding::Base64
        } else {
            ContentEncoding::Utf8
        },
        version,
        etag: ETag::mint(life_id(columns.life), version),
        updated_at: columns.updated_at,
        size: columns.size as u64,
        author: columns.author,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::default()
            .with_max_file_bytes(8)
            .with_max_files(2)
            .with_max_versions(3)
    }

    fn live(life: u64, version: u64) -> Current {
        Current {
            life,
            version,
            live: true,
        }
    }

    fn tombstone(life: u64, version: u64) -> Current {
        Current {
            life,
            version,
            live: false,
        }
    }

    fn write() -> FileWrite {
        FileWrite::markdown("body")
    }

    #[test]
    fn a_write_over_a_live_file_is_its_next_version() {
        let d = decide_put(
            Some(&live(7, 4)),
            &write(),
            &Precondition::None,
            &limits(),
            2,
        )
        .unwrap();
        assert_eq!(
            d,
            PutDecision {
                life: 7,
                version: 5,
                creates: false,
                history_floor: 2,
                etag: ETag::mint(7, 5),
                size: 4,
            }
        );
    }

    #[test]
    fn a_write_over_nothing_or_a_tombstone_starts_a_new_life() {
        for current in [None, Some(tombstone(7, 5))] {
            let d = decide_put(
                current.as_ref(),
                &write(),
                &Precondition::None,
                &limits(),
                0,
            )
            .unwrap();
            assert_eq!((d.version, d.creates, d.history_floor), (1, true, 0));
            assert_ne!(d.life, 7, "a new life never reuses the previous one");
            assert_eq!(d.etag, ETag::mint(d.life, 1));
        }
    }

    #[test]
    fn preconditions_are_checked_against_the_live_etag() {
        let tag = ETag::mint(7, 4);
        let cases = [
            (
                Some(live(7, 4)),
                Precondition::IfMatch(vec![tag.clone()]),
                Ok(5),
            ),
            (
                Some(live(7, 4)),
                Precondition::IfMatch(vec![ETag::mint(8, 4)]),
                Err(4),
            ),
            (Some(live(7, 4)), Precondition::IfMatchAny, Ok(5)),
            (Some(live(7, 4)), Precondition::IfNoneMatchAny, Err(4)),
            (
                Some(tombstone(7, 5)),
                Precondition::IfMatch(vec![ETag::mint(7, 5)]),
                Err(0),
            ),
            (Some(tombstone(7, 5)), Precondition::IfMatchAny, Err(0)),
            (Some(tombstone(7, 5)), Precondition::IfNoneMatchAny, Ok(1)),
            (None, Precondition::IfMatchAny, Err(0)),
            (None, Precondition::IfNoneMatchAny, Ok(1)),
        ];
        for (current, pre, expected) in cases {
            let got = decide_put(current.as_ref(), &write(), &pre, &limits(), 0)
                .map(|d| d.version)
                .map_err(|e| match e {
                    StoreError::Conflict { current_version } => current_version,
                    other => panic!("{other:?}"),
                });
            assert_eq!(got, expected, "{current:?} {pre:?}");
        }
    }

    #[test]
    fn max_files_refuses_creates_only() {
        let full = limits().max_files;
        let refused = decide_put(None, &write(), &Precondition::None, &limits(), full);
        assert_eq!(
            refused,
            Err(StoreError::TooLarge {
                limit: LimitKind::MaxFiles,
                max: 2,
            })
        );
        let gone = tombstone(1, 2);
        assert!(decide_put(Some(&gone), &write(), &Precondition::None, &limits(), full).is_err());
        let replace = decide_put(
            Some(&live(1, 1)),
            &write(),
            &Precondition::None,
            &limits(),
            full,
        );
        assert_eq!(replace.map(|d| d.version), Ok(2));
    }

    #[test]
    fn the_size_is_checked_first_then_the_precondition_then_max_files() {
        let big = FileWrite::markdown("123456789");
        let refused = decide_put(None, &big, &Precondition::IfMatchAny, &limits(), 9);
        assert_eq!(
            refused,
            Err(StoreError::TooLarge {
                limit: LimitKind::MaxFileBytes,
                max: 8,
            })
        );
        let refused = decide_put(None, &write(), &Precondition::IfMatchAny, &limits(), 9);
        assert_eq!(refused, Err(StoreError::Conflict { current_version: 0 }));
        // Eight bytes of UTF-8 fit exactly.
        let fits = FileWrite::markdown("ééé12");
        assert!(decide_put(None, &fits, &Precondition::None, &limits(), 0).is_ok());
    }

    #[test]
    fn history_floor_keeps_the_newest_versions() {
        let one = limits().with_max_versions(0);
        let d = decide_put(Some(&live(1, 9)), &write(), &Precondition::None, &one, 0).unwrap();
        assert_eq!(
            d.history_floor, 9,
            "max_versions 0 keeps the latest version"
        );
        let d = decide_put(
            Some(&live(1, 2)),
            &write(),
            &Precondition::None,
            &limits(),
            0,
        )
        .unwrap();
        assert_eq!(d.history_floor, 0);
    }

    #[test]
    fn a_delete_tombstones_the_live_version() {
        let d = decide_delete(Some(&live(7, 4)), &Precondition::None).unwrap();
        assert_eq!(
            d,
            DeleteDecision {
                life: 7,
                last_version: 4,
                tombstone: 5,
            }
        );
        let matching = Precondition::IfMatch(vec![ETag::mint(7, 4)]);
        assert_eq!(decide_delete(Some(&live(7, 4)), &matching), Ok(d));
        assert_eq!(
            decide_delete(Some(&live(7, 4)), &Precondition::IfMatchAny),
            Ok(d)
        );
    }

    #[test]
    fn a_delete_of_nothing_is_not_found_whatever_the_precondition() {
        for current in [None, Some(tombstone(7, 5))] {
            for pre in [Precondition::None, Precondition::IfNoneMatchAny] {
                assert_eq!(
                    decide_delete(current.as_ref(), &pre),
                    Err(StoreError::NotFound)
                );
            }
        }
    }

    #[test]
    fn a_delete_with_a_failing_precondition_reports_the_live_version() {
        let stale = Precondition::IfMatch(vec![ETag::mint(7, 3)]);
        for pre in [stale, Precondition::IfNoneMatchAny] {
            assert_eq!(
                decide_delete(Some(&live(7, 4)), &pre),
                Err(StoreError::Conflict { current_version: 4 })
            );
        }
    }

    #[test]
    fn life_ids_round_trip_through_their_stored_form() {
        for life in [0, 1, u64::MAX, 1 << 63, 0x5eed] {
            assert_eq!(life_id(stored_life(life)), life);
        }
        let current = Current::from_stored(-1, 3, true);
        assert_eq!(current.live_etag(), Some(ETag::mint(u64::MAX, 3)));
        assert_eq!(Current::from_stored(-1, 3, false).live_version(), 0);
    }

    #[test]
    fn prefix_ends() {
        let cases = [
            ("", None),
            ("a", Some("b")),
            ("notes/", Some("notes0")),
            ("a_", Some("a`")),
            ("a-", Some("a.")),
            ("v.", Some("v/")),
            ("Z", Some("[")),
            ("9", Some(":")),
        ];
        for (prefix, end) in cases {
            assert_eq!(prefix_end(prefix).as_deref(), end, "{prefix:?}");
        }
    }
}
