//! Integration tests of wsp-vfs, one binary: the shared vectors, the path jail on a real disk,
//! routing and scopes, the tools, overlays, write-only Workspaces that cannot be probed, the items
//! profile, publishing under a shared agent's prefix and the filesystem map.
//!
//! `bounds.rs` is a test binary of its own: it caps the process's address space and checks the
//! process's peak resident set, so no other test may share its process.

mod deny;
mod items;
mod jail;
mod map;
mod overlay;
mod publish_prefix;
mod routing;
mod support;
mod tools;
mod vectors;
mod write_only;
