//! The `multipart/form-data` body of the upload form: its named parts, each with its file
//! name and bytes (RFC 7578, as browsers send it).

/// One part of a form.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) name: String,
    pub(crate) filename: Option<String>,
    pub(crate) content_type: Option<String>,
    pub(crate) body: Vec<u8>,
}

/// The boundary of a `multipart/form-data` content type.
pub(crate) fn boundary(content_type: &str) -> Option<String> {
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.eq_ignore_ascii_case("boundary")
            .then(|| v.trim_matches('"').to_owned())
            .filter(|b| !b.is_empty() && b.len() <= 70)
    })
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// A quoted parameter of a `Content-Disposition` line (`name="x"`).
fn param(line: &str, key: &str) -> Option<String> {
    let pattern = format!("{key}=\"");
    let mut at = 0;
    while let Some(i) = line[at..].find(&pattern) {
        let start = at + i;
        // `filename="` also contains `name="`: the key must start a parameter.
        let before = line[..start].trim_end();
        if before.ends_with(';') {
            let rest = &line[start + pattern.len()..];
            let end = rest.find('"')?;
            return Some(rest[..end].to_owned());
        }
        at = start + pattern.len();
    }
    None
}

/// The parts of `body`, or `None` when it is not a well-formed multipart body.
pub(crate) fn parse(body: &[u8], boundary: &str) -> Option<Vec<Part>> {
    let delimiter = format!("--{boundary}");
    let next_delimiter = format!("\r\n--{boundary}");
    let mut at = find(body, delimiter.as_bytes(), 0)? + delimiter.len();
    let mut parts = Vec::new();
    loop {
        if body.get(at..at + 2)? == b"--" {
            return Some(parts);
        }
        if body.get(at..at + 2)? != b"\r\n" {
            return None;
        }
        let headers_end = find(body, b"\r\n\r\n", at + 2)?;
        let headers = std::str::from_utf8(&body[at + 2..headers_end]).ok()?;
        let content_start = headers_end + 4;
        let content_end = find(body, next_delimiter.as_bytes(), content_start)?;
        let mut name = None;
        let mut filename = None;
        let mut content_type = None;
        for line in headers.split("\r\n") {
            let (k, v) = line.split_once(':')?;
            if k.eq_ignore_ascii_case("content-disposition") {
                name = param(v, "name");
                filename = param(v, "filename");
            } else if k.eq_ignore_ascii_case("content-type") {
                content_type = Some(v.trim().to_owned());
            }
        }
        parts.push(Part {
            name: name?,
            filename,
            content_type,
            body: body[content_start..content_end].to_vec(),
        });
        at = content_end + next_delimiter.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_form_parses() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\nabc\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a b.md\"\r\nContent-Type: text/markdown\r\n\r\n# hi\r\n\r\nthere\r\n--XyZ--\r\n";
        let ct = "multipart/form-data; boundary=XyZ";
        let parts = parse(body, &boundary(ct).unwrap()).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "csrf");
        assert_eq!(parts[0].body, b"abc");
        assert_eq!(parts[1].name, "file");
        assert_eq!(parts[1].filename.as_deref(), Some("a b.md"));
        assert_eq!(parts[1].content_type.as_deref(), Some("text/markdown"));
        assert_eq!(parts[1].body, b"# hi\r\n\r\nthere");
    }

    #[test]
    fn malformed_bodies_are_refused() {
        assert_eq!(boundary("application/x-www-form-urlencoded"), None);
        assert_eq!(
            boundary("multipart/form-data; boundary=\"q\""),
            Some("q".into())
        );
        assert!(parse(b"nothing", "b").is_none());
        assert!(
            parse(
                b"--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nunterminated",
                "b"
            )
            .is_none()
        );
        assert!(parse(b"--b\r\nX: y\r\n\r\nv\r\n--b--", "b").is_none());
        assert_eq!(parse(b"--b--", "b"), Some(vec![]));
    }
}
