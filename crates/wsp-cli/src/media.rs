//! The media type a file is stored with when `wsp files put` or `push` sends it: from its
//! extension, by the table below; `text/plain` for other text and `application/octet-stream`
//! for other bytes. `--content-type` overrides it.
//!
//! A table of our own rather than `mime_guess`: that crate's table (about 1,500 entries, last
//! release 2024) answers wrongly for files an agent workspace holds, `.ts` as
//! `video/vnd.dlna.mpeg-tts` (TypeScript is far more likely here), `.yaml` as `text/x-yaml`
//! rather than the registered `application/yaml` (RFC 9512), `.toml` as `text/x-toml`. The
//! table below holds registered types (or, for Markdown's relatives and source code, none:
//! those are `text/plain` or `text/markdown`), and says which are bytes whatever their content.

use wsp_types::MediaType;

/// Extension (lower case) -> (media type, always sent as bytes).
const TABLE: &[(&str, &str, bool)] = &[
    ("md", "text/markdown", false),
    ("markdown", "text/markdown", false),
    ("mdx", "text/markdown", false),
    ("txt", "text/plain", false),
    ("text", "text/plain", false),
    ("log", "text/plain", false),
    ("csv", "text/csv", false),
    ("tsv", "text/tab-separated-values", false),
    ("html", "text/html", false),
    ("htm", "text/html", false),
    ("css", "text/css", false),
    ("js", "text/javascript", false),
    ("mjs", "text/javascript", false),
    ("cjs", "text/javascript", false),
    ("json", "application/json", false),
    ("yaml", "application/yaml", false),
    ("yml", "application/yaml", false),
    ("toml", "application/toml", false),
    ("xml", "application/xml", false),
    ("svg", "image/svg+xml", false),
    ("ics", "text/calendar", false),
    ("png", "image/png", true),
    ("jpg", "image/jpeg", true),
    ("jpeg", "image/jpeg", true),
    ("gif", "image/gif", true),
    ("webp", "image/webp", true),
    ("avif", "image/avif", true),
    ("ico", "image/vnd.microsoft.icon", true),
    ("pdf", "application/pdf", true),
    ("zip", "application/zip", true),
    ("gz", "application/gzip", true),
    ("wasm", "application/wasm", true),
    ("mp3", "audio/mpeg", true),
    ("wav", "audio/wav", true),
    ("mp4", "video/mp4", true),
    ("woff2", "font/woff2", true),
];

/// How a file goes: its media type, and whether its content goes as bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// The media type to store.
    pub media_type: String,
    /// Send as bytes (`contentEncoding: base64`) even when the content is UTF-8.
    pub bytes: bool,
}

/// The `--content-type EXT=TYPE` overrides of `wsp files push`.
#[derive(Debug, Clone, Default)]
pub struct Overrides(Vec<(String, MediaType)>);

impl Overrides {
    /// Parses `EXT=TYPE` values (the extension without its dot, any case; the type checked).
    pub fn parse(values: &[String]) -> Result<Self, String> {
        let mut out = Vec::new();
        for value in values {
            let Some((ext, media)) = value.split_once('=') else {
                return Err(format!(
                    "--content-type {value:?}: give EXT=TYPE, e.g. --content-type ts=text/plain"
                ));
            };
            let ext = ext.trim_start_matches('.').to_ascii_lowercase();
            if ext.is_empty() || ext.contains('/') {
                return Err(format!(
                    "--content-type {value:?}: {ext:?} is not an extension"
                ));
            }
            let media =
                MediaType::parse(media).map_err(|e| format!("--content-type {value:?}: {e}"))?;
            out.push((ext, media));
        }
        Ok(Self(out))
    }
}

/// The extension of the last component of `path`, lower case (`None` for `Makefile` or
/// `.profile`).
fn extension(path: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty() && !ext.is_empty()).then(|| ext.to_ascii_lowercase())
}

/// How the file at `path` (a workspace or local path; only its name counts) whose content is
/// UTF-8 text or not (`text`) goes: an override for its extension, the table, or `text/plain`
/// / `application/octet-stream`.
pub fn kind_of(path: &str, text: bool, overrides: &Overrides) -> Kind {
    let ext = extension(path);
    if let Some(ext) = &ext
        && let Some((_, media)) = overrides.0.iter().rev().find(|(e, _)| e == ext)
    {
        return Kind {
            media_type: media.as_str().to_owned(),
            bytes: !text,
        };
    }
    if let Some(ext) = &ext
        && let Some((_, media, bytes)) = TABLE.iter().find(|(e, _, _)| e == ext)
    {
        return Kind {
            media_type: (*media).to_owned(),
            bytes: *bytes || !text,
        };
    }
    Kind {
        media_type: if text {
            "text/plain"
        } else {
            "application/octet-stream"
        }
        .to_owned(),
        bytes: !text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_picks_the_type() {
        let none = Overrides::default();
        let kind = |p: &str, text: bool| kind_of(p, text, &none);
        assert_eq!(kind("notes/plan.md", true).media_type, "text/markdown");
        assert_eq!(kind("README.MD", true).media_type, "text/markdown");
        assert_eq!(kind("config/app.yaml", true).media_type, "application/yaml");
        assert_eq!(kind("data.json", true).media_type, "application/json");
        assert_eq!(kind("src/main.ts", true).media_type, "text/plain");
        assert_eq!(kind("Makefile", true).media_type, "text/plain");
        assert_eq!(kind("notes/.profile", true).media_type, "text/plain");
        assert_eq!(
            kind("blob", false),
            Kind {
                media_type: "application/octet-stream".into(),
                bytes: true
            }
        );
        // A PNG goes as bytes even when its few bytes happen to be UTF-8.
        assert!(kind("img/dot.png", true).bytes);
        assert_eq!(kind("img/dot.png", true).media_type, "image/png");
        // Markdown that is not UTF-8 still says it is Markdown, and goes as bytes.
        assert_eq!(
            kind("old.md", false),
            Kind {
                media_type: "text/markdown".into(),
                bytes: true
            }
        );
    }

    #[test]
    fn overrides_win_and_are_checked() {
        let o = Overrides::parse(&["TS=application/typescript".into(), ".md=text/x-md".into()])
            .unwrap();
        assert_eq!(
            kind_of("a/b.ts", true, &o).media_type,
            "application/typescript"
        );
        assert_eq!(kind_of("b.md", true, &o).media_type, "text/x-md");
        assert!(Overrides::parse(&["md".into()]).is_err());
        assert!(Overrides::parse(&["md=not a type".into()]).is_err());
        assert!(Overrides::parse(&["=text/plain".into()]).is_err());
    }
}
