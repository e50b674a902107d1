//! `ls`: the entries of a directory, with the Workspaces mounted below it shown as directories.

use super::{Vfs, outside, parse_path, word};
use crate::error::VfsError;
use crate::scope::Operation;
use crate::store::{EntryKind, Fail, Listing as RawListing};
use crate::tools::{ListEntry, Listing};

impl Vfs {
    /// `ls`: the entries of a directory, with Workspaces mounted below it shown as directories.
    pub async fn ls(&self, raw: &str) -> Result<Listing, VfsError> {
        let path = parse_path(raw)?;
        let below = self.mount_points_below(&path);
        let mount_points = |note: Option<String>| Listing {
            path: path.clone(),
            kind: EntryKind::Directory,
            entries: below
                .iter()
                .map(|name| ListEntry {
                    name: name.clone(),
                    kind: EntryKind::Directory,
                    size: None,
                    mount_point: true,
                })
                .collect(),
            truncated: false,
            note,
        };
        let Some((ws, rel)) = self.route(&path) else {
            return if below.is_empty() {
                Err(outside(&path))
            } else {
                Ok(mount_points(None))
            };
        };
        if !ws.info.scope.allows(Operation::List) {
            if below.is_empty() {
                return Err(VfsError::denied(format!(
                    "{path} is in the {} workspace {}; ls is not allowed there",
                    ws.info.scope, ws.info.path
                )));
            }
            let note = format!(
                "{} is {}: only the workspaces mounted below it are shown",
                ws.info.path, ws.info.scope
            );
            return Ok(mount_points(Some(note)));
        }
        // Enough entries to fill the listing after the names hidden by mount points, and one
        // more to tell that it was cut.
        let keep = self
            .limits
            .max_list_entries
            .saturating_add(below.len())
            .saturating_add(1);
        // A hidden path lists like a missing one; the Store leaves hidden names out of a listing.
        let found = if ws.deny.hides(&rel) {
            Err(Fail::NotFound)
        } else {
            ws.store.list(&rel, keep).await
        };
        let listing = match found {
            Ok(listing) => listing,
            Err(Fail::NotFound) if !below.is_empty() => return Ok(mount_points(None)),
            Err(f) => return Err(word(f, &path)),
        };
        let raw_entries = match listing {
            RawListing::File(_) if !below.is_empty() => return Ok(mount_points(None)),
            RawListing::File(e) => {
                let entry = ListEntry {
                    name: e.name,
                    kind: EntryKind::File,
                    size: e.size,
                    mount_point: false,
                };
                return Ok(Listing {
                    path,
                    kind: EntryKind::File,
                    entries: vec![entry],
                    truncated: false,
                    note: None,
                });
            }
            RawListing::Directory(entries) => entries,
        };
        let mut entries: Vec<ListEntry> = raw_entries
            .into_iter()
            .filter(|e| !below.contains(&e.name) && !ws.deny.matches_in(&rel, &e.name))
            .map(|e| ListEntry {
                name: e.name,
                kind: e.kind,
                size: e.size,
                mount_point: false,
            })
            .chain(mount_points(None).entries)
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name).then(a.kind.cmp(&b.kind)));
        let truncated = entries.len() > self.limits.max_list_entries;
        entries.truncate(self.limits.max_list_entries);
        Ok(Listing {
            path,
            kind: EntryKind::Directory,
            entries,
            truncated,
            note: None,
        })
    }
}
