//! The Physical Store: a host directory reached only through a directory handle.
//!
//! Every open is relative to the Mount's directory handle and walks one component at a time
//! with `O_NOFOLLOW` semantics (`cap-fs-ext`'s `open_dir_nofollow`, `FollowSymlinks::No`), so
//! neither `..`, nor absolute or relative symbolic links, nor symlinked intermediate directories,
//! nor a directory swapped for a symbolic link between a check and a use can lead outside it.
//! When a Mount opts in to `follow_symlinks`, the path is first resolved with `cap-std`'s
//! sandboxed `canonicalize` (which fails on any link leaving the directory), and the resolved path
//! is then opened with the same no-follow walk, so a swap after resolution fails closed.
//!
//! The Workspace's deny rules apply to the path as resolved as well as to the path as asked: a
//! link to a hidden file is absent for reads and refused to writes, a listing leaves out hidden
//! names and links to them, and a walk never enters a hidden directory.

use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, Metadata, MetadataExt, OpenOptions, OpenOptionsExt, PermissionsExt};
use wsp_types::ETag;

use crate::deny::DenyRules;

use super::{
    EntryKind, Fail, FileBytes, Listing, RawEntry, Walk, WalkedFile, WriteCondition, Written,
    addressable, content_etag, excluded, stream_etag,
};

/// Names of in-flight temporary files; hidden from listings and searches.
pub(crate) const TEMP_PREFIX: &str = ".wsp-tmp-";

/// Deepest directory nesting a walk descends into.
const MAX_WALK_DEPTH: usize = 64;

/// A host directory, opened once at mount time.
#[derive(Debug)]
pub(crate) struct PhysicalStore {
    root: Dir,
    follow_symlinks: bool,
    allow_hard_links: bool,
    /// The Workspace's deny rules.
    deny: Arc<DenyRules>,
    /// Serializes this Mount's check-and-replace sequences, so `if_match` and `create_only`
    /// hold against other calls through this process.
    write_lock: Mutex<()>,
}

impl PhysicalStore {
    /// Opens `dir` (an absolute host path, checked by the mount table) as a Mount.
    pub fn open(
        dir: &Path,
        follow_symlinks: bool,
        allow_hard_links: bool,
        deny: Arc<DenyRules>,
    ) -> io::Result<Self> {
        let root = Dir::open_ambient_dir(dir, ambient_authority())?;
        Ok(Self {
            root,
            follow_symlinks,
            allow_hard_links,
            deny,
            write_lock: Mutex::new(()),
        })
    }

    /// [`Self::resolve`], refused with `hidden` when the deny rules hide the path as asked or
    /// as resolved.
    fn reach(&self, rel: &[String], follow_final: bool, hidden: Fail) -> Result<Vec<String>, Fail> {
        if self.deny.hides(rel) {
            return Err(hidden);
        }
        let resolved = self.resolve(rel, follow_final)?;
        if resolved != rel && self.deny.hides(&resolved) {
            return Err(hidden);
        }
        Ok(resolved)
    }

    /// Whether the entry `name` of the directory `rel` is hidden: its own path, or for a link
    /// on a Mount that follows them, the path it resolves to.
    fn hides_entry(&self, rel: &[String], name: &str, kind: EntryKind) -> bool {
        if self.deny.matches_in(rel, name) {
            return true;
        }
        if kind != EntryKind::Symlink || !self.follow_symlinks {
            return false;
        }
        let mut path = rel.to_vec();
        path.push(name.to_owned());
        self.resolve(&path, true)
            .is_ok_and(|resolved| self.deny.hides(&resolved))
    }

