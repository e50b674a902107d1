//! The console over real HTTP, without a browser: sessions and their cookie, CSRF and origin
//! checks, security headers, read-only keys, conflicts, history, uploads, and tenant
//! isolation through every console URL.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{Host, start};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// One person's browser: a cookie jar of one cookie, no redirects followed.
struct Visitor<'h> {
    host: &'h Host,
    http: reqwest::Client,
    cookie: Option<String>,
}

struct Page {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Page {
    fn location(&self) -> &str {
        self.headers
            .get("location")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The value of the first hidden field `name`.
    fn field(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self
            .body
            .find(&marker)
            .unwrap_or_else(|| panic!("no field {name} in {}", self.body))
            + marker.len();
        let end = self.body[start..].find('"').unwrap() + start;
        self.body[start..end].replace("&quot;", "\"")
    }
}

impl<'h> Visitor<'h> {
    fn new(host: &'h Host) -> Self {
        Self {
            host,
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookie: None,
        }
    }

    async fn finish(&mut self, resp: reqwest::Response) -> Page {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        if let Some(set) = headers.get("set-cookie").and_then(|v| v.to_str().ok()) {
            let pair = set.split(';').next().unwrap();
            self.cookie = pair
                .split_once('=')
                .filter(|(_, v)| !v.is_empty())
                .map(|_| pair.to_owned());
        }
        let body = resp.text().await.unwrap();
        Page {
            status,
            headers,
            body,
        }
    }

    async fn get(&mut self, path: &str) -> Page {
        let mut req = self.http.get(self.host.url(path));
        if let Some(c) = &self.cookie {
            req = req.header("cookie", c);
        }
        let resp = req.send().await.unwrap();
        self.finish(resp).await
    }

