//! The owner of workspace data: a `{tenant, workspace}` pair derived from a credential.

use std::fmt;

/// Why a string is not an [`OwnerId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("identifier must match ^[A-Za-z0-9][A-Za-z0-9._:-]{{0,127}}$")]
pub struct OwnerIdError;

/// A tenant, workspace, principal or agent identifier: `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`.
///
/// ```
/// use wsp_types::OwnerId;
/// assert!(OwnerId::parse("t-a").is_ok());
/// assert!(OwnerId::parse("agent-acme.reviewer").is_ok());
/// assert!(OwnerId::parse("").is_err());
/// assert!(OwnerId::parse("a/b").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OwnerId(String);

impl OwnerId {
    /// Validates an identifier.
    pub fn parse(raw: &str) -> Result<Self, OwnerIdError> {
        let b = raw.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 128
            && b[0].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'));
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(OwnerIdError)
        }
    }

    /// The identifier as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for OwnerId {
    type Err = OwnerIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// The storage boundary: files, runs and events belong to one `{tenant, workspace}`.
///
/// The acting principal is attribution, never a boundary, so it is not part of `Owner`.
/// An `Owner` is derived from a credential by the server; nothing a caller sends can widen it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Owner {
    /// The tenant.
    pub tenant: OwnerId,
    /// The workspace within the tenant.
    pub workspace: OwnerId,
}

impl Owner {
    /// Builds an owner from validated parts.
    pub fn new(tenant: OwnerId, workspace: OwnerId) -> Self {
        Self { tenant, workspace }
    }

    /// Parses both parts, for tests and configuration.
    pub fn parse(tenant: &str, workspace: &str) -> Result<Self, OwnerIdError> {
        Ok(Self::new(
            OwnerId::parse(tenant)?,
            OwnerId::parse(workspace)?,
        ))
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.tenant, self.workspace)
    }
}
