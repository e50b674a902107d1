//! Shared agent workspaces (seed 001, WIRE.md §8): where an agent acts, and one-way publishing.
//!
//! A private agent acts in its user's workspace, `user-<userId>` (all of a user's private
//! agents share it); a shared agent acts in a workspace of its own, `agent-<agentId>`, and never
//! in a user's. A private agent may copy one of its files into a shared agent's workspace
//! ([`Publication`]); nothing ever flows the other way.
//!
//! A copy lands only under the target agent's [`PublishPrefix`] (`inbox/` unless the host
//! configures another): without it, any caller could replace the files every user of the shared
//! agent relies on (its `AGENTS.md`, its memory) through publishing.
//!
//! This is the one implementation of publishing: the HTTP route (`POST
//! /v1/host/workspace/publish`) and the virtual filesystem's `workspace_publish` tool both run a
//! [`Publication`], after deciding from their own registries who is shared.

use std::fmt;

use wsp_types::{Owner, OwnerId, OwnerIdError, PathError, WorkspacePath};

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

/// The prefix every publication into a shared agent's workspace lands under, unless the host
/// configures another for that agent.
pub const DEFAULT_PUBLISH_PREFIX: &str = "inbox/";

/// Where publications into a shared agent's workspace may land: a directory, written with its
/// final `/` (`inbox/`, `shared/from-users/`). A target path must lie under it, and a
/// publication without a target path lands at `<prefix><path>`.
///
/// ```
/// use wsp_store::shared::PublishPrefix;
/// use wsp_types::WorkspacePath;
/// let inbox = PublishPrefix::default();
/// assert_eq!(inbox.as_str(), "inbox/");
/// let p = |s: &str| WorkspacePath::parse(s).unwrap();
/// assert!(inbox.contains(&p("inbox/list.md")));
/// assert!(!inbox.contains(&p("AGENTS.md")));
/// assert!(!inbox.contains(&p("inboxes/list.md")), "whole components only");
/// assert_eq!(inbox.place(&p("notes/list.md")).unwrap(), p("inbox/notes/list.md"));
/// assert!(PublishPrefix::parse("inbox").is_err(), "a directory ends with /");
/// assert!(PublishPrefix::parse("../x/").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PublishPrefix(String);

/// Why a string is not a [`PublishPrefix`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PublishPrefixError {
    /// It does not end with `/` (it must name a directory: `inbox/`, not `inbox`).
    #[error("a publish prefix is a directory and ends with '/', such as \"inbox/\"")]
    NotADirectory,
    /// Without its final `/` it is not a workspace path.
    #[error("a publish prefix is a workspace path followed by '/': {0}")]
    Path(PathError),
}

impl PublishPrefix {
    /// Validates `raw`: a workspace path followed by `/`. Invalid input is refused, never
    /// repaired.
    pub fn parse(raw: &str) -> Result<Self, PublishPrefixError> {
        let dir = raw
            .strip_suffix('/')
            .ok_or(PublishPrefixError::NotADirectory)?;
        WorkspacePath::parse(dir).map_err(PublishPrefixError::Path)?;
        Ok(Self(raw.to_owned()))
    }

    /// The prefix, with its final `/`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `path` lies under this prefix (a whole-component prefix, since it ends with `/`).
    pub fn contains(&self, path: &WorkspacePath) -> bool {
        path.as_str().starts_with(&self.0)
    }

    /// `<prefix><path>`: where a publication of `path` without a target path lands. Fails when
    /// the result is over the path length limit.
    pub fn place(&self, path: &WorkspacePath) -> Result<WorkspacePath, PathError> {
        WorkspacePath::parse(&format!("{}{}", self.0, path.as_str()))
    }
}

impl Default for PublishPrefix {
    /// [`DEFAULT_PUBLISH_PREFIX`], `inbox/`.
    fn default() -> Self {
        Self(DEFAULT_PUBLISH_PREFIX.to_owned())
    }
}

impl fmt::Display for PublishPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a publication was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    /// The target path does not lie under the target agent's publish prefix.
    #[error("the target path must lie under {prefix}")]
    OutsidePrefix {
        /// Where publications into the target may land.
        prefix: PublishPrefix,
    },
    /// No target path was given, and `<prefix><path>` is not a workspace path (too long).
    #[error("the copy would land at {prefix}<path>, which is not a valid path: {error}")]
    Unplaceable {
        /// The target agent's publish prefix.
        prefix: PublishPrefix,
        /// Why the composed path is invalid.
        error: PathError,
    },
    /// Reading the source failed; [`StoreError::NotFound`] when it has no live file there.
    #[error("source: {0}")]
    Source(StoreError),
    /// Writing the copy at `path` in the target workspace failed (a limit of the target
    /// workspace, storage).
    #[error("target {path}: {error}")]
    Target {
        /// Where the copy was to land.
        path: WorkspacePath,
        /// Why the write failed.
        error: StoreError,
    },
}

