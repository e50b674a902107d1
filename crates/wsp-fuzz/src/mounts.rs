//! The `mount_table` target: loading a TOML mount table, and routing through what loads.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::json;
use wsp_store::{MemoryStore, WorkspaceStore};
use wsp_types::{Owner, WorkspacePath, WorkspacePrefix};
use wsp_vfs::{
    AccessScope, DEFAULT_DENY, MountConfig, MountTable, VfsError, VfsErrorCode, VirtualPath,
    WorkspaceConfig,
};

/// Tables with more entries than this are loaded but not routed through (to keep runs fast).
const MAX_ROUTED_ENTRIES: usize = 16;

/// Loads the input (lossily decoded as UTF-8) with [`MountTable::from_toml_str`]. A table that
/// loads must survive a TOML round trip, and its routing must be deny by default and longest
/// prefix on whole components: each prefix is remounted on its own virtual namespace with its
/// deny rules, and writes and reads at paths around every prefix, and at paths made from its
/// deny patterns, must land where an independent model says; a path the deny rules hide is
/// never written and reads as missing.
///
/// ```
/// wsp_fuzz::mount_table(b"[[workspace]]\npath = \"/p\"\nscope = \"rw\"\nmount = { virtual = \"p\" }\n");
/// wsp_fuzz::mount_table(b"[[workspace]]\npath = \"/a/../b\"");
/// ```
pub fn mount_table(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(table) = MountTable::from_toml_str(&text) else {
        return;
    };
    let again = MountTable::from_toml_str(&table.to_toml_string());
    assert_eq!(
        again.as_ref(),
        Ok(&table),
        "the TOML round trip changed the table"
    );
    if table.workspaces().len() <= MAX_ROUTED_ENTRIES {
        crate::block_on(routing(&table));
    }
}

/// Probes made from one entry's deny patterns, at most.
const MAX_DENY_PROBES: usize = 32;

/// One entry as the model sees it: the prefix's components, the scope and the deny rules.
struct Entry {
    components: Vec<String>,
    scope: AccessScope,
    deny: DenyModel,
    /// Paths (below the prefix) made from the deny patterns.
    deny_probes: Vec<Vec<String>>,
}

/// The deny rules as documented: `deny` (the default list when absent) and `deny_extra`, each
/// a glob on whole components (`*` within one) of any case; `dir/**` also matches `dir`; a
/// path is hidden when it or a directory above it matches.
struct DenyModel(GlobSet);

impl DenyModel {
    fn patterns(w: &WorkspaceConfig) -> Vec<String> {
        let base = match &w.deny {
            Some(list) => list.clone(),
            None => DEFAULT_DENY.iter().map(|p| (*p).to_owned()).collect(),
        };
        base.into_iter()
            .chain(w.deny_extra.iter().cloned())
            .collect()
    }

    fn of(w: &WorkspaceConfig) -> Self {
        let mut set = GlobSetBuilder::new();
        for pattern in Self::patterns(w) {
            let globs = [Some(pattern.as_str()), pattern.strip_suffix("/**")];
            for glob in globs.into_iter().flatten() {
                set.add(
                    GlobBuilder::new(glob)
                        .literal_separator(true)
                        .case_insensitive(true)
                        .build()
                        .expect("the patterns of a loaded table are globs"),
                );
            }
        }
        Self(set.build().expect("the patterns of a loaded table compile"))
    }

    fn hides(&self, rel: &[String]) -> bool {
        (1..=rel.len()).any(|n| self.0.is_match(rel[..n].join("/")))
    }
}

/// Paths a pattern matches, when they are easy to make: `**` as no component and as one, `*` as
/// `x`, `?` as `q`, each also in capitals and with a file below it. Classes, alternates and
/// escapes are left to the probes around the prefixes.
fn instances(pattern: &str) -> Vec<Vec<String>> {
    if pattern.contains(['[', '{', '\\']) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for deep in [false, true] {
        let path: Vec<String> = pattern
            .split('/')
            .filter_map(|c| match c {
                "**" => deep.then(|| "d".to_owned()),
                c => Some(c.replace("**", "x").replace('*', "x").replace('?', "q")),
            })
            .collect();
        if path.is_empty() {
            continue;
        }
        let upper: Vec<String> = path.iter().map(|c| c.to_uppercase()).collect();
        let mut below = path.clone();
        below.push("f.md".to_owned());
        out.extend([path, upper, below]);
    }
    out
}

