//! Overlay Mounts: a Virtual Store layer (upper) over a host directory (lower, never written).
//!
//! Reads look in the upper layer first, then the lower. Writes and deletes go to the upper layer
//! only; deleting a file the lower layer has leaves a whiteout in the upper layer (a store file of
//! media type `application/vnd.wsp.whiteout`) that hides it. Listings and walks are the union of
//! both layers, deduplicated, minus whiteouts.

use std::collections::{BTreeMap, BTreeSet};

use wsp_store::Precondition;
use wsp_types::ETag;

use super::virtual_store::is_whiteout;
use super::{
    EntryKind, Fail, FileBytes, Listing, PhysicalStore, RawEntry, VirtualStore, Walk,
    WriteCondition, Written, blocking, content_type_for,
};

/// A Virtual Store layer over a Physical Store layer.
#[derive(Debug)]
pub(crate) struct OverlayStore {
    upper: VirtualStore,
    lower: PhysicalStore,
}

/// The file at a path as both layers see it.
enum Current {
    /// The upper layer has a live file.
    Upper(ETag),
    /// The upper layer has a whiteout: deleted, whatever the lower layer holds.
    WhitedOut(ETag),
    /// Only the lower layer has it.
    Lower(ETag),
    /// Neither.
    Absent,
}

impl OverlayStore {
    pub fn new(upper: VirtualStore, lower: PhysicalStore) -> Self {
        Self { upper, lower }
    }

    /// What `rel` holds now. The lower file's etag is computed only when `need_etag` (other
    /// conditions need to know only whether it exists), hashed in chunks, and refused for a
    /// file over `max_compare` bytes.
    async fn current(
        &self,
        rel: &[String],
        need_etag: bool,
        max_compare: u64,
    ) -> Result<Current, Fail> {
        match self.upper.get(rel).await? {
            Some(f) if is_whiteout(&f) => return Ok(Current::WhitedOut(f.meta.etag)),
            Some(f) => return Ok(Current::Upper(f.meta.etag)),
            None => {}
        }
        match self.lower.kind(rel)? {
            None => Ok(Current::Absent),
            Some(EntryKind::Directory) => Err(Fail::IsDirectory),
            Some(_) if need_etag => Ok(Current::Lower(self.lower.etag(rel, max_compare)?)),
            Some(_) => Ok(Current::Lower(ETag::from_wire("\"lower\""))),
        }
    }

    pub async fn read(&self, rel: &[String], max_bytes: u64) -> Result<FileBytes, Fail> {
        if rel.is_empty() {
            return Err(Fail::IsDirectory);
        }
        match self.upper.get(rel).await? {
            Some(f) if is_whiteout(&f) && self.upper.is_live_dir(rel).await? => {
                return Err(Fail::IsDirectory);
            }
            Some(f) if is_whiteout(&f) => return Err(Fail::NotFound),
            Some(_) => return self.upper.read(rel, max_bytes).await,
            None => {}
        }
        match self.lower.read(rel, max_bytes) {
            Err(Fail::NotFound) if self.upper.is_live_dir(rel).await? => Err(Fail::IsDirectory),
            other => other,
        }
    }

    pub async fn write(
        &self,
        rel: &[String],
        content: String,
        cond: &WriteCondition,
        max_compare: u64,
    ) -> Result<Written, Fail> {
        let path = self.upper.check_file_slot(rel).await?;
        if let Some(depth) = self.lower.file_ancestor(rel)? {
            // A lower file above the target hides the directory, unless it is whited out.
            if !matches!(self.upper.get(&rel[..depth]).await?, Some(f) if is_whiteout(&f)) {
                return Err(Fail::ParentNotDirectory);
            }
        }
        let current = self
            .current(rel, matches!(cond, WriteCondition::IfMatch(_)), max_compare)
            .await?;
        let (visible, upper_tag) = match &current {
            Current::Upper(tag) => (Some(tag), Some(tag)),
            Current::WhitedOut(tag) => (None, Some(tag)),
            Current::Lower(tag) => (Some(tag), None),
            Current::Absent => (None, None),
        };
        cond.check(visible)?;
        let pre = match upper_tag {
            Some(tag) => Precondition::IfMatch(vec![tag.clone()]),
            None => Precondition::IfNoneMatchAny,
        };
        let on_conflict = if *cond == WriteCondition::CreateOnly {
            Fail::Exists
        } else {
            Fail::Stale
        };
        let content_type = content_type_for(rel.last().map(String::as_str).unwrap_or_default());
        let etag = self
            .upper
            .put(&path, content, content_type, pre, on_conflict)
            .await?;
        Ok(Written {
            etag,
            created: visible.is_none(),
        })
    }