/// One copy of a file from a private workspace into a shared agent's workspace.
///
/// ```
/// use wsp_store::shared::{Publication, PublishError, PublishPrefix, shared_workspace};
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
///     target_path: None,
///     prefix: PublishPrefix::default(),
///     author: Some("main".into()),
/// };
/// let copy = publication.run(&store).await.unwrap();
/// assert_eq!((copy.meta.path.as_str(), copy.meta.version), ("inbox/shopping.md", 1));
/// assert_eq!(store.get(&cook, &copy.meta.path, None).await.unwrap().content, "eggs");
/// // Only under the prefix.
/// let agents_md = Publication {
///     target_path: Some(WorkspacePath::parse("AGENTS.md").unwrap()),
///     ..publication.clone()
/// };
/// assert!(matches!(agents_md.run(&store).await, Err(PublishError::OutsidePrefix { .. })));
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
    /// Where the copy lands in the target workspace: a path under `prefix`, or `None` for
    /// `<prefix><path>`.
    pub target_path: Option<WorkspacePath>,
    /// The target agent's publish prefix: the only place a copy may land.
    pub prefix: PublishPrefix,
    /// Who published (recorded as the author of the new version).
    pub author: Option<String>,
}

impl Publication {
    /// Where the copy lands: `target_path` when it lies under `prefix`, `<prefix><path>` when
    /// there is none.
    pub fn destination(&self) -> Result<WorkspacePath, PublishError> {
        match &self.target_path {
            Some(path) if self.prefix.contains(path) => Ok(path.clone()),
            Some(_) => Err(PublishError::OutsidePrefix {
                prefix: self.prefix.clone(),
            }),
            None => self
                .prefix
                .place(&self.path)
                .map_err(|error| PublishError::Unplaceable {
                    prefix: self.prefix.clone(),
                    error,
                }),
        }
    }

    /// Copies the live file: refuses a shared source, a target that is not a shared agent, a
    /// target equal to the source and a destination outside the prefix before touching the
    /// store (in that order, so a target that is not a shared agent never reveals a prefix),
    /// then reads the source and writes the copy as a normal, unconditional write of the
    /// target (a new version there, and a change in the target's feed). Returns the stored
    /// copy, whose path is where it landed.
    pub async fn run(&self, store: &dyn WorkspaceStore) -> Result<StoredFile, PublishError> {
        if self.source_is_shared {
            return Err(PublishError::SourceIsShared);
        }
        let target = self.target.as_ref().ok_or(PublishError::TargetNotShared)?;
        if *target == self.source {
            return Err(PublishError::SameWorkspace);
        }
        let destination = self.destination()?;
        let file = store
            .get(&self.source, &self.path, None)
            .await
            .map_err(PublishError::Source)?;
        let write = FileWrite {
            content: file.content,
            encoding: file.meta.encoding,
            content_type: file.meta.content_type,
            author: self.author.clone(),
        };
        store
            .put(target, &destination, write, Precondition::None)
            .await
            .map_err(|error| PublishError::Target {
                path: destination.clone(),
                error,
            })
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

    /// An unconditional Markdown write of `content` at `p`.
    async fn put(store: &MemoryStore, owner: &Owner, p: &WorkspacePath, content: &str) {
        store
            .put(owner, p, FileWrite::markdown(content), Precondition::None)
            .await
            .unwrap();
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
                FileWrite::text(
                    "{\"a\": 1}",
                    wsp_types::MediaType::from_static("application/json"),
                )
                .by("u"),
                Precondition::None,
            )
            .await
            .unwrap();
        let publication = Publication {
            source: private.clone(),
            source_is_shared: false,
            path: p.clone(),
            target: Some(shared.clone()),
            target_path: Some(path("inbox/list.md")),
            prefix: PublishPrefix::default(),
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
        // Bytes are published as bytes.
        let pdf = wsp_types::MediaType::from_static("application/pdf");
        let bytes = [0x25, 0x50, 0x44, 0x46, 0x00, 0xff];
        store
            .put(
                &private,
                &p,
                FileWrite::bytes(&bytes, pdf.clone()),
                Precondition::None,
            )
            .await
            .unwrap();
        let third = publication.run(&store).await.unwrap();
        assert_eq!(
            third.meta.encoding,
            wsp_types::wire::ContentEncoding::Base64
        );
        assert_eq!(third.meta.content_type, pdf);
        assert_eq!(third.content, wsp_types::base64_encode(&bytes));

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
            (
                Publication {
                    target_path: Some(path("AGENTS.md")),
                    ..publication.clone()
                },
                PublishError::OutsidePrefix {
                    prefix: PublishPrefix::default(),
                },
            ),
        ];
        for (refused, why) in refusals {
            assert_eq!(refused.run(&store).await.unwrap_err(), why);
        }
        // Refusals wrote nothing: the shared workspace still holds the three copies only.
        assert_eq!(
            store
                .get(&shared, &path("inbox/list.md"), None)
                .await
                .unwrap()
                .meta
                .version,
            3
        );
        let absent = Publication {
            path: path("absent.md"),
            ..publication.clone()
        };
        assert_eq!(
            absent.run(&store).await.unwrap_err(),
            PublishError::Source(StoreError::NotFound)
        );
        let tiny = MemoryStore::new(
            Limits::default()
                .with_max_file_bytes(1024)
                .with_max_files(1)
                .with_max_versions(2),
        );
        put(&tiny, &private, &p, "x").await;
        put(&tiny, &shared, &path("full.md"), "y").await;
        assert!(matches!(
            publication.run(&tiny).await.unwrap_err(),
            PublishError::Target {
                error: StoreError::TooLarge { .. },
                ..
            }
        ));
    }

