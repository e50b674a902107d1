//! Credential scopes (OpenWOP's names).

use std::fmt;

/// One permission a credential can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Scope {
    /// `workspace:read`: list, read, history, events.
    WorkspaceRead,
    /// `workspace:write`: write, delete, publish.
    WorkspaceWrite,
    /// `agents:read`: the agent inventory.
    AgentsRead,
    /// `runs:create`: start runs (pin snapshots).
    RunsCreate,
    /// `runs:read`: read runs and their snapshots.
    RunsRead,
    /// `metrics:read`: the server's Prometheus metrics (`GET /metrics`), which count the
    /// requests of every tenant; it reaches no workspace data.
    MetricsRead,
}

impl Scope {
    /// Every scope, in wire order.
    pub const ALL: [Scope; 6] = [
        Self::WorkspaceRead,
        Self::WorkspaceWrite,
        Self::AgentsRead,
        Self::RunsCreate,
        Self::RunsRead,
        Self::MetricsRead,
    ];

    /// The wire name, e.g. `workspace:read`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WorkspaceRead => "workspace:read",
            Self::WorkspaceWrite => "workspace:write",
            Self::AgentsRead => "agents:read",
            Self::RunsCreate => "runs:create",
            Self::RunsRead => "runs:read",
            Self::MetricsRead => "metrics:read",
        }
    }

    /// Parses a wire name.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a scope list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown scope {0:?} (known: workspace:read, workspace:write, agents:read, runs:create, runs:read, metrics:read)"
)]
pub struct ScopeError(pub String);

/// A set of scopes.
///
/// ```
/// use wsp_types::{Scope, Scopes};
/// let s = Scopes::parse("workspace:read, agents:read").unwrap();
/// assert!(s.contains(Scope::WorkspaceRead));
/// assert!(!s.contains(Scope::WorkspaceWrite));
/// assert_eq!(s.to_string(), "workspace:read,agents:read");
/// assert!(Scopes::parse("workspace:admin").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scopes(u8);

impl Scopes {
    /// No scope at all.
    pub const NONE: Scopes = Scopes(0);

    /// Every scope.
    pub fn all() -> Self {
        Self::from_iter(Scope::ALL)
    }

    /// Every scope that reaches the key's own workspace: all but `metrics:read`, which shows
    /// figures about every tenant of the server.
    ///
    /// ```
    /// use wsp_types::{Scope, Scopes};
    /// assert!(Scopes::workspace().contains(Scope::RunsRead));
    /// assert!(!Scopes::workspace().contains(Scope::MetricsRead));
    /// assert!(Scopes::all().contains(Scope::MetricsRead));
    /// ```
    pub fn workspace() -> Self {
        Scope::ALL
            .into_iter()
            .filter(|s| *s != Scope::MetricsRead)
            .collect()
    }

    /// Parses a comma-separated list (spaces around names are ignored; empty items refused).
    pub fn parse(raw: &str) -> Result<Self, ScopeError> {
        raw.split(',')
            .map(str::trim)
            .map(|name| Scope::parse(name).ok_or_else(|| ScopeError(name.to_owned())))
            .collect()
    }

    /// Whether `scope` is in the set.
    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// The scopes in wire order.
    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        Scopes(iter.into_iter().fold(0, |acc, s| acc | s.bit()))
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Scope::as_str).collect();
        f.write_str(&names.join(","))
    }
}

impl std::str::FromStr for Scopes {
    type Err = ScopeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}
