//! What `glob` and `grep` search: the Workspaces a search reaches (each where its Access
//! Scope allows) and the files in them, sorted by virtual path, under the limits.

use super::{Vfs, Workspace, outside, word};
use crate::error::VfsError;
use crate::path::VirtualPath;
use crate::scope::Operation;
use crate::store::Fail;
use crate::tools::ToolName;

impl Vfs {
    /// The Workspaces a search of `root` reaches: the one `root` routes to and every one
    /// mounted below `root`, each only where its Access Scope allows searching, each with the
    /// subtrees of longer prefixes cut out.
    pub(super) fn search_targets(
        &self,
        root: &VirtualPath,
        tool: ToolName,
    ) -> Result<Vec<SearchTarget<'_>>, VfsError> {
        let primary = self.route(root);
        let mut candidates: Vec<(&Workspace, Vec<String>, bool)> = Vec::new();
        if let Some((ws, rel)) = &primary {
            candidates.push((ws, rel.clone(), true));
        }
        for ws in &self.workspaces {
            let strictly_below = ws.info.path != *root && ws.info.path.starts_with(root);
            if strictly_below {
                candidates.push((ws, Vec::new(), false));
            }
        }
        if candidates.is_empty() {
            return Err(outside(root));
        }
        let readable: Vec<SearchTarget<'_>> = candidates
            .into_iter()
            .filter(|(ws, _, _)| ws.info.scope.allows(Operation::Search))
            .map(|(ws, start, primary)| {
                let exclude = self
                    .workspaces
                    .iter()
                    .filter(|other| other.info.path != ws.info.path)
                    .filter_map(|other| other.info.path.strip_prefix(&ws.info.path))
                    .map(|rest| rest.into_iter().map(str::to_owned).collect())
                    .collect();
                SearchTarget {
                    ws,
                    start,
                    exclude,
                    primary,
                }
            })
            .collect();
        if readable.is_empty() {
            let (ws, _) = primary.ok_or_else(|| outside(root))?;
            return Err(VfsError::denied(format!(
                "{root} is in the {} workspace {}; {tool} is not allowed there",
                ws.info.scope, ws.info.path
            )));
        }
        Ok(readable)
    }

    /// Every file the search of `root` may see, sorted by virtual path.
    pub(super) async fn search_files(
        &self,
        root: &VirtualPath,
        tool: ToolName,
    ) -> Result<(Vec<Found<'_>>, bool), VfsError> {
        let targets = self.search_targets(root, tool)?;
        let has_nested = !self.mount_points_below(root).is_empty();
        let mut budget = self.limits.max_walk_entries;
        let mut found = Vec::new();
        let mut truncated = false;
        for t in targets {
            // A hidden search path is searched like a missing one; the Stores never walk into
            // (or count) what the deny rules hide.
            let walked = if t.ws.deny.hides(&t.start) {
                Err(Fail::NotFound)
            } else {
                t.ws.store.walk(&t.start, &t.exclude, budget).await
            };
            let walk = match walked {
                Ok(walk) => walk,
                // The search path itself must exist, unless it only leads to nested Workspaces;
                // a Workspace below it that cannot be walked is left out of the results.
                Err(f) if t.primary && !(f == Fail::NotFound && has_nested) => {
                    return Err(word(f, root));
                }
                Err(_) => continue,
            };
            budget = budget.saturating_sub(walk.files.len());
            truncated |= walk.truncated;
            for file in walk.files {
                let path =
                    t.ws.info
                        .path
                        .join_components(file.rel.iter().map(String::as_str));
                found.push(Found {
                    path,
                    ws: t.ws,
                    rel: file.rel,
                    size: file.size,
                });
            }
        }
        found.sort_by(|a, b| a.path.cmp(&b.path));
        Ok((found, truncated))
    }
}

/// One Workspace to search and where.
pub(super) struct SearchTarget<'a> {
    pub(super) ws: &'a Workspace,
    pub(super) start: Vec<String>,
    pub(super) exclude: Vec<Vec<String>>,
    /// The Workspace the search path itself routes to (its absence is `not_found`).
    pub(super) primary: bool,
}

/// A file found by a search: its virtual path, the Workspace and the path inside it.
pub(super) struct Found<'a> {
    pub(super) path: VirtualPath,
    pub(super) ws: &'a Workspace,
    pub(super) rel: Vec<String>,
    /// When the walk knew it (a physical walk does not `stat` each file).
    pub(super) size: Option<u64>,
}