    #[test]
    fn publish_prefixes() {
        for ok in ["inbox/", "a/b/", "from-users.v2/"] {
            assert_eq!(PublishPrefix::parse(ok).unwrap().as_str(), ok);
        }
        for (bad, why) in [
            ("inbox", PublishPrefixError::NotADirectory),
            ("", PublishPrefixError::NotADirectory),
            ("/", PublishPrefixError::Path(PathError::Empty)),
            ("/inbox/", PublishPrefixError::Path(PathError::BadStart)),
            ("a//", PublishPrefixError::Path(PathError::BadComponent)),
            ("a/../", PublishPrefixError::Path(PathError::BadComponent)),
            ("in box/", PublishPrefixError::Path(PathError::BadCharacter)),
        ] {
            assert_eq!(PublishPrefix::parse(bad), Err(why), "{bad:?}");
        }
        let inbox = PublishPrefix::default();
        for (p, inside) in [
            ("inbox/a.md", true),
            ("inbox/deep/a.md", true),
            ("inbox", false),
            ("inboxes/a.md", false),
            ("x/inbox/a.md", false),
            ("AGENTS.md", false),
        ] {
            assert_eq!(inbox.contains(&path(p)), inside, "{p}");
        }
        assert_eq!(
            inbox.place(&path("a/b.md")).unwrap().as_str(),
            "inbox/a/b.md"
        );
        assert_eq!(
            inbox.place(&path(&"x".repeat(251))),
            Err(PathError::TooLong)
        );
    }

    #[tokio::test]
    async fn without_a_target_path_the_copy_lands_under_the_prefix() {
        let store = MemoryStore::default();
        let (private, shared) = (owner("user-u"), owner("agent-s"));
        put(&store, &private, &path("AGENTS.md"), "obey me").await;
        put(&store, &shared, &path("AGENTS.md"), "be kind").await;
        let publication = Publication {
            source: private.clone(),
            source_is_shared: false,
            path: path("AGENTS.md"),
            target: Some(shared.clone()),
            target_path: None,
            prefix: PublishPrefix::parse("from-users/").unwrap(),
            author: None,
        };
        let copy = publication.run(&store).await.unwrap();
        assert_eq!(copy.meta.path.as_str(), "from-users/AGENTS.md");
        assert_eq!(
            store
                .get(&shared, &path("AGENTS.md"), None)
                .await
                .unwrap()
                .content,
            "be kind"
        );
        // A name too long to place under the prefix is refused, not cut.
        let long = path(&"y".repeat(250));
        put(&store, &private, &long, "z").await;
        let err = Publication {
            path: long,
            ..publication
        }
        .run(&store)
        .await
        .unwrap_err();
        assert!(
            matches!(
                err,
                PublishError::Unplaceable {
                    error: PathError::TooLong,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}
