//! Integration tests of wsp-vfs, one binary: the shared vectors, the path jail on a real disk,
//! routing and scopes, the tools, overlays, write-only Workspaces that cannot be probed, the items
//! profile and the filesystem map.

mod items;
mod jail;
mod map;
mod overlay;
mod routing;
mod support;
mod tools;
mod vectors;
mod write_only;