/// The probes of an entry's deny patterns: every explicit pattern, and a few of the default
/// list (a file anywhere, a key, a directory) when it is in force.
fn deny_probes(w: &WorkspaceConfig) -> Vec<Vec<String>> {
    let mut patterns: Vec<String> = w.deny.clone().unwrap_or_else(|| {
        ["**/.env", "**/*.pem", "**/.git/**"]
            .map(String::from)
            .to_vec()
    });
    patterns.extend(w.deny_extra.iter().cloned());
    let mut out: Vec<Vec<String>> = patterns.iter().flat_map(|p| instances(p)).collect();
    out.truncate(MAX_DENY_PROBES);
    out
}

/// The model: the entry whose prefix is the longest whole-component prefix of `path`.
fn expected(entries: &[Entry], path: &[String]) -> Option<usize> {
    entries
        .iter()
        .enumerate()
        .filter(|(_, e)| path.starts_with(&e.components))
        .max_by_key(|(_, e)| e.components.len())
        .map(|(i, _)| i)
}

/// Paths next to, at, inside and beside every prefix (`/p_` next to `/p`), and some under none.
fn probes(entries: &[Entry]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    out.insert(vec!["f.md".to_owned()]);
    out.insert(vec!["zz".to_owned(), "f.md".to_owned()]);
    for e in entries {
        let c = &e.components;
        out.insert(c.clone());
        out.insert([c.as_slice(), &["f.md".to_owned()]].concat());
        out.insert([c.as_slice(), &["d".to_owned(), "f.md".to_owned()]].concat());
        for n in 0..c.len() {
            out.insert([&c[..n], &["f.md".to_owned()]].concat());
            let mut sibling = c[..=n].to_vec();
            sibling[n].push('_');
            out.insert(sibling.clone());
            sibling.push("f.md".to_owned());
            out.insert(sibling);
        }
        for rel in &e.deny_probes {
            out.insert([c.as_slice(), rel].concat());
        }
    }
    out
}

fn virtual_path(components: &[String]) -> Option<VirtualPath> {
    VirtualPath::parse(&format!("/{}", components.join("/"))).ok()
}

/// Whether a write refused because of what exists at or above its name got the right code: a
/// write-only Workspace may answer `conflict` for every such refusal, so that an agent that may
/// not read it cannot probe it either.
fn refused_for_what_exists(
    got: Option<VfsErrorCode>,
    code: VfsErrorCode,
    write_only: bool,
) -> bool {
    got == Some(code) || (write_only && got == Some(VfsErrorCode::Conflict))
}

fn code(result: &Result<impl Sized, VfsError>) -> Option<VfsErrorCode> {
    result.as_ref().err().map(|e| e.code)
}

