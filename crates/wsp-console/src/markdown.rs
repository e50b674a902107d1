//! Markdown to HTML that cannot run anything: raw HTML in a file becomes visible text, and a
//! link or image whose URL names a scheme other than http, https or mailto loses its URL.
//!
//! Leaner than a sanitizer over the output: nothing the writer emits can carry markup that
//! did not come from pulldown-cmark itself, which escapes all text and attribute values.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// Whether a link or image URL may be kept: relative, or http, https or mailto. A URL with a
/// control character or space (which browsers strip or treat loosely) is never kept.
pub(crate) fn safe_url(url: &str) -> bool {
    if url
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    {
        return false;
    }
    // A scheme is what precedes the first `:` when no `/`, `?` or `#` comes before it.
    match url.find([':', '/', '?', '#']) {
        Some(i) if url.as_bytes()[i] == b':' => {
            let scheme = url[..i].to_ascii_lowercase();
            matches!(scheme.as_str(), "http" | "https" | "mailto")
        }
        _ => true,
    }
}

/// `source` rendered as HTML.
pub(crate) fn to_html(source: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    // Depths of links and images whose tags are dropped (their text stays).
    let mut dropped_links = Vec::new();
    let mut dropped_images = Vec::new();
    let mut link_depth = 0usize;
    let mut image_depth = 0usize;
    let events = Parser::new_ext(source, options).filter_map(|event| match event {
        Event::Html(html) | Event::InlineHtml(html) => Some(Event::Text(html)),
        Event::Start(Tag::Link { dest_url, .. }) if !safe_url(&dest_url) => {
            link_depth += 1;
            dropped_links.push(link_depth);
            None
        }
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            link_depth += 1;
            Some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Link) => {
            let drop = dropped_links.last() == Some(&link_depth);
            link_depth -= 1;
            if drop {
                dropped_links.pop();
                None
            } else {
                Some(Event::End(TagEnd::Link))
            }
        }
        Event::Start(Tag::Image { dest_url, .. }) if !safe_url(&dest_url) => {
            image_depth += 1;
            dropped_images.push(image_depth);
            None
        }
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            image_depth += 1;
            Some(Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Image) => {
            let drop = dropped_images.last() == Some(&image_depth);
            image_depth -= 1;
            if drop {
                dropped_images.pop();
                None
            } else {
                Some(Event::End(TagEnd::Image))
            }
        }
        Event::InlineMath(m) | Event::DisplayMath(m) => Some(Event::Code(m)),
        other => Some(other),
    });
    let mut out = String::with_capacity(source.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expect_in: &[&str], expect_not_in: &[&str]) {
        let html = to_html(input);
        for e in expect_in {
            assert!(html.contains(e), "{input:?} -> {html:?} lacks {e:?}");
        }
        for e in expect_not_in {
            assert!(!html.contains(e), "{input:?} -> {html:?} has {e:?}");
        }
    }

    #[test]
    fn markdown_renders() {
        check(
            "# Title\n\n*a* `b`",
            &["<h1>Title</h1>", "<em>a</em>", "<code>b</code>"],
            &[],
        );
        check("[x](notes/b.md)", &["<a href=\"notes/b.md\">x</a>"], &[]);
        check(
            "[x](https://e.example/a)",
            &["href=\"https://e.example/a\""],
            &[],
        );
        check(
            "[m](mailto:a@b.example)",
            &["href=\"mailto:a@b.example\""],
            &[],
        );
    }

    #[test]
    fn raw_html_and_scripts_are_inert() {
        check(
            "<script>window.__xss=1</script>",
            &["&lt;script&gt;"],
            &["<script"],
        );
        check(
            "text <img src=x onerror=alert(1)> more",
            &["&lt;img src=x onerror=alert(1)&gt;"],
            &["<img"],
        );
        check(
            "<div onclick=\"x()\">\n\nhi\n\n</div>",
            &["&lt;div"],
            &["<div"],
        );
        check(
            "[click](javascript:alert(1))",
            &["click"],
            &["href", "javascript:alert"],
        );
        check("[c](JaVaScRiPt:alert(1))", &["c"], &["href"]);
        check("[c](<java script:x>)", &["c"], &["href"]);
        check("![a](data:text/html,hi)", &["a"], &["<img"]);
        check("<javascript:alert(1)>", &[], &["href"]);
        check(
            "[a](javascript:x) and [b](https://ok.example)",
            &["href=\"https://ok.example\">b</a>"],
            &["javascript"],
        );
        check(
            "[![i](javascript:x)](https://ok.example)",
            &["href=\"https://ok.example\">i</a>"],
            &["javascript", "<img"],
        );
    }

    #[test]
    fn urls_are_judged_by_scheme() {
        for ok in [
            "a.md",
            "/x",
            "#h",
            "?q=1",
            "https://a",
            "HTTP://a",
            "mailto:x@y",
            "a/b:c",
        ] {
            assert!(safe_url(ok), "{ok}");
        }
        for bad in [
            "javascript:x",
            "data:x",
            "vbscript:x",
            "java\tscript:x",
            "file:///etc",
            " javascript:x",
        ] {
            assert!(!safe_url(bad), "{bad}");
        }
    }
}