    /// `rel` with symbolic links resolved inside the Mount when it follows them (the final
    /// component too when `follow_final`), else `rel` unchanged. Components that do not exist
    /// yet are kept as written.
    fn resolve(&self, rel: &[String], follow_final: bool) -> Result<Vec<String>, Fail> {
        if !self.follow_symlinks || rel.is_empty() {
            return Ok(rel.to_vec());
        }
        let upto = if follow_final {
            rel.len()
        } else {
            rel.len() - 1
        };
        for i in (1..=upto).rev() {
            let partial: PathBuf = rel[..i].iter().collect();
            match self.root.canonicalize(&partial) {
                Ok(canonical) => {
                    let mut out = path_components(&canonical)?;
                    out.extend_from_slice(&rel[i..]);
                    return Ok(out);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(classify(&e)),
            }
        }
        Ok(rel.to_vec())
    }

    /// Opens the directory `rel` component by component, never following a symbolic link.
    /// With `create`, missing directories are created on the way.
    fn open_dir(&self, rel: &[String], create: bool) -> Result<Dir, Fail> {
        let mut dir = self.root.try_clone().map_err(|_| Fail::Unavailable)?;
        for name in rel {
            let next = match dir.open_dir_nofollow(name) {
                Ok(next) => next,
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    match dir.create_dir(name) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(classify(&e)),
                    }
                    dir.open_dir_nofollow(name)
                        .map_err(|e| explain(&dir, name, &e, true))?
                }
                Err(e) => return Err(explain(&dir, name, &e, true)),
            };
            dir = next;
        }
        Ok(dir)
    }

    /// The directory holding the last component of `rel` (which must not be empty), and that name.
    fn open_parent<'r>(&self, rel: &'r [String], create: bool) -> Result<(Dir, &'r str), Fail> {
        let (name, parents) = rel.split_last().ok_or(Fail::IsDirectory)?;
        Ok((self.open_dir(parents, create)?, name))
    }

    /// What `name` in `dir` is, without following it.
    fn kind_in(dir: &Dir, name: &str) -> Result<Option<(EntryKind, Metadata)>, Fail> {
        match dir.symlink_metadata(name) {
            Ok(meta) => {
                let ft = meta.file_type();
                let kind = if ft.is_symlink() {
                    EntryKind::Symlink
                } else if ft.is_dir() {
                    EntryKind::Directory
                } else if ft.is_file() {
                    EntryKind::File
                } else {
                    return Err(Fail::SpecialFile);
                };
                Ok(Some((kind, meta)))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(classify(&e)),
        }
    }

    /// What `rel` is (`None` when absent), resolving links only where the Mount follows them.
    pub fn kind(&self, rel: &[String]) -> Result<Option<EntryKind>, Fail> {
        if rel.is_empty() {
            return Ok(Some(EntryKind::Directory));
        }
        let rel = match self.reach(rel, true, Fail::NotFound) {
            Ok(rel) => rel,
            Err(Fail::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        };
        let (dir, name) = match self.open_parent(&rel, false) {
            Ok(found) => found,
            Err(Fail::NotFound | Fail::ParentNotDirectory) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Self::kind_in(&dir, name)?.map(|(k, _)| k))
    }

    /// The first proper ancestor of `rel` that is a file (or link, or special file), if any.
    pub fn file_ancestor(&self, rel: &[String]) -> Result<Option<usize>, Fail> {
        let mut dir = self.root.try_clone().map_err(|_| Fail::Unavailable)?;
        for (i, name) in rel.iter().enumerate().take(rel.len().saturating_sub(1)) {
            match Self::kind_in(&dir, name) {
                Ok(None) => return Ok(None),
                Ok(Some((EntryKind::Directory, _))) => {}
                Ok(Some(_)) | Err(Fail::SpecialFile) => return Ok(Some(i + 1)),
                Err(e) => return Err(e),
            }
            dir = dir
                .open_dir_nofollow(name)
                .map_err(|e| explain(&dir, name, &e, true))?;
        }
        Ok(None)
    }

    /// The file `rel`, or the `keep` entries of the directory `rel` first by name.
    pub fn list(&self, rel: &[String], keep: usize) -> Result<Listing, Fail> {
        let rel = self.reach(rel, true, Fail::NotFound)?;
        let dir = match rel.split_last() {
            None => self.root.try_clone().map_err(|_| Fail::Unavailable)?,
            Some((name, _)) => {
                let (parent, _) = self.open_parent(&rel, false)?;
                match Self::kind_in(&parent, name)? {
                    None => return Err(Fail::NotFound),
                    Some((EntryKind::Symlink, _)) => return Err(Fail::Symlink),
                    Some((EntryKind::File, meta)) => {
                        return Ok(Listing::File(RawEntry {
                            name: name.clone(),
                            kind: EntryKind::File,
                            size: Some(meta.len()),
                        }));
                    }
                    Some((EntryKind::Directory, _)) => parent
                        .open_dir_nofollow(name)
                        .map_err(|e| explain(&parent, name, &e, true))?,
                }
            }
        };
        let skip = |name: &str, kind| self.hides_entry(&rel, name, kind);
        Ok(Listing::Directory(read_entries(&dir, keep, &skip)?))
    }

    /// Opens the regular file `name` in `dir` for reading, refusing links and special files.
    fn open_file(&self, dir: &Dir, name: &str) -> Result<(File, Metadata), Fail> {
        let mut opts = OpenOptions::new();
        // O_NONBLOCK: opening a FIFO swapped in after a check must not hang the call.
        opts.read(true)
            .follow(FollowSymlinks::No)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
        let file = dir
            .open_with(name, &opts)
            .map_err(|e| explain(dir, name, &e, false))?;
        let meta = file.metadata().map_err(|e| classify(&e))?;
        if meta.is_dir() {
            return Err(Fail::IsDirectory);
        }
        if !meta.is_file() {
            return Err(Fail::SpecialFile);
        }
        if meta.nlink() > 1 && !self.allow_hard_links {
            return Err(Fail::HardLink);
        }
        Ok((file, meta))
    }

    pub fn read(&self, rel: &[String], max_bytes: u64) -> Result<FileBytes, Fail> {
        self.read_or(rel, max_bytes, Fail::NotFound)
    }

    /// [`Self::read`] of a file about to be changed (`edit_file`): a hidden path, or a link to
    /// one, is refused like a write to it rather than missing.
    pub fn read_to_change(&self, rel: &[String], max_bytes: u64) -> Result<FileBytes, Fail> {
        self.read_or(rel, max_bytes, Fail::Hidden)
    }

    fn read_or(&self, rel: &[String], max_bytes: u64, hidden: Fail) -> Result<FileBytes, Fail> {
        let rel = self.reach(rel, true, hidden)?;
        let (dir, name) = self.open_parent(&rel, false)?;
        let (file, meta) = self.open_file(&dir, name)?;
        if meta.len() > max_bytes {
            return Err(Fail::TooLarge { max: max_bytes });
        }
        // `meta.len()` is at most `max_bytes` here, and the read stops one byte past it.
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| classify(&e))?;
        if bytes.len() as u64 > max_bytes {
            return Err(Fail::TooLarge { max: max_bytes });
        }
        let etag = content_etag(&bytes);
        Ok(FileBytes { bytes, etag })
    }

    /// The etag of the file at `rel`, hashed in fixed-size chunks; a file over `max` bytes is
    /// [`Fail::TooLargeToCompare`], refused from its size without reading it.
    pub fn etag(&self, rel: &[String], max: u64) -> Result<ETag, Fail> {
        let rel = self.reach(rel, true, Fail::NotFound)?;
        let (dir, name) = self.open_parent(&rel, false)?;
        self.etag_in(&dir, name, max)
    }

    /// [`Self::etag`] of the file `name` in `dir`.
    fn etag_in(&self, dir: &Dir, name: &str, max: u64) -> Result<ETag, Fail> {
        let (file, meta) = self.open_file(dir, name)?;
        if meta.len() > max {
            return Err(Fail::TooLargeToCompare { max });
        }
        stream_etag(file, max)
    }

    /// Replaces or creates the file atomically: a temporary file in the same directory, then a
    /// rename over the name. The rename replaces the directory entry, so it never writes through
    /// an existing inode: a hard link to a file outside the Mount is replaced, not modified.
    /// `if_match` hashes the current file in fixed-size chunks and refuses one over
    /// `max_compare` bytes from its size.
    pub fn write(
        &self,
        rel: &[String],
        content: &[u8],
        cond: &WriteCondition,
        max_compare: u64,
    ) -> Result<Written, Fail> {
        let rel = self.reach(rel, true, Fail::Hidden)?;
        let (dir, name) = self.open_parent(&rel, true)?;
        let _guard = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let existing = match Self::kind_in(&dir, name)? {
            None => None,
            Some((EntryKind::Symlink, _)) => return Err(Fail::Symlink),
            Some((EntryKind::Directory, _)) => return Err(Fail::IsDirectory),
            Some((EntryKind::File, meta)) => Some(meta),
        };
        let current = match (&existing, cond) {
            (Some(_), WriteCondition::IfMatch(_)) => Some(self.etag_in(&dir, name, max_compare)?),
            // Other conditions look only at whether a file is there, so its content is not read
            // (a hard-linked file may be replaced without being read).
            (Some(_), _) => Some(ETag::from_wire("\"present\"")),
            (None, _) => None,
        };
        cond.check(current.as_ref())?;
        // The temporary file is born with the replaced file's permission bits (the umask may
        // narrow them, never widen them), or for a new name with the mode any new file gets, so
        // the new content is never readable by anyone who cannot read the file it becomes.
        let mode = existing
            .as_ref()
            .map_or(0o666, |meta| meta.permissions().mode() & 0o777);
        let (temp_name, mut temp) = create_temp(&dir, mode)?;
        let result = (|| {
            temp.write_all(content)?;
            #[cfg(test)]
            hook::content_written(&temp);
            // The final mode before the rename: exactly the replaced file's (what the umask took
            // away comes back, and so do set-id and sticky bits).
            if let Some(meta) = &existing {
                temp.set_permissions(meta.permissions())?;
            }
            drop(temp);
            dir.rename(&temp_name, &dir, name)
        })();
        if let Err(e) = result {
            let _ = dir.remove_file(&temp_name);
            return Err(classify(&e));
        }
        Ok(Written {
            etag: content_etag(content),
            created: existing.is_none(),
        })
    }

    /// Removes the name. A symbolic link is removed itself (never its target) when the Mount
    /// follows links, and refused otherwise; a link to a hidden path is refused like the path.
    pub fn delete(&self, rel: &[String]) -> Result<(), Fail> {
        let resolved = self.reach(rel, false, Fail::Hidden)?;
        let (dir, name) = self.open_parent(&resolved, false)?;
        let _guard = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        match Self::kind_in(&dir, name)? {
            None => Err(Fail::NotFound),
            Some((EntryKind::Directory, _)) => Err(Fail::IsDirectory),
            Some((EntryKind::Symlink, _)) if !self.follow_symlinks => Err(Fail::Symlink),
            Some((EntryKind::Symlink, _))
                if self.hides_entry(&resolved[..resolved.len() - 1], name, EntryKind::Symlink) =>
            {
                Err(Fail::Hidden)
            }
            Some(_) => dir.remove_file(name).map_err(|e| classify(&e)),
        }
    }

    pub fn walk(
        &self,
        rel: &[String],
        exclude: &[Vec<String>],
        budget: usize,
    ) -> Result<Walk, Fail> {
        let rel = self.reach(rel, true, Fail::NotFound)?;
        let mut walk = Walk::default();
        let mut left = budget;
        let dir = match rel.split_last() {
            None => self.root.try_clone().map_err(|_| Fail::Unavailable)?,
            Some((name, _)) => {
                let (parent, _) = self.open_parent(&rel, false)?;
                match Self::kind_in(&parent, name)? {
                    None => return Err(Fail::NotFound),
                    Some((EntryKind::Symlink, _)) => return Err(Fail::Symlink),
                    Some((EntryKind::File, meta)) => {
                        walk.files.push(WalkedFile {
                            rel: rel.clone(),
                            size: Some(meta.len()),
                        });
                        return Ok(walk);
                    }
                    Some((EntryKind::Directory, _)) => parent
                        .open_dir_nofollow(name)
                        .map_err(|e| explain(&parent, name, &e, true))?,
                }
            }
        };
        let mut prefix = rel;
        walk_dir(
            &dir,
            &mut prefix,
            exclude,
            &self.deny,
            &mut left,
            &mut walk,
            0,
        );
        Ok(walk)
    }
}