async fn routing(table: &MountTable) {
    let entries: Vec<Entry> = table
        .workspaces()
        .iter()
        .map(|w| Entry {
            components: VirtualPath::parse(&w.path)
                .expect("a loaded prefix parses")
                .components()
                .map(str::to_owned)
                .collect(),
            scope: w.scope,
            deny: DenyModel::of(w),
            deny_probes: deny_probes(w),
        })
        .collect();
    // The same prefixes and scopes, each on a namespace of its own, so a write shows where it went.
    let mut builder = MountTable::builder();
    for (i, w) in table.workspaces().iter().enumerate() {
        let mut remounted = WorkspaceConfig::new(
            w.path.clone(),
            w.scope,
            MountConfig::virtual_namespace(format!("m{i}")),
        );
        remounted.deny = w.deny.clone();
        remounted.deny_extra = w.deny_extra.clone();
        builder = builder.workspace(remounted);
    }
    let remounted = builder
        .build()
        .expect("the same prefixes on virtual mounts form a valid table");
    let store = Arc::new(MemoryStore::default());
    let vfs = wsp_vfs::Vfs::builder(remounted)
        .virtual_store(store.clone())
        .build()
        .expect("a table of virtual mounts builds");

    let mut written: BTreeMap<usize, BTreeMap<String, String>> = BTreeMap::new();
    for probe in probes(&entries) {
        let Some(path) = virtual_path(&probe) else {
            continue;
        };
        let target = expected(&entries, &probe);
        let args = json!({"path": path.as_str(), "content": path.as_str()});
        let write = vfs
            .write_file(serde_json::from_value(args).expect("write_file arguments"))
            .await;
        let read = vfs
            .read_file(serde_json::from_value(json!({"path": path.as_str()})).expect("read_file"))
            .await;
        let denied = Some(VfsErrorCode::PermissionDenied);
        let Some(i) = target else {
            assert_eq!(code(&write), denied, "write {path} is under no workspace");
            assert_eq!(code(&read), denied, "read {path} is under no workspace");
            continue;
        };
        let scope = entries[i].scope;
        let rel = &probe[entries[i].components.len()..];
        let mount_point_below = entries
            .iter()
            .any(|e| e.components.len() > probe.len() && e.components.starts_with(&probe));
        let write_only = scope == AccessScope::WriteOnly;
        let directory = rel.is_empty() || mount_point_below;
        let hidden = !directory && entries[i].deny.hides(rel);
        match scope {
            AccessScope::ReadOnly => assert_eq!(code(&write), denied, "write {path} is RO"),
            _ if directory => assert!(
                refused_for_what_exists(code(&write), VfsErrorCode::IsDirectory, write_only),
                "write {path} names a directory: {write:?}"
            ),
            _ if hidden => assert_eq!(
                write.as_ref().err().map(|e| (e.code, e.message.clone())),
                Some((
                    VfsErrorCode::PermissionDenied,
                    format!(
                        "{path} is outside every workspace; only the paths in your filesystem \
                         map are available"
                    )
                )),
                "write {path} is hidden by the deny rules of workspace {i}"
            ),
            _ => match &write {
                Ok(_) => {
                    written
                        .entry(i)
                        .or_default()
                        .insert(rel.join("/"), path.as_str().to_owned());
                }
                Err(e) => {
                    let files = written.get(&i);
                    let key = rel.join("/");
                    // A file cannot hold other files, nor replace a directory that holds files.
                    let file_above = (1..rel.len())
                        .any(|n| files.is_some_and(|f| f.contains_key(&rel[..n].join("/"))));
                    let files_below =
                        files.is_some_and(|f| f.keys().any(|k| k.starts_with(&format!("{key}/"))));
                    let explained =
                        // The virtual store holds only names that are workspace paths.
                        (e.code == VfsErrorCode::InvalidPath && WorkspacePath::parse(&key).is_err())
                            || (file_above
                                && refused_for_what_exists(
                                    Some(e.code),
                                    VfsErrorCode::InvalidPath,
                                    write_only,
                                ))
                            || (files_below
                                && refused_for_what_exists(
                                    Some(e.code),
                                    VfsErrorCode::IsDirectory,
                                    write_only,
                                ));
                    assert!(explained, "write {path} in workspace {i}: {e}");
                }
            },
        }
        match scope {
            AccessScope::WriteOnly => assert_eq!(code(&read), denied, "read {path} is WO"),
            _ if hidden => assert_eq!(
                read.as_ref().err().map(|e| (e.code, e.message.clone())),
                Some((VfsErrorCode::NotFound, format!("{path} does not exist"))),
                "read {path} is hidden by the deny rules of workspace {i}"
            ),
            _ => assert_ne!(code(&read), denied, "read {path} is readable: {read:?}"),
        }
    }
    // Each namespace holds exactly what the model routed to it.
    for (i, entry) in entries.iter().enumerate() {
        let owner = Owner::parse("vfs", &format!("m{i}")).expect("a valid owner");
        let files = store
            .list(&owner, &WorkspacePrefix::all())
            .await
            .expect("the memory store lists");
        let mut found = BTreeMap::new();
        for meta in files {
            let file = store
                .get(&owner, &meta.path, None)
                .await
                .expect("a listed file reads");
            found.insert(meta.path.into_string(), file.content);
        }
        assert_eq!(
            found,
            written.remove(&i).unwrap_or_default(),
            "the files of workspace {i} ({:?})",
            entry.components
        );
    }
}
