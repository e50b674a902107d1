//! The stylesheet and the script, compiled into the binary and served under names that hold
//! a hash of their content, so a browser may keep them for a year.

use std::sync::LazyLock;

use sha2::{Digest, Sha256};

/// One compiled-in file.
pub(crate) struct Asset {
    /// The URL path it is served at (`/console/assets/console-<hash>.css`).
    pub(crate) url: String,
    pub(crate) body: &'static str,
    pub(crate) content_type: &'static str,
}

fn asset(stem: &str, ext: &str, body: &'static str, content_type: &'static str) -> Asset {
    let hash = Sha256::digest(body.as_bytes());
    let short = wsp_types::hex(&hash[..8]);
    Asset {
        url: format!("/console/assets/{stem}-{short}.{ext}"),
        body,
        content_type,
    }
}

/// The stylesheet.
pub(crate) static CSS: LazyLock<Asset> = LazyLock::new(|| {
    asset(
        "console",
        "css",
        include_str!("../assets/console.css"),
        "text/css; charset=utf-8",
    )
});

/// The live-notice script.
pub(crate) static JS: LazyLock<Asset> = LazyLock::new(|| {
    asset(
        "console",
        "js",
        include_str!("../assets/console.js"),
        "text/javascript; charset=utf-8",
    )
});