/// Visits `dir` depth first in name order; symbolic links are never followed by a walk, and
/// names the deny rules hide are neither counted nor entered.
fn walk_dir(
    dir: &Dir,
    prefix: &mut Vec<String>,
    exclude: &[Vec<String>],
    deny: &DenyRules,
    left: &mut usize,
    walk: &mut Walk,
    depth: usize,
) {
    let skip = |name: &str, _| deny.matches_in(prefix, name);
    // One more than the budget left, so that a directory with more says so.
    let Ok(entries) = read_entries(dir, left.saturating_add(1), &skip) else {
        return;
    };
    for entry in entries {
        if *left == 0 {
            walk.truncated = true;
            return;
        }
        *left -= 1;
        prefix.push(entry.name);
        if !excluded(prefix, exclude) {
            match entry.kind {
                EntryKind::File => walk.files.push(WalkedFile {
                    rel: prefix.clone(),
                    size: entry.size,
                }),
                EntryKind::Directory if depth < MAX_WALK_DEPTH => {
                    let name = prefix.last().map(String::as_str).unwrap_or_default();
                    if let Ok(sub) = dir.open_dir_nofollow(name) {
                        walk_dir(&sub, prefix, exclude, deny, left, walk, depth + 1);
                    }
                }
                _ => {}
            }
        }
        prefix.pop();
    }
}

