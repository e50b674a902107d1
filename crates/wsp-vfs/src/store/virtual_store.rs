//! The Virtual Store: a Mount's namespace in any [`WorkspaceStore`], keeping data off the host's
//! disk and out of the agent's conversation state.
//!
//! The store's namespace is flat; directories are emulated from `/` in names. A virtual path
//! `/<mount>/a/b.md` is the store path `a/b.md` of the Mount's [`Owner`], so names follow
//! [`WorkspacePath`]'s rules (ASCII letters, digits, `.`, `_`, `-`; a letter or digit first).
//! Overlay whiteouts are files of the media type [`WHITEOUT_TYPE`], invisible through every tool.
//! Files the Workspace's deny rules hide are left out of every listing and read as absent, so
//! they make no emulated directory either.

use std::collections::BTreeMap;
use std::sync::Arc;

use wsp_store::{FileWrite, Precondition, StoreError, StoredFile, WorkspaceStore};
use wsp_types::{ETag, LimitKind, MediaType, Owner, WorkspacePath, WorkspacePrefix};

use crate::deny::DenyRules;

use super::{
    EntryKind, Fail, FileBytes, Listing, RawEntry, Walk, WalkedFile, WriteCondition, Written,
    content_type_for, excluded,
};

/// The media type that marks an overlay whiteout: "deleted here, even if the lower layer has it".
pub(crate) const WHITEOUT_TYPE: &str = "application/vnd.wsp.whiteout";

const BAD_NAME: &str = "names in a virtual workspace use only ASCII letters, digits, '.', '_' and '-', \
                        start with a letter or digit, and are at most 256 bytes in all";

/// A directory as the flat store sees it: files and subdirectories directly below a prefix.
#[derive(Debug, Default)]
pub(crate) struct RawDir {
    /// name -> (size, is whiteout)
    pub files: BTreeMap<String, (u64, bool)>,
    /// name -> holds at least one live (non-whiteout) file
    pub dirs: BTreeMap<String, bool>,
}

impl RawDir {
    /// Whether anything live is below.
    pub fn has_live(&self) -> bool {
        self.files.values().any(|(_, w)| !w) || self.dirs.values().any(|live| *live)
    }

    /// The live entries, sorted by name (a name that is both a file and a directory is listed
    /// twice, once as each).
    pub fn live_entries(&self) -> Vec<RawEntry> {
        let mut out: Vec<RawEntry> = self
            .dirs
            .iter()
            .filter(|(_, live)| **live)
            .map(|(name, _)| RawEntry {
                name: name.clone(),
                kind: EntryKind::Directory,
                size: None,
            })
            .chain(
                self.files
                    .iter()
                    .filter(|(_, (_, w))| !w)
                    .map(|(name, (size, _))| RawEntry {
                        name: name.clone(),
                        kind: EntryKind::File,
                        size: Some(*size),
                    }),
            )
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name).then(a.kind.cmp(&b.kind)));
        out
    }
}

/// One Mount's namespace in a shared [`WorkspaceStore`].
pub(crate) struct VirtualStore {
    store: Arc<dyn WorkspaceStore>,
    owner: Owner,
    author: Option<String>,
    deny: Arc<DenyRules>,
}

impl VirtualStore {
    /// The store and the owner whose files this Mount shows.
    pub(crate) fn backing(&self) -> (Arc<dyn WorkspaceStore>, Owner) {
        (self.store.clone(), self.owner.clone())
    }
}

impl std::fmt::Debug for VirtualStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualStore")
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

fn key(rel: &[String]) -> Result<WorkspacePath, Fail> {
    WorkspacePath::parse(&rel.join("/")).map_err(|_| Fail::BadName(BAD_NAME))
}

fn store_fail(err: StoreError) -> Fail {
    match err {
        StoreError::NotFound => Fail::NotFound,
        StoreError::Conflict { .. } => Fail::Stale,
        StoreError::TooLarge {
            limit: LimitKind::MaxFiles,
            max,
        } => Fail::TooManyFiles { max },
        StoreError::TooLarge { max, .. } => Fail::TooLarge { max },
        StoreError::ContainsSecret { .. } => Fail::BadName(
            "a configured secret appears in this name, so nothing was written; choose another",
        ),
        _ => Fail::Unavailable,
    }
}

pub(crate) fn is_whiteout(file: &StoredFile) -> bool {
    file.meta.content_type == WHITEOUT_TYPE
}

impl VirtualStore {
    pub fn new(
        store: Arc<dyn WorkspaceStore>,
        owner: Owner,
        author: Option<String>,
        deny: Arc<DenyRules>,
    ) -> Self {
        Self {
            store,
            owner,
            author,
            deny,
        }
    }

