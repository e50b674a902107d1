//! Which files of a local folder `wsp files push` and `pull` take: the folder's regular files
//! (not symbolic links), less what the ignore rules leave out.
//!
//! The rules, first match wins:
//!
//! 1. never a `.git` (directory or file, at any depth), nor the sync state `.wsp-sync.json`,
//!    nor a temporary file of an atomic write that was cut short (`*.wsp-tmp-*`);
//! 2. `--exclude GLOB` (gitignore syntax: `*.log`, `build/`, `/drafts`);
//! 3. `.wspignore` and `.gitignore` files, those of the deepest folder first (within a folder,
//!    `.wspignore` before `.gitignore`), up to the root of the git checkout the folder is in;
//! 4. the checkout's `.git/info/exclude` and git's global excludes file (`core.excludesFile`),
//!    when the folder is in a git checkout;
//! 5. with `--include GLOB`, only files that match one (or whose folder does).
//!
//! A folder left out is not entered, so nothing under it comes back (as in git). The same rules
//! answer for a path that exists only on the host ([`Rules::leaves_out`]): `push --delete`
//! leaves such a path alone, as rsync's `--delete` leaves excluded files alone. Rules are
//! gitignore's, read by the `ignore` crate's parser (ripgrep's).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::failure::Failure;

/// What the name of a temporary file of an atomic write holds (`NAME.wsp-tmp-PID`).
pub const TEMPORARY: &str = ".wsp-tmp-";

/// The name of wsp's own ignore files.
pub const WSPIGNORE: &str = ".wspignore";

/// The rules of one folder.
pub struct Rules {
    /// The folder, absolute.
    root: PathBuf,
    /// Names never taken at the folder's top (the sync state).
    reserved: Vec<String>,
    exclude: Gitignore,
    include: Option<Gitignore>,
    /// The ignore files of the folders above the root, up to the checkout's root, deepest
    /// first.
    outer: Vec<Gitignore>,
    /// `.git/info/exclude` and the global excludes file.
    git: Vec<Gitignore>,
    /// The ignore files of each folder under the root, by its path relative to the root.
    inner: RefCell<HashMap<String, Rc<[Gitignore]>>>,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules").field("root", &self.root).finish()
    }
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walk {
    /// The files taken, `/`-separated paths relative to the folder, sorted.
    pub files: Vec<String>,
    /// Entries whose names are not UTF-8 (so no workspace path), as the system shows them.
    pub unnamed: Vec<String>,
}

impl Rules {
    /// The rules of the folder `dir` with the command line's `--exclude` and `--include` globs;
    /// `reserved` are names never taken at the folder's top.
    pub fn new(
        dir: &Path,
        exclude: &[String],
        include: &[String],
        reserved: &[&str],
    ) -> Result<Self, Failure> {
        // A folder a dry-run pull would create does not exist yet: its rules are the
        // command line's.
        let root = match std::fs::canonicalize(dir) {
            Ok(root) => root,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::path::absolute(dir)?,
            Err(e) => {
                return Err(Failure::invalid(format!(
                    "cannot use {}: {e}",
                    dir.display()
                )));
            }
        };
        let globs = |flag: &str, globs: &[String]| -> Result<Gitignore, Failure> {
            let mut builder = GitignoreBuilder::new(&root);
            for glob in globs {
                builder
                    .add_line(None, glob)
                    .map_err(|e| Failure::invalid(format!("{flag} {glob:?}: {e}")))?;
            }
            builder
                .build()
                .map_err(|e| Failure::invalid(format!("{flag}: {e}")))
        };
        let exclude = globs("--exclude", exclude)?;
        let include = if include.is_empty() {
            None
        } else {
            Some(globs("--include", include)?)
        };
        let (mut outer, mut git) = (Vec::new(), Vec::new());
        if let Some(checkout) = root.ancestors().find(|d| d.join(".git").exists()) {
            for folder in root.ancestors().skip(1) {
                if !folder.starts_with(checkout) {
                    break;
                }
                outer.extend(ignore_files(folder));
            }
            let info = checkout.join(".git").join("info").join("exclude");
            if info.is_file() {
                git.push(read(checkout, &info));
            }
            let (global, _) = Gitignore::global();
            if !global.is_empty() {
                git.push(global);
            }
        }
        Ok(Self {
            root,
            reserved: reserved.iter().map(|&s| s.to_owned()).collect(),
            exclude,
            include,
            outer,
            git,
            inner: RefCell::default(),
        })
    }

    /// The ignore files of the folder `rel` (relative to the root; `""` for the root).
    fn folder(&self, rel: &str) -> Rc<[Gitignore]> {
        if let Some(found) = self.inner.borrow().get(rel) {
            return found.clone();
        }
        let files: Rc<[Gitignore]> = ignore_files(&self.root.join(rel)).into();
        self.inner
            .borrow_mut()
            .insert(rel.to_owned(), files.clone());
        files
    }