/// The `keep` addressable entries of `dir` first by name that `skip` does not leave out, sorted;
/// special files are left out. However many entries the directory has, at most `keep + 1` are
/// held at once (a heap of the smallest names so far). Kinds come from the directory entries
/// themselves; sizes are not read.
fn read_entries(
    dir: &Dir,
    keep: usize,
    skip: &dyn Fn(&str, EntryKind) -> bool,
) -> Result<Vec<RawEntry>, Fail> {
    let mut smallest: BinaryHeap<RawEntry> = BinaryHeap::new();
    for entry in dir.entries().map_err(|e| classify(&e))? {
        let Ok(entry) = entry else { continue };
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !addressable(&name) {
            continue;
        }
        if smallest.len() >= keep && smallest.peek().is_none_or(|top| name >= top.name) {
            continue;
        }
        let Ok(ft) = entry.file_type() else { continue };
        let (kind, size) = if ft.is_symlink() {
            (EntryKind::Symlink, None)
        } else if ft.is_dir() {
            (EntryKind::Directory, None)
        } else if ft.is_file() {
            // No size: it would cost a `stat` per entry, more than the listing itself.
            (EntryKind::File, None)
        } else {
            continue;
        };
        if skip(&name, kind) {
            continue;
        }
        smallest.push(RawEntry { name, kind, size });
        if smallest.len() > keep {
            smallest.pop();
        }
    }
    Ok(smallest.into_sorted_vec())
}

