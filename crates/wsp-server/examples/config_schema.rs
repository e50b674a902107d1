//! Prints the JSON Schema of `wsp serve`'s configuration file (the exact bytes of
//! `schemas/config/wsp.schema.json`), generated from its Rust types with schemars.
//!
//! `cargo xtask codegen` runs this, as it runs `openapi_document`, so that xtask never links
//! the server.

fn main() {
    print!("{}", wsp_server::config_file::json_schema_text());
}
