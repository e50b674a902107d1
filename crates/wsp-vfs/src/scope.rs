//! Access Scopes and the operations they allow.

use serde::{Deserialize, Serialize};

/// The immutable permissions bound to a Workspace: exactly one of RO, RW, WO.
///
/// In a mount table they are written `"ro"`, `"rw"` and `"wo"`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum AccessScope {
    /// Read-Only: read, list, glob, grep.
    #[serde(rename = "ro")]
    ReadOnly,
    /// Read-Write: every operation.
    #[serde(rename = "rw")]
    ReadWrite,
    /// Write-Only: create or overwrite a file; nothing that reveals content or names.
    #[serde(rename = "wo")]
    WriteOnly,
}

/// One kind of file operation, as the scope check sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// List a directory (`ls`).
    List,
    /// Read a file's content (`read_file`).
    Read,
    /// Search names or contents (`glob`, `grep`).
    Search,
    /// Create or overwrite a whole file (`write_file`).
    Write,
    /// Change part of a file, which reads it first (`edit_file`).
    Edit,
    /// Remove a file (`delete_file`).
    Delete,
}

impl AccessScope {
    /// Whether this scope allows `op`.
    ///
    /// ```
    /// use wsp_vfs::{AccessScope, Operation};
    /// assert!(AccessScope::ReadOnly.allows(Operation::Search));
    /// assert!(!AccessScope::ReadOnly.allows(Operation::Write));
    /// assert!(AccessScope::WriteOnly.allows(Operation::Write));
    /// assert!(!AccessScope::WriteOnly.allows(Operation::Edit));
    /// ```
    pub fn allows(self, op: Operation) -> bool {
        use Operation::*;
        match self {
            Self::ReadWrite => true,
            Self::ReadOnly => matches!(op, List | Read | Search),
            Self::WriteOnly => matches!(op, Write),
        }
    }

    /// The short form used in mount tables: `ro`, `rw` or `wo`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "ro",
            Self::ReadWrite => "rw",
            Self::WriteOnly => "wo",
        }
    }

    /// The scope in words, for people and models: `read-only`, `read-write`, `write-only`.
    pub fn in_words(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::ReadWrite => "read-write",
            Self::WriteOnly => "write-only",
        }
    }
}

impl std::fmt::Display for AccessScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.in_words())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_table() {
        use AccessScope::*;
        use Operation::*;
        let ops = [List, Read, Search, Write, Edit, Delete];
        let expect: [(AccessScope, [bool; 6]); 3] = [
            (ReadOnly, [true, true, true, false, false, false]),
            (ReadWrite, [true, true, true, true, true, true]),
            (WriteOnly, [false, false, false, true, false, false]),
        ];
        for (scope, allowed) in expect {
            for (op, allow) in ops.iter().zip(allowed) {
                assert_eq!(scope.allows(*op), allow, "{scope:?} {op:?}");
            }
        }
    }
}
