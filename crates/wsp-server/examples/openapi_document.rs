//! Prints the server's OpenAPI 3.1 document (the exact bytes of `api/openapi.json`).
//!
//! `cargo xtask openapi` runs this, so that xtask never links the server and can regenerate
//! wire types even while the server does not compile against them yet.

fn main() {
    print!("{}", wsp_server::openapi::document_text());
}
