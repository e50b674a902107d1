//! Wire types and validated newtypes of the wsp agent-workspace protocol.
//!
//! **Invariant:** this crate does no I/O (reading the operating system's random source for
//! [`random_hex`] aside), has no async code and knows no HTTP framework.
//! Parse, don't validate: a [`WorkspacePath`], [`OwnerId`], [`ETag`] or [`MediaType`] that exists
//! is valid.
//!
//! The structs in [`wire`] are generated from `schemas/*.schema.json` by `cargo xtask codegen`;
//! the newtypes here are written by hand.

mod content;
mod error;
mod etag;
mod ids;
mod media;
mod owner;
mod path;
mod scope;
pub mod wire;

pub use content::{Base64Error, base64_encode, body_of};
pub use error::{ErrorCode, LimitKind};
pub use etag::ETag;
pub use ids::{hex, random_hex};
pub use media::{MediaType, MediaTypeError};
pub use owner::{Owner, OwnerId, OwnerIdError};
pub use path::{MAX_PATH_LEN, PathError, WorkspacePath, WorkspacePrefix};
pub use scope::{Scope, ScopeError, Scopes};
