//! The session index: `agents/<agentId>/sessions/sessions.json`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use wsp_store::{StoreError, WorkspaceStore};
use wsp_types::{Owner, WorkspacePath};

use crate::update::{Updated, WriteError, WriteOptions, update_file};

/// The index of an agent's sessions, as stored in `sessions.json`.
///
/// Keys another writer added (to the document or to a session) are kept as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionIndex {
    /// The sessions, in the order they were first recorded.
    #[serde(default)]
    pub sessions: Vec<SessionRecord>,
    /// Keys this version does not know, kept on rewrite.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl SessionIndex {
    /// Reads an index from the text of `sessions.json`.
    pub fn from_text(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The text of `sessions.json`: pretty JSON ending with a newline.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self)
            .expect("a session index always serializes (string keys, no floats)");
        text.push('\n');
        text
    }

    /// Applies `update`: adds the session (started and updated `at`), or, when its id is
    /// present, sets its `updatedAt` and, if given, its summary. Whether it was added.
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// use wsp_context::{SessionIndex, SessionUpdate};
    /// let at = Utc.with_ymd_and_hms(2025, 3, 7, 9, 0, 0).unwrap();
    /// let mut index = SessionIndex::default();
    /// let first = SessionUpdate { id: "s-1".into(), at, summary: Some("planned".into()) };
    /// assert!(index.record(&first));
    /// assert!(!index.record(&SessionUpdate { summary: None, ..first }));
    /// assert_eq!(index.sessions[0].summary.as_deref(), Some("planned"));
    /// ```
    pub fn record(&mut self, update: &SessionUpdate) -> bool {
        match self.sessions.iter_mut().find(|s| s.id == update.id) {
            Some(record) => {
                record.updated_at = update.at;
                if update.summary.is_some() {
                    record.summary.clone_from(&update.summary);
                }
                false
            }
            None => {
                self.sessions.push(SessionRecord {
                    id: update.id.clone(),
                    started_at: update.at,
                    updated_at: update.at,
                    summary: update.summary.clone(),
                    other: Map::new(),
                });
                true
            }
        }
    }
}

/// One session in a [`SessionIndex`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The session id (`<sessionId>.jsonl` beside the index holds its compacted context).
    pub id: String,
    /// When it was first recorded.
    pub started_at: DateTime<Utc>,
    /// When it was last recorded.
    pub updated_at: DateTime<Utc>,
    /// A short summary, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Keys this version does not know, kept on rewrite.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A session to record: [`record_session`] adds it or updates the entry with its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionUpdate {
    /// The session id.
    pub id: String,
    /// When this happened (`startedAt` of a new entry, `updatedAt` always).
    pub at: DateTime<Utc>,
    /// A new summary; `None` keeps the one recorded.
    pub summary: Option<String>,
}

/// Whether `id` can name a session: one path component of 1 to 128 bytes, letters, digits,
/// `.`, `_` and `-`, starting with a letter or digit (so `<sessionId>.jsonl` is a file beside
/// the index). Every surface that takes a session id (MCP, HTTP, the command line) checks it
/// with this.
///
/// ```
/// assert!(wsp_context::is_session_id("2026-11-26.a_1"));
/// assert!(!wsp_context::is_session_id("../x"));
/// assert!(!wsp_context::is_session_id(".hidden"));
/// for bad in ["", "a/b", "a b", &"x".repeat(129)] {
///     assert!(!wsp_context::is_session_id(bad), "{bad:?}");
/// }
/// ```
pub fn is_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// The index file of `agent_id`: `agents/<agentId>/sessions/sessions.json`.
///
/// The id must be one workspace path component (`A-Z a-z 0-9 . _ -`, starting with a letter or
/// digit).
///
/// ```
/// assert_eq!(
///     wsp_context::session_index_path("reviewer").unwrap().as_str(),
///     "agents/reviewer/sessions/sessions.json"
/// );
/// assert!(wsp_context::session_index_path("a/b").is_err());
/// ```
pub fn session_index_path(agent_id: &str) -> Result<WorkspacePath, WriteError> {
    let invalid =
        || WriteError::Invalid(format!("agent id {agent_id:?} is not one path component"));
    if agent_id.contains('/') || !agent_id.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(invalid());
    }
    WorkspacePath::parse(&format!("agents/{agent_id}/sessions/sessions.json"))
        .map_err(|_| invalid())
}

fn parse_index(path: &WorkspacePath, content: &str) -> Result<SessionIndex, WriteError> {
    SessionIndex::from_text(content).map_err(|e| WriteError::Corrupt {
        path: path.to_string(),
        reason: format!("not a session index: {e}"),
    })
}

/// The agent's session index; empty when there is none yet.
pub async fn read_session_index(
    store: &dyn WorkspaceStore,
    owner: &Owner,
    agent_id: &str,
) -> Result<SessionIndex, WriteError> {
    let path = session_index_path(agent_id)?;
    match store.get(owner, &path, None).await {
        Ok(file) => parse_index(&path, &file.content),
        Err(StoreError::NotFound) => Ok(SessionIndex::default()),
        Err(e) => Err(WriteError::Store(e)),
    }
}

/// Changes the agent's session index with `change`, safely against concurrent writers: the
/// write is conditional on the version read and `change` runs again on the newer index after a
/// conflict (so it must be a pure function of the index it is given). A stored index that is not
/// valid JSON of this shape is left alone (`Corrupt`).
pub async fn update_session_index<F>(
    store: &dyn WorkspaceStore,
    owner: &Owner,
    agent_id: &str,
    options: &WriteOptions,
    mut change: F,
) -> Result<(SessionIndex, Updated), WriteError>
where
    F: FnMut(&mut SessionIndex),
{
    let path = session_index_path(agent_id)?;
    let updated = update_file(
        store,
        owner,
        &path,
        "application/json",
        options,
        |current| {
            let mut index = match current {
                Some(text) => parse_index(&path, text)?,
                None => SessionIndex::default(),
            };
            change(&mut index);
            Ok(index.to_text())
        },
    )
    .await?;
    let index = parse_index(&path, &updated.file.content)?;
    Ok((index, updated))
}

/// Records a session: adds it (started and updated `at`) or, when its id is present, sets its
/// `updatedAt` and, if given, its summary. Concurrent recorders never lose each other's entries.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use chrono::{TimeZone, Utc};
/// use wsp_context::{SessionUpdate, WriteOptions, record_session};
/// use wsp_store::MemoryStore;
/// use wsp_types::Owner;
///
/// let store = MemoryStore::default();
/// let owner = Owner::parse("t", "w").unwrap();
/// let at = Utc.with_ymd_and_hms(2025, 3, 7, 9, 0, 0).unwrap();
/// let update = SessionUpdate { id: "s-1".into(), at, summary: Some("Planned the release".into()) };
/// let (index, _) = record_session(&store, &owner, "planner", update, &WriteOptions::default()).await.unwrap();
/// assert_eq!(index.sessions[0].summary.as_deref(), Some("Planned the release"));
/// # });
/// ```
pub async fn record_session(
    store: &dyn WorkspaceStore,
    owner: &Owner,
    agent_id: &str,
    update: SessionUpdate,
    options: &WriteOptions,
) -> Result<(SessionIndex, Updated), WriteError> {
    if update.id.trim().is_empty() {
        return Err(WriteError::Invalid("a session id is not empty".into()));
    }
    update_session_index(store, owner, agent_id, options, |index| {
        index.record(&update);
    })
    .await
}
