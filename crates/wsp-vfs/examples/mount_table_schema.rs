//! Prints the JSON Schema of the mount table (the exact bytes of
//! `schemas/config/mounts.schema.json`), generated from its Rust types with schemars.
//!
//! `cargo xtask codegen` runs this as a subprocess, so xtask never links `wsp-vfs` (nor the
//! `wsp-types` it generates).

fn main() {
    let schema = wsp_vfs::mount_table_schema();
    println!(
        "{}",
        serde_json::to_string_pretty(&schema).expect("a schema serializes")
    );
}
