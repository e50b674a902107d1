//! The filesystem map: the text block the system prompt carries about the agent's Workspaces.

use std::fmt::Write as _;

use crate::scope::AccessScope;
use crate::vfs::{MountKind, WorkspaceInfo};

fn scope_words(scope: AccessScope) -> &'static str {
    match scope {
        AccessScope::ReadOnly => "list, read and search; no writing, editing or deleting",
        AccessScope::ReadWrite => "list, read, search, write, edit and delete",
        AccessScope::WriteOnly => {
            "create or overwrite files with write_file; you cannot list, read or search it"
        }
    }
}

fn mount_words(kind: MountKind) -> &'static str {
    match kind {
        MountKind::Physical => "a directory on the host",
        MountKind::Virtual => "a virtual store kept outside this conversation",
        MountKind::Overlay => {
            "an overlay: your changes go to a virtual layer over a host directory that is never modified"
        }
    }
}

/// The filesystem map for `workspaces`: each Workspace with its Access Scope in words and its kind
/// of Mount (never a host path), then what the agent may not do. The same table always gives the
/// same text.
///
/// ```
/// use wsp_vfs::{AccessScope, MountKind, VirtualPath, WorkspaceInfo, filesystem_map};
/// let map = filesystem_map(&[WorkspaceInfo {
///     path: VirtualPath::parse("/notes").unwrap(),
///     scope: AccessScope::ReadWrite,
///     mount: MountKind::Virtual,
/// }]);
/// assert!(map.contains("- /notes (read-write, a virtual store"));
/// ```
pub fn filesystem_map(workspaces: &[WorkspaceInfo]) -> String {
    let mut out = String::from("## Filesystem map\n\n");
    if workspaces.is_empty() {
        out.push_str(
            "You have no workspaces: every path is denied and no file tools are available. There is no \
             shell and no tool that runs programs.\n",
        );
        return out;
    }
    let mut sorted: Vec<&WorkspaceInfo> = workspaces.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    out.push_str("You reach files only through these workspaces; every path you use is absolute and starts with one of them:\n\n");
    for ws in &sorted {
        let _ = writeln!(
            out,
            "- {} ({}, {}): {}",
            ws.path,
            ws.scope.in_words(),
            mount_words(ws.mount),
            scope_words(ws.scope)
        );
    }
    out.push('\n');
    let nested = sorted.iter().find_map(|inner| {
        sorted
            .iter()
            .filter(|outer| outer.path != inner.path && inner.path.starts_with(&outer.path))
            .max_by_key(|outer| outer.path.depth())
            .map(|outer| (*inner, *outer))
    });
    if let Some((inner, outer)) = nested {
        let _ = writeln!(
            out,
            "A workspace inside another one governs every path below it: paths under {} are {} even though {} is {}.",
            inner.path,
            inner.scope.in_words(),
            outer.path,
            outer.scope.in_words()
        );
    }
    out.push_str(
        "Any path outside these workspaces is denied. There is no shell and no tool that runs programs; you can \
         only list, read, search and change files as the scopes above allow.\n",
    );
    out
}