    pub async fn delete(&self, rel: &[String]) -> Result<(), Fail> {
        if rel.is_empty() {
            return Err(Fail::IsDirectory);
        }
        let lower = self.lower.kind(rel)?;
        match self.upper.get(rel).await? {
            Some(f) if is_whiteout(&f) => Err(Fail::NotFound),
            Some(f) if lower.is_some() => self.upper.put_whiteout(rel, Some(f.meta.etag)).await,
            Some(f) => self.upper.remove(rel, f.meta.etag).await,
            None => match lower {
                Some(EntryKind::Directory) => Err(Fail::IsDirectory),
                Some(_) => self.upper.put_whiteout(rel, None).await,
                None if self.upper.is_live_dir(rel).await? => Err(Fail::IsDirectory),
                None => Err(Fail::NotFound),
            },
        }
    }

    /// The union of both layers; of a lower directory only the `keep` entries first by name
    /// (plus one for each upper file, which may hide a lower one) are read.
    pub async fn list(&self, rel: &[String], keep: usize) -> Result<Listing, Fail> {
        let mut whited_out = false;
        if !rel.is_empty() {
            match self.upper.get(rel).await? {
                Some(f) if is_whiteout(&f) => whited_out = true,
                Some(f) => {
                    return Ok(Listing::File(RawEntry {
                        name: rel.last().cloned().unwrap_or_default(),
                        kind: EntryKind::File,
                        size: Some(f.meta.size),
                    }));
                }
                None => {}
            }
        }
        let upper = self.upper.raw_dir(rel).await?;
        if whited_out && !upper.has_live() {
            return Err(Fail::NotFound);
        }
        // Under a whited-out name only the upper layer counts.
        let lower = match self.lower.list(rel, keep.saturating_add(upper.files.len())) {
            _ if whited_out => Vec::new(),
            Ok(Listing::Directory(entries)) => entries,
            Ok(Listing::File(entry)) => return Ok(Listing::File(entry)),
            Err(Fail::NotFound) if rel.is_empty() || upper.has_live() => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut merged: BTreeMap<(String, EntryKind), RawEntry> = BTreeMap::new();
        for entry in lower {
            let whited = matches!(upper.files.get(&entry.name), Some((_, true)));
            let shadowed =
                entry.kind != EntryKind::Directory && upper.files.contains_key(&entry.name);
            if !whited && !shadowed {
                merged.insert((entry.name.clone(), entry.kind), entry);
            }
        }
        for entry in upper.live_entries() {
            merged.insert((entry.name.clone(), entry.kind), entry);
        }
        Ok(Listing::Directory(merged.into_values().collect()))
    }

    pub async fn walk(
        &self,
        rel: &[String],
        exclude: &[Vec<String>],
        budget: usize,
    ) -> Result<Walk, Fail> {
        let (upper, whiteouts) = self.upper.walk_raw(rel, exclude, budget).await?;
        let lower = match blocking(|| self.lower.walk(rel, exclude, budget)) {
            Ok(walk) => walk,
            Err(Fail::NotFound) => Walk::default(),
            Err(e) => return Err(e),
        };
        let hidden: BTreeSet<&Vec<String>> = whiteouts
            .iter()
            .chain(upper.files.iter().map(|f| &f.rel))
            .collect();
        let mut files: Vec<_> = lower
            .files
            .iter()
            .filter(|f| !hidden.contains(&f.rel))
            .cloned()
            .collect();
        files.extend(upper.files.iter().cloned());
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        if files.is_empty() && !rel.is_empty() && self.list(rel, 0).await.is_err() {
            return Err(Fail::NotFound);
        }
        Ok(Walk {
            files,
            truncated: upper.truncated || lower.truncated,
        })
    }
}
