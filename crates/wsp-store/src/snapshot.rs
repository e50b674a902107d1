//! What names and describes a snapshot: its id, and the label its taker attached (a run's
//! metadata, or free text).

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// A snapshot's id: 128 random bits as 32 lowercase hex digits. On the wire a run's `runId`.
///
/// ```
/// use wsp_store::SnapshotId;
/// let id = SnapshotId::new();
/// assert_eq!(SnapshotId::parse(id.as_str()), Some(id));
/// assert_eq!(SnapshotId::parse("run-1"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SnapshotId(String);

impl SnapshotId {
    /// A fresh random id.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self(wsp_types::random_hex(16))
    }

    /// `text` when it is 32 lowercase hex digits (`None` otherwise: no such snapshot can
    /// exist, which a host answers as not found).
    pub fn parse(text: &str) -> Option<Self> {
        (text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .then(|| Self(text.to_owned()))
    }

    /// The 32 digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SnapshotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SnapshotId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<SnapshotId> for String {
    fn from(id: SnapshotId) -> Self {
        id.0
    }
}

/// The metadata of a run (`POST /v1/runs`) that its snapshot keeps.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct RunMeta {
    /// The workflow the run executes, as the caller named it.
    pub workflow_id: String,
    /// Who started it.
    pub principal: String,
    /// How long after it was taken the run ends by itself.
    #[serde(rename = "ttlSeconds", with = "seconds")]
    pub ttl: Duration,
}

impl RunMeta {
    /// A run of `workflow_id` started by `principal`, ending by itself after `ttl` (whole
    /// seconds are kept).
    pub fn new(
        workflow_id: impl Into<String>,
        principal: impl Into<String>,
        ttl: Duration,
    ) -> Self {
        Self {
            workflow_id: workflow_id.into(),
            principal: principal.into(),
            ttl: Duration::from_secs(ttl.as_secs()),
        }
    }

    /// Whether a run taken at `taken` has outlived its time to live at `now`.
    pub fn expired(&self, taken: DateTime<Utc>, now: DateTime<Utc>) -> bool {
        let ttl = chrono::Duration::from_std(self.ttl).unwrap_or(chrono::Duration::MAX);
        taken.checked_add_signed(ttl).is_some_and(|end| now >= end)
    }
}

mod seconds {
    use std::time::Duration;

    pub(super) fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Duration, D::Error> {
        <u64 as serde::Deserialize>::deserialize(d).map(Duration::from_secs)
    }
}

/// What a snapshot's taker attached to it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotLabel {
    /// The snapshot is a run's.
    Run(RunMeta),
    /// Anything else, in the taker's words.
    Text(String),
}

/// How a [`SnapshotLabel::Text`] is stored when its text alone would read back as something
/// else.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapped {
    text: String,
}

impl SnapshotLabel {
    /// Free text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// The run's metadata, when the snapshot is a run's.
    pub fn run(&self) -> Option<&RunMeta> {
        match self {
            Self::Run(meta) => Some(meta),
            Self::Text(_) => None,
        }
    }

    /// Every piece of text in the label (what a secret screen looks at).
    pub fn texts(&self) -> Vec<&str> {
        match self {
            Self::Run(meta) => vec![meta.workflow_id.as_str(), meta.principal.as_str()],
            Self::Text(text) => vec![text.as_str()],
        }
    }

    /// The label as a backend stores it in one text column: a run as its JSON object, text
    /// as itself (or wrapped as `{"text": ...}` when it would read back as something else).
    /// [`SnapshotLabel::from_stored`] reads it back.
    pub fn to_stored(&self) -> String {
        match self {
            Self::Run(meta) => serde_json::to_string(meta).expect("run metadata serializes"),
            Self::Text(text) => match Self::from_stored(text) {
                Self::Text(same) if same == *text => text.clone(),
                _ => serde_json::to_string(&Wrapped { text: text.clone() })
                    .expect("a string serializes"),
            },
        }
    }

    /// The label that [`SnapshotLabel::to_stored`] wrote.
    pub fn from_stored(stored: &str) -> Self {
        if stored.starts_with('{') {
            if let Ok(meta) = serde_json::from_str::<RunMeta>(stored) {
                return Self::Run(meta);
            }
            if let Ok(Wrapped { text }) = serde_json::from_str(stored) {
                return Self::Text(text);
            }
        }
        Self::Text(stored.to_owned())
    }
}

impl From<&str> for SnapshotLabel {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<RunMeta> for SnapshotLabel {
    fn from(meta: RunMeta) -> Self {
        Self::Run(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_back_as_written() {
        let run = RunMeta::new("wf", "alice", Duration::from_secs(3600));
        let texts = [
            "",
            "run 1",
            "{",
            r#"{"text":"x"}"#,
            r#"{"workflowId":"wf","principal":"p","ttlSeconds":1}"#,
            "{\"not\": \"json\"",
        ];
        let mut labels: Vec<SnapshotLabel> =
            texts.iter().map(|t| SnapshotLabel::text(*t)).collect();
        labels.push(SnapshotLabel::Run(run));
        for label in labels {
            assert_eq!(SnapshotLabel::from_stored(&label.to_stored()), label);
        }
        assert_eq!(SnapshotLabel::text("plain").to_stored(), "plain");
    }

    #[test]
    fn runs_stored_before_typed_labels_still_read_as_runs() {
        let stored = r#"{"workflowId":"wf","principal":"p","ttlSeconds":60}"#;
        let label = SnapshotLabel::from_stored(stored);
        let meta = label.run().expect("a run");
        assert_eq!(meta.workflow_id, "wf");
        assert_eq!(meta.ttl, Duration::from_secs(60));
        assert_eq!(label.to_stored(), stored);
    }

    #[test]
    fn runs_expire_after_their_ttl() {
        let meta = RunMeta::new("wf", "p", Duration::from_secs(10));
        let t = Utc::now();
        assert!(!meta.expired(t, t + chrono::Duration::seconds(9)));
        assert!(meta.expired(t, t + chrono::Duration::seconds(10)));
        let forever = RunMeta::new("wf", "p", Duration::from_secs(u64::MAX));
        assert!(!forever.expired(t, t + chrono::Duration::days(3650)));
    }

    #[test]
    fn snapshot_ids() {
        let id = SnapshotId::new();
        assert_eq!(id.as_str().len(), 32);
        assert_ne!(id, SnapshotId::new());
        for bad in ["", "ABCDEF0123456789ABCDEF0123456789", "0123", "../etc"] {
            assert_eq!(SnapshotId::parse(bad), None, "{bad}");
        }
    }
}