    /// Whether rules 1 to 4 leave out the entry `rel` (a directory when `is_dir`), its
    /// ancestors taken already.
    fn left_out(&self, rel: &str, is_dir: bool) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if name == ".git"
            || name.contains(TEMPORARY)
            || (!rel.contains('/') && self.reserved.iter().any(|r| r == rel))
        {
            return true;
        }
        let path = self.root.join(rel);
        let decided = |m: Match<&ignore::gitignore::Glob>| match m {
            Match::None => None,
            Match::Ignore(_) => Some(true),
            Match::Whitelist(_) => Some(false),
        };
        if let Some(out) = decided(self.exclude.matched(&path, is_dir)) {
            return out;
        }
        // The folders holding `rel`, deepest first: `a/b` for `a/b/c`, then `a`, then the root.
        let mut folders: Vec<&str> = rel.match_indices('/').map(|(at, _)| &rel[..at]).collect();
        folders.reverse();
        folders.push("");
        for folder in folders {
            for rules in self.folder(folder).iter() {
                if let Some(out) = decided(rules.matched(&path, is_dir)) {
                    return out;
                }
            }
        }
        for rules in self.outer.iter().chain(&self.git) {
            if let Some(out) = decided(rules.matched(&path, is_dir)) {
                return out;
            }
        }
        false
    }

    /// Whether `--include` (rule 5) takes the file `rel`.
    fn included(&self, rel: &str) -> bool {
        self.include.as_ref().is_none_or(|include| {
            include
                .matched_path_or_any_parents(self.root.join(rel), false)
                .is_ignore()
        })
    }

    /// Whether the rules leave out the file `rel` (relative to the folder), whether or not it
    /// exists here: one of its folders, or itself.
    pub fn leaves_out(&self, rel: &str) -> bool {
        let folders = rel.match_indices('/').map(|(at, _)| &rel[..at]);
        for folder in folders {
            if self.left_out(folder, true) {
                return true;
            }
        }
        self.left_out(rel, false) || !self.included(rel)
    }

    /// The folder's files the rules take.
    pub fn walk(&self) -> Result<Walk, Failure> {
        let mut walk = Walk::default();
        let mut pending = vec![String::new()];
        while let Some(rel) = pending.pop() {
            let here = self.root.join(&rel);
            let entries = std::fs::read_dir(&here)
                .map_err(|e| crate::CliError(format!("cannot read {}: {e}", here.display())))?;
            for entry in entries {
                let entry = entry?;
                let kind = entry.file_type()?;
                let name = entry.file_name();
                let Some(name) = name.to_str() else {
                    walk.unnamed.push(here.join(&name).display().to_string());
                    continue;
                };
                let child = if rel.is_empty() {
                    name.to_owned()
                } else {
                    format!("{rel}/{name}")
                };
                if kind.is_dir() {
                    if !self.left_out(&child, true) {
                        pending.push(child);
                    }
                } else if kind.is_file() && !self.left_out(&child, false) && self.included(&child) {
                    walk.files.push(child);
                }
            }
        }
        walk.files.sort();
        walk.unnamed.sort();
        Ok(walk)
    }
}

/// The `.wspignore` and `.gitignore` of `folder` that exist, in that order.
fn ignore_files(folder: &Path) -> Vec<Gitignore> {
    [WSPIGNORE, ".gitignore"]
        .iter()
        .map(|name| folder.join(name))
        .filter(|file| file.is_file())
        .map(|file| read(folder, &file))
        .collect()
}

/// The rules of the ignore file `file`, relative to `folder`. Lines that are not valid globs
/// are skipped, as git skips them.
fn read(folder: &Path, file: &Path) -> Gitignore {
    let mut builder = GitignoreBuilder::new(folder);
    let _ = builder.add(file);
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn ignore_files_exclude_and_include_pick_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for rel in [
            "notes/a.md",
            "notes/b.log",
            "notes/keep.log",
            "build/out.md",
            "drafts/x.md",
            "docs/deep/d.md",
            "docs/deep/d.tmp",
            ".git/config",
            ".git/objects/ab/cd",
            "sub/.git",
            ".wsp-sync.json",
            "private.md",
        ] {
            write(root, rel, "x");
        }
        write(root, ".gitignore", "*.log\nbuild/\n");
        write(root, "notes/.gitignore", "!keep.log\n");
        write(root, "docs/.wspignore", "*.tmp\n");
        write(root, ".wspignore", "private.md\n");
        let rules = Rules::new(root, &["/drafts".into()], &[], &[".wsp-sync.json"]).unwrap();
        let walk = rules.walk().unwrap();
        assert_eq!(
            walk.files,
            [
                ".gitignore",
                ".wspignore",
                "docs/.wspignore",
                "docs/deep/d.md",
                "notes/.gitignore",
                "notes/a.md",
                "notes/keep.log",
            ]
        );
        // A path only the host has gets the same answer.
        assert!(rules.leaves_out("build/new.md"));
        assert!(rules.leaves_out("notes/other.log"));
        assert!(!rules.leaves_out("notes/keep.log"));
        assert!(rules.leaves_out("drafts/y.md"));
        assert!(rules.leaves_out("docs/deep/e.tmp"));
        assert!(!rules.leaves_out("new/file.md"));
        assert!(rules.leaves_out(".git/HEAD"));

        let only_docs = Rules::new(root, &[], &["docs/".into(), "a.md".into()], &[]).unwrap();
        assert_eq!(
            only_docs.walk().unwrap().files,
            ["docs/.wspignore", "docs/deep/d.md", "notes/a.md"]
        );
        assert!(only_docs.leaves_out("other.md"));
        assert!(!only_docs.leaves_out("docs/new.md"));
    }

    #[test]
    fn the_checkout_above_the_folder_counts() {
        let dir = tempfile::tempdir().unwrap();
        let checkout = dir.path();
        std::fs::create_dir_all(checkout.join(".git/info")).unwrap();
        write(checkout, ".git/info/exclude", "*.secret\n");
        write(checkout, ".gitignore", "*.bak\n");
        write(checkout, "site/page.md", "x");
        write(checkout, "site/page.bak", "x");
        write(checkout, "site/key.secret", "x");
        let rules = Rules::new(&checkout.join("site"), &[], &[], &[]).unwrap();
        assert_eq!(rules.walk().unwrap().files, ["page.md"]);
    }
}