/// A new, uniquely named temporary file in `dir`, created with the permission bits `mode` (less
/// the umask) by the open call itself, before a byte is written.
fn create_temp(dir: &Dir, mode: u32) -> Result<(String, File), Fail> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    for _ in 0..8 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("{TEMP_PREFIX}{:08x}{:08x}{n:x}", std::process::id(), nanos);
        let mut opts = OpenOptions::new();
        opts.write(true)
            .create_new(true)
            .follow(FollowSymlinks::No)
            .mode(mode);
        match dir.open_with(&name, &opts) {
            Ok(file) => return Ok((name, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(classify(&e)),
        }
    }
    Err(Fail::Unavailable)
}

/// The components of a path `canonicalize` returned (relative to the Mount).
fn path_components(path: &Path) -> Result<Vec<String>, Fail> {
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(name) => out.push(
                name.to_str()
                    .ok_or(Fail::HostName("a name on disk is not UTF-8"))?
                    .to_owned(),
            ),
            Component::CurDir => {}
            _ => return Err(Fail::Escape),
        }
    }
    Ok(out)
}

/// Why opening `name` in `dir` failed, looking at what the name is: a symbolic link is refused
/// as such, a file where a directory was needed is `ParentNotDirectory`.
fn explain(dir: &Dir, name: &str, err: &io::Error, wanted_dir: bool) -> Fail {
    match PhysicalStore::kind_in(dir, name) {
        Ok(Some((EntryKind::Symlink, _))) => Fail::Symlink,
        Ok(Some((EntryKind::File, _))) if wanted_dir => Fail::ParentNotDirectory,
        Ok(None) => Fail::NotFound,
        Err(Fail::SpecialFile) => Fail::SpecialFile,
        _ => classify(err),
    }
}

/// Maps an I/O error to a [`Fail`] without letting its text (which may hold host paths) out.
fn classify(err: &io::Error) -> Fail {
    if err.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        return Fail::Loop;
    }
    if err.raw_os_error() == Some(rustix::io::Errno::NAMETOOLONG.raw_os_error()) {
        return Fail::HostName("a name is too long for the host file system");
    }
    match err.kind() {
        io::ErrorKind::NotFound => Fail::NotFound,
        io::ErrorKind::IsADirectory => Fail::IsDirectory,
        io::ErrorKind::NotADirectory => Fail::ParentNotDirectory,
        // cap-std reports a resolution that would leave the directory as PermissionDenied with
        // this fixed text; anything else of that kind is the host's own permission check.
        io::ErrorKind::PermissionDenied
            if err.to_string().contains("outside of the filesystem") =>
        {
            Fail::Escape
        }
        io::ErrorKind::PermissionDenied => Fail::HostDenied,
        _ => Fail::Unavailable,
    }
}