    async fn post_with(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Page {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let mut req = self
            .http
            .post(self.host.url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some(c) = &self.cookie {
            req = req.header("cookie", c);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.unwrap();
        self.finish(resp).await
    }

    async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        self.post_with(path, fields, &[("sec-fetch-site", "same-origin")])
            .await
    }

    async fn sign_in(&mut self, key: &str) -> Page {
        self.post("/console/sign-in", &[("key", key)]).await
    }

    /// The CSRF token of this session (read off a page, as a form would carry it).
    async fn csrf(&mut self) -> String {
        self.get("/console/files").await.field("csrf")
    }
}

async fn signed_in<'h>(host: &'h Host, key: &str) -> Visitor<'h> {
    let mut v = Visitor::new(host);
    let page = v.sign_in(key).await;
    assert_eq!(page.status, 303, "{}", page.body);
    v
}

#[tokio::test]
async fn signing_in_sets_a_strict_http_only_cookie_and_signing_out_ends_the_session() {
    let host = start(Duration::from_secs(600)).await;
    let mut v = Visitor::new(&host);
    let root = v.get("/").await;
    assert_eq!((root.status, root.location()), (303, "/console/"));
    let page = v.get("/console/files").await;
    assert_eq!((page.status, page.location()), (303, "/console/sign-in"));
    let form = v.get("/console/sign-in").await;
    assert!(form.body.contains("type=\"password\""), "{}", form.body);

    let page = v.sign_in(&host.key_a).await;
    assert_eq!((page.status, page.location()), (303, "/console/files"));
    let cookie = page.headers["set-cookie"].to_str().unwrap().to_owned();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain HTTP here: {cookie}");
    let id = cookie.split(';').next().unwrap().split_once('=').unwrap().1;
    assert_eq!(id.len(), 64, "256 bits in hex");

    let files = v.get("/console/files").await;
    assert_eq!(files.status, 200);
    assert!(
        !files.body.contains(&host.key_a),
        "the key never reaches the page"
    );
    let csrf = files.field("csrf");
    let out = v.post("/console/sign-out", &[("csrf", &csrf)]).await;
    assert_eq!((out.status, out.location()), (303, "/console/sign-in"));
    assert!(
        out.headers["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    // The old cookie names no session any more.
    v.cookie = Some(format!("wsp_console={id}"));
    let again = v.get("/console/files").await;
    assert_eq!((again.status, again.location()), (303, "/console/sign-in"));
}

#[tokio::test]
async fn every_console_response_carries_the_security_headers() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_a, "notes/a.md", "# A").await;
    let mut v = signed_in(&host, &host.key_a).await;
    for path in [
        "/console/sign-in",
        "/console/files",
        "/console/file/notes/a.md",
        "/console/edit/notes/a.md",
        "/console/history/notes/a.md",
        "/console/runs",
        "/console/context",
        "/console/agents",
        "/console/file/notes/missing.md",
        "/console/no-such-page",
    ] {
        let page = v.get(path).await;
        let h = &page.headers;
        assert_eq!(h["content-security-policy"], CSP, "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "same-origin", "{path}");
        assert_eq!(h["cache-control"], "no-store", "{path}");
        assert!(!page.body.contains("<script>"), "{path}: no inline script");
        assert!(!page.body.contains(" style="), "{path}: no inline style");
    }
    // The assets are named by their content and kept for a year.
    let page = v.get("/console/files").await;
    for attr in ["href=\"", "src=\""] {
        let at = page.body.find(&format!("{attr}/console/assets/")).unwrap() + attr.len();
        let end = page.body[at..].find('"').unwrap() + at;
        let url = page.body[at..end].to_owned();
        let asset = v.get(&url).await;
        assert_eq!(asset.status, 200, "{url}");
        let cache = asset.headers["cache-control"].to_str().unwrap();
        assert!(cache.contains("immutable"), "{url}: {cache}");
        assert_eq!(asset.headers["content-security-policy"], CSP);
    }
}

#[tokio::test]
async fn a_wrong_key_is_refused_and_gets_no_session() {
    let host = start(Duration::from_secs(600)).await;
    let mut v = Visitor::new(&host);
    for key in ["wsp_nope_nope", "", "not a key at all"] {
        let page = v.sign_in(key).await;
        assert_eq!(page.status, 401, "{key:?}");
        assert!(page.headers.get("set-cookie").is_none());
        assert!(page.body.contains("role=\"alert\""), "{}", page.body);
    }
}

#[tokio::test]
async fn an_idle_session_expires() {
    let host = start(Duration::from_millis(300)).await;
    let mut v = signed_in(&host, &host.key_a).await;
    assert_eq!(v.get("/console/files").await.status, 200);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let page = v.get("/console/files").await;
    assert_eq!(page.status, 401);
    assert!(page.body.contains("Sign in again"), "{}", page.body);
    assert!(
        page.headers["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
}

#[tokio::test]
async fn a_revoked_key_ends_its_session() {
    use wsp_store::keys::KeyRegistry;
    let host = start(Duration::from_secs(600)).await;
    let mut v = signed_in(&host, &host.key_a).await;
    assert_eq!(v.get("/console/files").await.status, 200);
    let id = host.key_a.split('_').nth(1).unwrap();
    host.registry.revoke(id).await.unwrap();
    // Verified keys are cached for 2 s.
    tokio::time::sleep(wsp_server::KEY_CACHE_TTL + Duration::from_millis(300)).await;
    let cookie = v.cookie.clone();
    let page = v.get("/console/files").await;
    assert_eq!(page.status, 401);
    assert!(page.body.contains("no longer accepted"), "{}", page.body);
    // The session is gone, not only the cookie.
    v.cookie = cookie;
    let again = v.get("/console/files").await;
    assert_eq!((again.status, again.location()), (303, "/console/sign-in"));
}

#[tokio::test]
async fn forged_posts_are_refused_and_change_nothing() {
    let host = start(Duration::from_secs(600)).await;
    let file = host.put(&host.key_a, "a.md", "original").await;
    let etag = file["etag"].as_str().unwrap().to_owned();
    let mut v = signed_in(&host, &host.key_a).await;
    let csrf = v.csrf().await;
    let fields =
        |token: &'static str| vec![("csrf", token), ("path", "a.md"), ("content", "forged")];
    // No token, a wrong token.
    for token in ["", "0000"] {
        let mut f = fields(token);
        f.push(("etag", &etag));
        let page = v.post("/console/save", &f).await;
        assert_eq!(page.status, 403, "{token:?}: {}", page.body);
    }
    // The right token, sent by another site.
    let mut f = fields("");
    f[0].1 = &csrf;
    f.push(("etag", &etag));
    for headers in [
        vec![("sec-fetch-site", "cross-site")],
        vec![("sec-fetch-site", "same-site")],
        vec![("origin", "http://evil.example")],
        vec![("origin", "null")],
    ] {
        let page = v.post_with("/console/save", &f, &headers).await;
        assert_eq!(page.status, 403, "{headers:?}");
    }
    let delete = v
        .post_with(
            "/console/delete",
            &[("csrf", &csrf), ("path", "a.md")],
            &[("origin", "http://evil.example")],
        )
        .await;
    assert_eq!(delete.status, 403);
    let signout = v.post("/console/sign-out", &[("csrf", "x")]).await;
    assert_eq!(signout.status, 403);
    let now = host.get(&host.key_a, "a.md").await;
    assert_eq!(now["content"], "original");
    assert_eq!(now["version"], 1);
    // The same form from the console's own page is taken.
    let page = v.post("/console/save", &f).await;
    assert_eq!((page.status, page.location()), (303, "/console/file/a.md"));
}

#[tokio::test]
async fn a_read_only_key_gets_a_read_only_console() {
    let host = start(Duration::from_secs(600)).await;
    let file = host.put(&host.key_a, "notes/a.md", "# Read me").await;
    let etag = file["etag"].as_str().unwrap().to_owned();
    let mut v = signed_in(&host, &host.key_a_read).await;
    let view = v.get("/console/file/notes/a.md").await;
    assert_eq!(view.status, 200);
    assert!(view.body.contains("Read me"));
    assert!(!view.body.contains("/console/edit/"), "no edit link");
    assert!(!view.body.contains("/console/delete/"), "no delete link");
    let folder = v.get("/console/files").await;
    assert!(!folder.body.contains("/console/upload"), "no upload form");
    // A hand-made form is refused by the API, and the text is kept.
    let csrf = folder.field("csrf");
    let page = v
        .post(
            "/console/save",
            &[
                ("csrf", &csrf),
                ("path", "notes/a.md"),
                ("etag", &etag),
                ("content", "my careful edit"),
            ],
        )
        .await;
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(page.body.contains("my careful edit"), "the text is kept");
    let delete = v
        .post(
            "/console/delete",
            &[("csrf", &csrf), ("path", "notes/a.md"), ("etag", &etag)],
        )
        .await;
    assert_eq!(delete.status, 403);
    let now = host.get(&host.key_a, "notes/a.md").await;
    assert_eq!(now["version"], 1);
}

#[tokio::test]
async fn markup_in_a_file_is_rendered_inert() {
    let host = start(Duration::from_secs(600)).await;
    let payload = "# Hi\n\n<script>window.__xss=1</script>\n\n<img src=x onerror=\"window.__xss=2\">\n\n[click](javascript:window.__xss=3)\n\n<iframe src=\"https://evil.example\"></iframe>\n";
    host.put(&host.key_a, "evil.md", payload).await;
    host.put(&host.key_a, "evil.txt", payload).await;
    let mut v = signed_in(&host, &host.key_a).await;
    for path in [
        "/console/file/evil.md",
        "/console/file/evil.md?source=1",
        "/console/file/evil.txt",
        "/console/edit/evil.md",
        "/console/history/evil.md",
    ] {
        let page = v.get(path).await;
        assert_eq!(page.status, 200, "{path}");
        for live in ["<script>window", "<img", "<iframe", "href=\"javascript"] {
            assert!(
                !page.body.contains(live),
                "{path} carries {live:?}: {}",
                page.body
            );
        }
    }
    let page = v.get("/console/file/evil.md").await;
    assert!(page.body.contains("<h1>Hi</h1>"), "Markdown still renders");
    assert!(
        page.body
            .contains("&lt;script&gt;window.__xss=1&lt;/script&gt;")
    );
    let download = v.get("/console/download/evil.md").await;
    assert_eq!(download.headers["content-type"], "application/octet-stream");
    assert!(
        download.headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment")
    );
    assert_eq!(download.body, payload);
}

#[tokio::test]
async fn a_conflicting_save_shows_the_other_change_and_the_merge_saves() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_a, "plan.md", "one\ntwo\nthree\n").await;
    let mut v = signed_in(&host, &host.key_a).await;
    let editor = v.get("/console/edit/plan.md").await;
    let csrf = editor.field("csrf");
    let base = editor.field("etag");
    // Someone else saves meanwhile.
    host.put(&host.key_b, "plan.md", "unrelated tenant\n").await;
    let (status, _) = host
        .api(
            "PUT",
            "/v1/host/workspace/files/plan.md",
            &host.key_a,
            &[("if-match", &base)],
            Some(json!({ "content": "one\nTWO by bob\nthree\n" })),
        )
        .await;
    assert_eq!(status, 200);
    let conflict = v
        .post(
            "/console/save",
            &[
                ("csrf", &csrf),
                ("path", "plan.md"),
                ("etag", &base),
                ("content", "one\r\ntwo\r\nthree\r\nfour by me\r\n"),
            ],
        )
        .await;
    assert_eq!(conflict.status, 409, "{}", conflict.body);
    assert!(conflict.body.contains("TWO by bob"), "their line is shown");
    assert!(conflict.body.contains("four by me"), "my text is kept");
    let new_base = conflict.field("etag");
    assert_ne!(new_base, base);
    let saved = v
        .post(
            "/console/save",
            &[
                ("csrf", &csrf),
                ("path", "plan.md"),
                ("etag", &new_base),
                ("contentType", "text/markdown"),
                ("content", "one\r\nTWO by bob\r\nthree\r\nfour by me\r\n"),
            ],
        )
        .await;
    assert_eq!(
        (saved.status, saved.location()),
        (303, "/console/file/plan.md")
    );
    let now = host.get(&host.key_a, "plan.md").await;
    assert_eq!(now["content"], "one\nTWO by bob\nthree\nfour by me\n");
    assert_eq!(now["version"], 3);
    // Creating over an existing file is a conflict too, never an overwrite.
    let create = v
        .post(
            "/console/save",
            &[
                ("csrf", &csrf),
                ("path", "plan.md"),
                ("etag", ""),
                ("content", "x"),
            ],
        )
        .await;
    assert_eq!(create.status, 409);
}

#[tokio::test]
async fn a_file_deleted_while_edited_is_saved_again_only_when_asked() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_a, "gone.md", "before\n").await;
    let mut v = signed_in(&host, &host.key_a).await;
    let editor = v.get("/console/edit/gone.md").await;
    let csrf = editor.field("csrf");
    let base = editor.field("etag");
    let (status, _) = host
        .api(
            "DELETE",
            "/v1/host/workspace/files/gone.md",
            &host.key_a,
            &[],
            None,
        )
        .await;
    assert_eq!(status, 204);
    let conflict = v
        .post(
            "/console/save",
            &[
                ("csrf", &csrf),
                ("path", "gone.md"),
                ("etag", &base),
                ("content", "mine\n"),
            ],
        )
        .await;
    assert_eq!(conflict.status, 409);
    assert!(conflict.body.contains("deleted"), "{}", conflict.body);
    assert!(conflict.body.contains("mine"), "the text is kept");
    assert_eq!(conflict.field("etag"), "", "saving again creates the file");
    let saved = v
        .post(
            "/console/save",
            &[
                ("csrf", &csrf),
                ("path", "gone.md"),
                ("etag", ""),
                ("content", "mine\n"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303);
    let now = host.get(&host.key_a, "gone.md").await;
    assert_eq!(
        (now["content"].as_str(), now["version"].as_u64()),
        (Some("mine\n"), Some(1))
    );
}

#[tokio::test]
async fn history_diffs_two_versions_and_restores_one() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_a, "m.md", "alpha\n").await;
    host.put(&host.key_a, "m.md", "alpha\nbeta\n").await;
    host.put(&host.key_a, "m.md", "gamma\n").await;
    let mut v = signed_in(&host, &host.key_a).await;
    let history = v.get("/console/history/m.md").await;
    assert_eq!(history.status, 200);
    assert!(history.body.contains("alice"), "the author is shown");
    let diff = v.get("/console/diff/m.md?from=1&to=2").await;
    assert_eq!(diff.status, 200);
    assert!(diff.body.contains("class=\"added\""), "{}", diff.body);
    assert!(diff.body.contains("beta"));
    let csrf = history.field("csrf");
    let live_etag = history.field("etag");
    let restored = v
        .post(
            "/console/restore",
            &[
                ("csrf", &csrf),
                ("path", "m.md"),
                ("version", "1"),
                ("etag", &live_etag),
            ],
        )
        .await;
    assert_eq!(restored.status, 303, "{}", restored.body);
    let now = host.get(&host.key_a, "m.md").await;
    assert_eq!(
        (now["content"].as_str(), now["version"].as_u64()),
        (Some("alpha\n"), Some(4))
    );
    // A stale history page restores nothing.
    let stale = v
        .post(
            "/console/restore",
            &[
                ("csrf", &csrf),
                ("path", "m.md"),
                ("version", "2"),
                ("etag", &live_etag),
            ],
        )
        .await;
    assert_eq!(stale.status, 409);
}

#[tokio::test]
async fn files_are_created_uploaded_downloaded_and_deleted() {
    let host = start(Duration::from_secs(600)).await;
    let mut v = signed_in(&host, &host.key_a).await;
    let csrf = v.csrf().await;
    let created = v
        .post(
            "/console/save",
            &[
                ("csrf", &csrf),
                ("path", "knowledge/new.md"),
                ("etag", ""),
                ("content", "# New\n"),
            ],
        )
        .await;
    assert_eq!(created.location(), "/console/file/knowledge/new.md");
    let root = v.get("/console/files").await;
    assert!(root.body.contains("knowledge/"), "a folder: {}", root.body);
    let folder = v.get("/console/files?prefix=knowledge%2F").await;
    assert!(folder.body.contains("new.md"));
    let filtered = v.get("/console/files?filter=NEW").await;
    assert!(filtered.body.contains("knowledge/new.md"));
    let none = v.get("/console/files?filter=zzz").await;
    assert!(!none.body.contains("new.md"));

    // An upload of bytes that are not UTF-8.
    let bytes: Vec<u8> = vec![0, 159, 146, 150, 255, 10];
    let mut body = Vec::new();
    body.extend_from_slice(format!("--B0und\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n--B0und\r\nContent-Disposition: form-data; name=\"prefix\"\r\n\r\nknowledge/\r\n--B0und\r\nContent-Disposition: form-data; name=\"file\"; filename=\"blob.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes());
    body.extend_from_slice(&bytes);
    body.extend_from_slice(b"\r\n--B0und--\r\n");
    let resp = v
        .http
        .post(host.url("/console/upload"))
        .header("cookie", v.cookie.clone().unwrap())
        .header("content-type", "multipart/form-data; boundary=B0und")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    let download = v
        .http
        .get(host.url("/console/download/knowledge/blob.bin"))
        .header("cookie", v.cookie.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(download.bytes().await.unwrap().to_vec(), bytes);
    // The same upload again never replaces the file.
    let again = v
        .http
        .post(host.url("/console/upload"))
        .header("cookie", v.cookie.clone().unwrap())
        .header("content-type", "multipart/form-data; boundary=B0und")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);

    let confirm = v.get("/console/delete/knowledge/new.md").await;
    assert_eq!(confirm.status, 200);
    let etag = confirm.field("etag");
    let deleted = v
        .post(
            "/console/delete",
            &[
                ("csrf", &csrf),
                ("path", "knowledge/new.md"),
                ("etag", &etag),
            ],
        )
        .await;
    assert_eq!(deleted.location(), "/console/files?prefix=knowledge%2F");
    assert_eq!(v.get("/console/file/knowledge/new.md").await.status, 404);
}

#[tokio::test]
async fn runs_context_and_agents_are_shown_and_publishing_works() {
    let host = start(Duration::from_secs(600)).await;
    host.put(&host.key_main, "AGENTS.md", "# Be kind\n").await;
    host.put(&host.key_main, "shopping.md", "- eggs\n").await;
    let run = host.run(&host.key_main).await;
    host.put(&host.key_main, "AGENTS.md", "# Changed after the run\n")
        .await;
    let mut v = signed_in(&host, &host.key_main).await;
    let runs = v.get("/console/runs").await;
    assert!(runs.body.contains(&run[..12]), "{}", runs.body);
    let page = v.get(&format!("/console/runs/{run}")).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("AGENTS.md"));
    let snap = v.get(&format!("/console/runs/{run}/file/AGENTS.md")).await;
    assert!(snap.body.contains("Be kind"), "the run's version");
    let live = v.get("/console/context").await;
    assert!(live.body.contains("Changed after the run"));
    assert!(live.body.contains("Budget report"));
    let pinned = v
        .get(&format!("/console/runs/{run}/context?budget=500"))
        .await;
    assert!(pinned.body.contains("Be kind"), "{}", pinned.body);
    assert!(pinned.body.contains("value=\"500\""));
    let agents = v.get("/console/agents").await;
    assert!(agents.body.contains("acme.cook"));
    assert!(
        !agents.body.contains("acme.researcher"),
        "not approved here"
    );
    let csrf = agents.field("csrf");
    let published = v
        .post(
            "/console/publish",
            &[
                ("csrf", &csrf),
                ("path", "shopping.md"),
                ("targetAgentId", "acme.cook"),
            ],
        )
        .await;
    assert_eq!(published.status, 200, "{}", published.body);
    assert!(published.body.contains("version 1"), "{}", published.body);
    // Publishing into a private agent is the API's 403.
    let refused = v
        .post(
            "/console/publish",
            &[
                ("csrf", &csrf),
                ("path", "shopping.md"),
                ("targetAgentId", "acme.main"),
            ],
        )
        .await;
    assert_eq!(refused.status, 403);
}

#[tokio::test]
async fn the_runs_list_pages_to_older_runs() {
    let host = start(Duration::from_secs(600)).await;
    let mut ids = Vec::new();
    for _ in 0..55 {
        ids.push(host.run(&host.key_a).await);
    }
    let mut v = signed_in(&host, &host.key_a).await;
    let first = v.get("/console/runs").await;
    let oldest = &ids[0][..12];
    let newest = &ids[54][..12];
    assert!(first.body.contains(newest));
    assert!(!first.body.contains(oldest), "a page holds 50 runs");
    let marker = "href=\"/console/runs?cursor=";
    let at = first.body.find(marker).expect("a link to older runs") + "href=\"".len();
    let end = first.body[at..].find('"').unwrap() + at;
    let older = v.get(&first.body[at..end].replace("&amp;", "&")).await;
    assert_eq!(older.status, 200);
    assert!(older.body.contains(oldest), "{}", older.body);
    assert!(!older.body.contains(newest));
    assert!(!older.body.contains(marker), "the last page links nowhere");
}

/// Signed in as tenant A, every console URL aimed at tenant B's path, run and agent answers
/// what a missing one would, and no byte of B's data.
#[tokio::test]
async fn tenant_a_reaches_nothing_of_tenant_b_through_any_console_url() {
    let host = start(Duration::from_secs(600)).await;
    const SECRET: &str = "b-only-secret-4f1e";
    let b_file = host.put(&host.key_b, "private/b.md", SECRET).await;
    host.put(&host.key_b, "private/b.md", &format!("{SECRET} v2"))
        .await;
    let b_etag = b_file["etag"].as_str().unwrap().to_owned();
    let b_run = host.run(&host.key_b).await;
    host.put(&host.key_a, "mine.md", "a's own").await;
    let mut v = signed_in(&host, &host.key_a).await;
    let csrf = v.csrf().await;
    let p = "private/b.md";
    for url in [
        format!("/console/file/{p}"),
        format!("/console/file/{p}?version=1"),
        format!("/console/file/{p}?source=1"),
        format!("/console/edit/{p}"),
        format!("/console/delete/{p}"),
        format!("/console/download/{p}"),
        format!("/console/history/{p}"),
        format!("/console/diff/{p}?from=1&to=2"),
        format!("/console/runs/{b_run}"),
        format!("/console/runs/{b_run}/file/{p}"),
        format!("/console/runs/{b_run}/context"),
        format!("/console/file/..%2F..%2Ftenant-b%2F{p}"),
    ] {
        let page = v.get(&url).await;
        assert!(
            page.status == 404 || page.status == 400,
            "{url}: {} {}",
            page.status,
            page.body
        );
        assert!(!page.body.contains(SECRET), "{url} shows B's data");
    }
    for url in [
        "/console/files".to_owned(),
        "/console/files?prefix=private%2F".to_owned(),
        "/console/files?filter=b.md".to_owned(),
        "/console/runs".to_owned(),
        "/console/context".to_owned(),
        "/console/agents".to_owned(),
    ] {
        let page = v.get(&url).await;
        assert_eq!(page.status, 200, "{url}");
        for b in [SECRET, "private/b.md", &b_run[..12], "acme.researcher"] {
            assert!(!page.body.contains(b), "{url} shows B's {b}");
        }
    }
    let posts: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("/console/delete", vec![("path", p), ("etag", &b_etag)]),
        (
            "/console/restore",
            vec![("path", p), ("version", "1"), ("etag", &b_etag)],
        ),
        (
            "/console/publish",
            vec![("path", p), ("targetAgentId", "acme.researcher")],
        ),
        (
            "/console/save",
            vec![("path", p), ("etag", &b_etag), ("content", "overwrite?")],
        ),
    ];
    for (url, mut fields) in posts {
        fields.push(("csrf", &csrf));
        let page = v.post(url, &fields).await;
        assert!(page.status >= 400, "{url}: {}", page.status);
        assert!(!page.body.contains(SECRET), "{url} shows B's data");
    }
    let b_now = host.get(&host.key_b, "private/b.md").await;
    assert_eq!(b_now["version"], 2, "B's file is untouched");
    let (status, _) = host
        .api(
            "GET",
            "/v1/host/workspace/files/private/b.md",
            &host.key_a,
            &[],
            None,
        )
        .await;
    assert_eq!(
        status, 404,
        "A's save did not create a file in B's workspace"
    );
}
