//! `cargo xtask openapi`: `api/openapi.json` from the server's own route annotations (utoipa),
//! with our `schemas/` as the component schemas.

use crate::Result;
use crate::project::ensure_file_contents;

/// Writes (or, under `check`, verifies) `api/openapi.json`.
pub(crate) fn generate(check: bool) -> Result<()> {
    ensure_file_contents(
        "api/openapi.json",
        &wsp_server::openapi::document_text(),
        check,
        "cargo xtask openapi",
    )
}