/// A seam for the unit tests: the permission bits of each temporary file at a write's most
/// exposed moment (the new content in it, its final mode not yet set), recorded on this thread
/// while [`hook::TEMP_MODES`] is `Some`.
#[cfg(test)]
mod hook {
    use std::cell::RefCell;

    use cap_std::fs::{File, PermissionsExt};

    thread_local! {
        pub static TEMP_MODES: RefCell<Option<Vec<u32>>> = const { RefCell::new(None) };
    }

    pub fn content_written(temp: &File) {
        TEMP_MODES.with_borrow_mut(|modes| {
            if let Some(modes) = modes {
                let meta = temp.metadata().expect("the temporary file's metadata");
                modes.push(meta.permissions().mode() & 0o7777);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn rel(path: &str) -> Vec<String> {
        path.split('/').map(str::to_owned).collect()
    }

    /// The permission bits of the temporary file each time a write's content is in it.
    fn temp_modes_during(store: &PhysicalStore, path: &str) -> Vec<u32> {
        hook::TEMP_MODES.set(Some(Vec::new()));
        store
            .write(
                &rel(path),
                b"new secret content",
                &WriteCondition::None,
                1024,
            )
            .unwrap();
        hook::TEMP_MODES.take().expect("still recording")
    }

    #[test]
    fn the_new_content_is_never_readable_wider_than_the_file_it_replaces() {
        let tmp = tempfile::tempdir().unwrap();
        let store = PhysicalStore::open(tmp.path(), false, false, Default::default()).unwrap();
        for mode in [0o600, 0o400, 0o640, 0o000, 0o604] {
            let target = tmp.path().join("secret.txt");
            std::fs::write(&target, "old").unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).unwrap();
            let seen = temp_modes_during(&store, "secret.txt");
            assert_eq!(seen.len(), 1, "the observer ran once");
            assert_eq!(
                seen[0] & !mode,
                0,
                "the temporary file holding the new content had mode {:o}, wider than the \
                 replaced file's {mode:o}",
                seen[0]
            );
            let after = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
            assert_eq!(after, mode, "the replaced file keeps its mode");
            assert_eq!(std::fs::read(&target).unwrap(), b"new secret content");
        }
    }

    #[test]
    fn a_directory_read_keeps_only_the_entries_first_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        // Created in an order unrelated to the names.
        for i in (0..50).rev().step_by(2).chain((0..50).step_by(2)) {
            std::fs::write(tmp.path().join(format!("f{i:02}")), "").unwrap();
        }
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join(".wsp-tmp-x"), "").unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), ambient_authority()).unwrap();
        let names = |keep| -> Vec<String> {
            read_entries(&dir, keep, &|_, _| false)
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(names(0), Vec::<String>::new());
        assert_eq!(names(1), ["d"]);
        assert_eq!(names(4), ["d", "f00", "f01", "f02"]);
        let all = names(usize::MAX);
        assert_eq!(all.len(), 51, "the temporary file is never listed");
        assert_eq!(names(51), all);
        assert_eq!(names(1000), all);
        assert!(all.windows(2).all(|w| w[0] < w[1]), "sorted");
    }

    #[test]
    fn a_new_file_gets_the_mode_the_umask_gives_from_its_creation() {
        let tmp = tempfile::tempdir().unwrap();
        let store = PhysicalStore::open(tmp.path(), false, false, Default::default()).unwrap();
        // What the umask makes of 0666: the mode of a file created the ordinary way.
        std::fs::write(tmp.path().join("reference"), "").unwrap();
        let ordinary = std::fs::metadata(tmp.path().join("reference"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        let seen = temp_modes_during(&store, "fresh.txt");
        assert_eq!(seen, [ordinary]);
        let after = std::fs::metadata(tmp.path().join("fresh.txt"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(after, ordinary);
    }
}
