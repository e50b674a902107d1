//! Shared agent workspaces (seed 001, WIRE.md §8): where an agent acts, and one-way publishing.
//!
//! A private agent acts in its user's workspace, `user-<userId>` (all of a user's private
//! agents share it); a shared agent acts in a workspace of its own, `agent-<agentId>`, and never
//! in a user's. A private agent may copy one of its files into a shared agent's workspace
//! ([`Publication`]); nothing ever flows the other way.
//!
//! This is the one implementation of publishing: the HTTP route (`POST
//! /v1/host/workspace/publish`) and the virtual filesystem's `workspace_publish` tool both run a
//! [`Publication`], after deciding from their own registries who is shared.

use wsp_types::{Owner, OwnerId, OwnerIdError, WorkspacePath};

use crate::{FileWrite, Precondition, StoreError, StoredFile, WorkspaceStore};

/// The prefix of a private workspace: `user-<userId>`.
pub const PRIVATE_PREFIX: &str = "user-";

/// The prefix of a shared agent's workspace: `agent-<agentId>`.
pub const SHARED_PREFIX: &str = "agent-";

/// The workspace of `user`'s private agents, `user-<user>`. Refused when the result is not an
/// identifier (over 128 bytes): two long ids must never be cut to the same workspace.
///
/// ```
/// use wsp_store::shared::private_workspace;
/// assert_eq!(private_workspace("u1").unwrap().as_str(), "user-u1");
/// assert!(private_workspace("a/b").is_err());
/// ```
pub fn private_workspace(user: &str) -> Result<OwnerId, OwnerIdError> {
    OwnerId::parse(user)?;
    OwnerId::parse(&format!("{PRIVATE_PREFIX}{user}"))
}

/// The workspace of the shared agent `agent`, `agent-<agent>`. Refused when the result is not
/// an identifier (over 128 bytes).
///
/// ```
/// use wsp_store::shared::shared_workspace;
/// assert_eq!(shared_workspace("acme.cook").unwrap().as_str(), "agent-acme.cook");
/// assert!(shared_workspace(&"a".repeat(123)).is_err());
/// ```
pub fn shared_workspace(agent: &str) -> Result<OwnerId, OwnerIdError> {
    OwnerId::parse(agent)?;
    OwnerId::parse(&format!("{SHARED_PREFIX}{agent}"))
}

/// The agent id a workspace named `agent-<agentId>` belongs to, if it is named so.
///
/// ```
/// use wsp_store::shared::agent_of_workspace;
/// use wsp_types::OwnerId;
/// assert_eq!(agent_of_workspace(&OwnerId::parse("agent-acme.cook").unwrap()), Some("acme.cook"));
/// assert_eq!(agent_of_workspace(&OwnerId::parse("user-u1").unwrap()), None);
/// ```
pub fn agent_of_workspace(workspace: &OwnerId) -> Option<&str> {
    workspace
        .as_str()
        .strip_prefix(SHARED_PREFIX)
        .filter(|rest| !rest.is_empty())
}

/// Why a publication was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    /// The source is a shared agent's workspace: publishing goes one way, private to shared.
    #[error(
        "a shared agent's workspace cannot publish: publishing goes one way, private to shared"
    )]
    SourceIsShared,
    /// The target is not a shared agent (unknown, or private).
    #[error("the target is not a shared agent")]
    TargetNotShared,
    /// The target workspace is the source workspace.
    #[error("the target workspace is the source workspace")]
    SameWorkspace,
    /// Reading the source failed; [`StoreError::NotFound`] when it has no live file there.
    #[error("source: {0}")]
    Source(StoreError),
    /// Writing the copy failed (a limit of the target workspace, storage).
    #[error("target: {0}")]
    Target(StoreError),
}

/// One copy of a file from a private workspace into a shared agent's workspace.
///
/// ```
/// use wsp_store::shared::{Publication, PublishError, shared_workspace};
/// use wsp_store::{FileWrite, MemoryStore, Precondition, WorkspaceStore};
/// use wsp_types::{Owner, WorkspacePath};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = MemoryStore::default();
/// let alice = Owner::parse("t", "user-alice").unwrap();
/// let path = WorkspacePath::parse("shopping.md").unwrap();
/// store.put(&alice, &path, FileWrite::markdown("eggs"), Precondition::None).await.unwrap();
/// let cook = Owner::new(alice.tenant.clone(), shared_workspace("cook").unwrap());
/// let publication = Publication {
///     source: alice.clone(),
///     source_is_shared: false,
///     path: path.clone(),
///     target: Some(cook.clone()),
///     target_path: path.clone(),
///     author: Some("main".into()),
/// };
/// let copy = publication.run(&store).await.unwrap();
/// assert_eq!(copy.meta.version, 1);
/// assert_eq!(store.get(&cook, &path, None).await.unwrap().content, "eggs");
/// // Never the other way.
/// let back = Publication { source: cook, source_is_shared: true, target: Some(alice), ..publication };
/// assert_eq!(back.run(&store).await.unwrap_err(), PublishError::SourceIsShared);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publication {
    /// The workspace the file is copied from.
    pub source: Owner,
    /// Whether `source` is a shared agent's workspace (the caller decides, from its registry).
    pub source_is_shared: bool,
    /// The file to copy (its live version).
    pub path: WorkspacePath,
    /// The shared agent's workspace, or `None` when the target is not a shared agent.
    pub target: Option<Owner>,
    /// Where the copy lands in the target workspace.
    pub target_path: WorkspacePath,
    /// Who published (recorded as the author of the new version).
    pub author: Option<String>,
}