    /// The file at `rel`, whiteouts included; `None` when absent, hidden or not a store name.
    pub async fn get(&self, rel: &[String]) -> Result<Option<StoredFile>, Fail> {
        if self.deny.hides(rel) {
            return Ok(None);
        }
        let Ok(path) = key(rel) else { return Ok(None) };
        match self.store.get(&self.owner, &path, None).await {
            Ok(file) => Ok(Some(file)),
            Err(StoreError::NotFound) => Ok(None),
            Err(e) => Err(store_fail(e)),
        }
    }

    /// Every file whose path starts with `rel` + `/` (all files for the Mount itself) that the
    /// deny rules do not hide.
    async fn files_below(&self, rel: &[String]) -> Result<Vec<wsp_store::FileMeta>, Fail> {
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{}/", rel.join("/"))
        };
        let Ok(prefix) = WorkspacePrefix::parse(&prefix) else {
            return Ok(Vec::new());
        };
        let mut files = self
            .store
            .list(&self.owner, &prefix)
            .await
            .map_err(store_fail)?;
        if !self.deny.is_empty() {
            files.retain(|meta| {
                let parts: Vec<&str> = meta.path.as_str().split('/').collect();
                !self.deny.hides(&parts)
            });
        }
        Ok(files)
    }

    /// The directory `rel` as the flat namespace holds it.
    pub async fn raw_dir(&self, rel: &[String]) -> Result<RawDir, Fail> {
        let mut dir = RawDir::default();
        let skip = if rel.is_empty() {
            0
        } else {
            rel.join("/").len() + 1
        };
        for meta in self.files_below(rel).await? {
            let whiteout = meta.content_type == WHITEOUT_TYPE;
            let rest = &meta.path.as_str()[skip..];
            match rest.split_once('/') {
                Some((sub, _)) => {
                    let live = dir.dirs.entry(sub.to_owned()).or_insert(false);
                    *live |= !whiteout;
                }
                None => {
                    dir.files.insert(rest.to_owned(), (meta.size, whiteout));
                }
            }
        }
        Ok(dir)
    }

    /// Whether `rel` is a directory holding at least one live file.
    pub async fn is_live_dir(&self, rel: &[String]) -> Result<bool, Fail> {
        Ok(!rel.is_empty() && self.raw_dir(rel).await?.has_live())
    }

    pub async fn list(&self, rel: &[String]) -> Result<Listing, Fail> {
        let dir = self.raw_dir(rel).await?;
        if rel.is_empty() || dir.has_live() {
            return Ok(Listing::Directory(dir.live_entries()));
        }
        match self.get(rel).await? {
            Some(f) if !is_whiteout(&f) => Ok(Listing::File(RawEntry {
                name: rel.last().cloned().unwrap_or_default(),
                kind: EntryKind::File,
                size: Some(f.meta.size),
            })),
            _ => Err(Fail::NotFound),
        }
    }

    pub async fn read(&self, rel: &[String], max_bytes: u64) -> Result<FileBytes, Fail> {
        if rel.is_empty() {
            return Err(Fail::IsDirectory);
        }
        key(rel)?;
        match self.get(rel).await? {
            Some(f) if !is_whiteout(&f) => {
                if f.meta.size > max_bytes {
                    return Err(Fail::TooLarge { max: max_bytes });
                }
                let bytes = if f.meta.encoding.is_binary() {
                    // A file written as bytes over HTTP: the agent sees those bytes.
                    f.meta
                        .encoding
                        .decode(&f.content)
                        .map_err(|_| Fail::Unavailable)?
                        .into_owned()
                } else {
                    f.content.into_bytes()
                };
                Ok(FileBytes {
                    bytes,
                    etag: f.meta.etag,
                })
            }
            _ if self.is_live_dir(rel).await? => Err(Fail::IsDirectory),
            _ => Err(Fail::NotFound),
        }
    }

    /// Checks that `rel` can be a file: a valid name, no ancestor that is a live file, and not a
    /// directory.
    pub async fn check_file_slot(&self, rel: &[String]) -> Result<WorkspacePath, Fail> {
        if rel.is_empty() {
            return Err(Fail::IsDirectory);
        }
        let path = key(rel)?;
        if self.deny.hides(rel) {
            return Err(Fail::Hidden);
        }
        for i in 1..rel.len() {
            if let Some(f) = self.get(&rel[..i]).await?
                && !is_whiteout(&f)
            {
                return Err(Fail::ParentNotDirectory);
            }
        }
        if self.is_live_dir(rel).await? {
            return Err(Fail::IsDirectory);
        }
        Ok(path)
    }

    /// Stores `content` at `path` under a store precondition; a failed precondition is `on_conflict`.
    pub async fn put(
        &self,
        path: &WorkspacePath,
        content: String,
        content_type: &'static str,
        pre: Precondition,
        on_conflict: Fail,
    ) -> Result<ETag, Fail> {
        let mut write = FileWrite::text(content, MediaType::from_static(content_type));
        write.author = self.author.clone();
        match self.store.put(&self.owner, path, write, pre).await {
            Ok(stored) => Ok(stored.meta.etag),
            Err(StoreError::Conflict { .. }) => Err(on_conflict),
            Err(e) => Err(store_fail(e)),
        }
    }

    pub async fn write(
        &self,
        rel: &[String],
        content: String,
        cond: &WriteCondition,
    ) -> Result<Written, Fail> {
        let path = self.check_file_slot(rel).await?;
        let current = self.get(rel).await?;
        let live = current.as_ref().filter(|f| !is_whiteout(f));
        cond.check(live.map(|f| &f.meta.etag))?;
        // The store re-checks what we saw, so a racing writer turns into a conflict.
        let (pre, on_conflict) = match (cond, &current) {
            (WriteCondition::IfMatch(tag), _) => {
                (Precondition::IfMatch(vec![tag.clone()]), Fail::Stale)
            }
            (WriteCondition::CreateOnly, Some(whiteout)) => (
                Precondition::IfMatch(vec![whiteout.meta.etag.clone()]),
                Fail::Exists,
            ),
            (WriteCondition::CreateOnly, None) => (Precondition::IfNoneMatchAny, Fail::Exists),
            (WriteCondition::None, _) => (Precondition::None, Fail::Stale),
        };
        let content_type = content_type_for(rel.last().map(String::as_str).unwrap_or_default());
        let etag = self
            .put(&path, content, content_type, pre, on_conflict)
            .await?;
        Ok(Written {
            etag,
            created: live.is_none(),
        })
    }

    /// Puts a whiteout at `rel`, replacing the upper file whose etag is `current` (or nothing).
    pub async fn put_whiteout(&self, rel: &[String], current: Option<ETag>) -> Result<(), Fail> {
        let path = key(rel)?;
        let pre = match current {
            Some(tag) => Precondition::IfMatch(vec![tag]),
            None => Precondition::IfNoneMatchAny,
        };
        self.put(&path, String::new(), WHITEOUT_TYPE, pre, Fail::Stale)
            .await
            .map(|_| ())
    }

    /// Removes the store file at `rel` if its etag is still `current`.
    pub async fn remove(&self, rel: &[String], current: ETag) -> Result<(), Fail> {
        let path = key(rel)?;
        self.store
            .delete(&self.owner, &path, Precondition::IfMatch(vec![current]))
            .await
            .map(|_| ())
            .map_err(store_fail)
    }

    pub async fn delete(&self, rel: &[String]) -> Result<(), Fail> {
        if rel.is_empty() {
            return Err(Fail::IsDirectory);
        }
        key(rel)?;
        if self.deny.hides(rel) {
            return Err(Fail::Hidden);
        }
        match self.get(rel).await? {
            Some(f) if !is_whiteout(&f) => self.remove(rel, f.meta.etag).await,
            _ if self.is_live_dir(rel).await? => Err(Fail::IsDirectory),
            _ => Err(Fail::NotFound),
        }
    }

    /// Files below `rel` (or `rel` itself), whiteouts marked, outside `exclude`.
    pub async fn walk_raw(
        &self,
        rel: &[String],
        exclude: &[Vec<String>],
        budget: usize,
    ) -> Result<(Walk, Vec<Vec<String>>), Fail> {
        let mut walk = Walk::default();
        let mut whiteouts = Vec::new();
        if !rel.is_empty()
            && let Some(f) = self.get(rel).await?
        {
            if is_whiteout(&f) {
                whiteouts.push(rel.to_vec());
            } else {
                walk.files.push(WalkedFile {
                    rel: rel.to_vec(),
                    size: Some(f.meta.size),
                });
            }
            return Ok((walk, whiteouts));
        }
        for meta in self.files_below(rel).await? {
            if walk.files.len() + whiteouts.len() >= budget {
                walk.truncated = true;
                break;
            }
            let parts: Vec<String> = meta.path.as_str().split('/').map(str::to_owned).collect();
            if excluded(&parts, exclude) {
                continue;
            }
            if meta.content_type == WHITEOUT_TYPE {
                whiteouts.push(parts);
            } else {
                walk.files.push(WalkedFile {
                    rel: parts,
                    size: Some(meta.size),
                });
            }
        }
        Ok((walk, whiteouts))
    }

    pub async fn walk(
        &self,
        rel: &[String],
        exclude: &[Vec<String>],
        budget: usize,
    ) -> Result<Walk, Fail> {
        let (walk, _) = self.walk_raw(rel, exclude, budget).await?;
        if walk.files.is_empty() && !rel.is_empty() && !self.is_live_dir(rel).await? {
            return Err(Fail::NotFound);
        }
        Ok(walk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_workspace_path_rules() {
        let rel = |s: &str| s.split('/').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(key(&rel("a/b.md")).unwrap().as_str(), "a/b.md");
        assert_eq!(
            key(&rel("report..final.md")).unwrap().as_str(),
            "report..final.md"
        );
        for bad in [".env", "a b", "caf\u{e9}", "~x"] {
            assert_eq!(key(&rel(bad)), Err(Fail::BadName(BAD_NAME)), "{bad}");
        }
    }
}