impl Publication {
    /// Copies the live file: refuses a shared source, a target that is not a shared agent and
    /// a target equal to the source before touching the store, then reads the source and writes
    /// the copy as a normal, unconditional write of the target (a new version there, and a change
    /// in the target's feed). Returns the stored copy.
    pub async fn run(&self, store: &dyn WorkspaceStore) -> Result<StoredFile, PublishError> {
        if self.source_is_shared {
            return Err(PublishError::SourceIsShared);
        }
        let target = self.target.as_ref().ok_or(PublishError::TargetNotShared)?;
        if *target == self.source {
            return Err(PublishError::SameWorkspace);
        }
        let file = store
            .get(&self.source, &self.path, None)
            .await
            .map_err(PublishError::Source)?;
        let write = FileWrite {
            content: file.content,
            content_type: file.meta.content_type,
            author: self.author.clone(),
        };
        store
            .put(target, &self.target_path, write, Precondition::None)
            .await
            .map_err(PublishError::Target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limits, MemoryStore};

    fn owner(w: &str) -> Owner {
        Owner::parse("t", w).unwrap()
    }

    fn path(p: &str) -> WorkspacePath {
        WorkspacePath::parse(p).unwrap()
    }

    #[test]
    fn workspace_names() {
        assert_eq!(private_workspace("u").unwrap().as_str(), "user-u");
        assert!(private_workspace("").is_err());
        assert!(private_workspace(&"u".repeat(124)).is_err());
        assert!(private_workspace(&"u".repeat(123)).is_ok());
        assert_eq!(shared_workspace("a.b:c").unwrap().as_str(), "agent-a.b:c");
        assert!(shared_workspace("-x").is_err());
        assert_eq!(agent_of_workspace(&OwnerId::parse("agent-").unwrap()), None);
        assert_eq!(agent_of_workspace(&OwnerId::parse("agentx").unwrap()), None);
    }

    #[tokio::test]
    async fn copies_one_way_as_a_normal_write() {
        let store = MemoryStore::default();
        let private = owner("user-u");
        let shared = owner("agent-s");
        let p = path("notes/list.md");
        store
            .put(
                &private,
                &p,
                FileWrite {
                    content: "{\"a\": 1}".into(),
                    content_type: "application/json".into(),
                    author: Some("u".into()),
                },
                Precondition::None,
            )
            .await
            .unwrap();
        let publication = Publication {
            source: private.clone(),
            source_is_shared: false,
            path: p.clone(),
            target: Some(shared.clone()),
            target_path: path("inbox/list.md"),
            author: Some("main".into()),
        };
        let first = publication.run(&store).await.unwrap();
        assert_eq!(first.meta.version, 1);
        assert_eq!(first.meta.content_type, "application/json");
        assert_eq!(first.meta.author.as_deref(), Some("main"));
        let second = publication.run(&store).await.unwrap();
        assert_eq!(second.meta.version, 2, "each publication is a new version");
        assert!(store.get(&shared, &p, None).await.is_err());
        // The source is untouched.
        assert_eq!(store.get(&private, &p, None).await.unwrap().meta.version, 1);

        let refusals = [
            (
                Publication {
                    source_is_shared: true,
                    ..publication.clone()
                },
                PublishError::SourceIsShared,
            ),
            (
                Publication {
                    target: None,
                    ..publication.clone()
                },
                PublishError::TargetNotShared,
            ),
            (
                Publication {
                    target: Some(private.clone()),
                    ..publication.clone()
                },
                PublishError::SameWorkspace,
            ),
        ];
        for (refused, why) in refusals {
            assert_eq!(refused.run(&store).await.unwrap_err(), why);
        }
        // Refusals wrote nothing: the shared workspace still holds the two copies only.
        assert_eq!(
            store
                .get(&shared, &path("inbox/list.md"), None)
                .await
                .unwrap()
                .meta
                .version,
            2
        );
        let absent = Publication {
            path: path("absent.md"),
            ..publication.clone()
        };
        assert_eq!(
            absent.run(&store).await.unwrap_err(),
            PublishError::Source(StoreError::NotFound)
        );
        let tiny = MemoryStore::new(Limits {
            max_file_bytes: 1024,
            max_files: 1,
            max_versions: 2,
        });
        tiny.put(&private, &p, FileWrite::markdown("x"), Precondition::None)
            .await
            .unwrap();
        tiny.put(
            &shared,
            &path("full.md"),
            FileWrite::markdown("y"),
            Precondition::None,
        )
        .await
        .unwrap();
        assert!(matches!(
            publication.run(&tiny).await.unwrap_err(),
            PublishError::Target(StoreError::TooLarge { .. })
        ));
    }
}
