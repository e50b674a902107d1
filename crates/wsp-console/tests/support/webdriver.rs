//! A small W3C WebDriver client over reqwest: the commands the browser tests use, against the
//! chromedriver that `cargo xtask console` starts (its URL in `WSP_WEBDRIVER_URL`).

#![allow(dead_code, missing_docs)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The key under which WebDriver names an element.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    http: reqwest::Client,
    session: String,
    /// Whether the session was ended by [`Browser::quit`] (else `Drop` ends it).
    ended: bool,
}

/// Where screenshots go: `target/console/` of the workspace.
pub fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("console")
}

impl Browser {
    /// A new headless Chromium session. Fails, saying why, when no WebDriver is reachable:
    /// a browser test never passes without a browser.
    pub async fn start() -> Self {
        let url = std::env::var("WSP_WEBDRIVER_URL").unwrap_or_else(|_| {
            panic!(
                "WSP_WEBDRIVER_URL is not set: these tests need a browser. Run `cargo xtask console`, \
                 which installs chromium and chromium-driver when missing, starts chromedriver and \
                 runs them."
            )
        });
        let binary = std::env::var("WSP_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let http = reqwest::Client::new();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": binary,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,900", "--no-first-run", "--disable-extensions"]
            }
        }}});
        let resp = http
            .post(format!("{url}/session"))
            .json(&caps)
            .send()
            .await
            .unwrap_or_else(|e| panic!("no WebDriver at {url} ({e}): run `cargo xtask console`"));
        let body: Value = resp.json().await.expect("a WebDriver answer");
        let session = body["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("the browser did not start: {body}"))
            .to_owned();
        Self {
            http,
            session: format!("{url}/session/{session}"),
            ended: false,
        }
    }

    async fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, Value> {
        let url = format!("{}{path}", self.session);
        let req = self.http.request(method.parse().unwrap(), &url);
        let req = match body {
            Some(b) => req.json(&b),
            None if method == "POST" => req.json(&json!({})),
            None => req,
        };
        let resp = req.send().await.expect("the WebDriver answers");
        let ok = resp.status().is_success();
        let value = resp.json::<Value>().await.expect("JSON")["value"].clone();
        if ok { Ok(value) } else { Err(value) }
    }

    async fn must(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.cmd(method, path, body.clone())
            .await
            .unwrap_or_else(|e| panic!("{method} {path} {body:?}: {e}"))
    }

    pub async fn goto(&self, url: &str) {
        self.must("POST", "/url", Some(json!({ "url": url }))).await;
    }

    pub async fn url(&self) -> String {
        self.must("GET", "/url", None)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn element(&self, css: &str) -> Result<String, Value> {
        let v = self
            .cmd(
                "POST",
                "/element",
                Some(json!({ "using": "css selector", "value": css })),
            )
            .await?;
        Ok(v[ELEMENT].as_str().unwrap().to_owned())
    }

    /// The element `css` names, waiting up to 5 s for it.
    pub async fn find(&self, css: &str) -> String {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            match self.element(css).await {
                Ok(id) => return id,
                Err(e) if Instant::now() > until => panic!("no element {css}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    pub async fn has(&self, css: &str) -> bool {
        self.element(css).await.is_ok()
    }

    pub async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.must("POST", &format!("/element/{id}/click"), None)
            .await;
    }

    /// Replaces the value of the field `css` with `text`, typed as keys.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.must("POST", &format!("/element/{id}/clear"), None)
            .await;
        self.must(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// Sets a field's value at once (long texts, where typing key by key is slow).
    pub async fn set_value(&self, css: &str, text: &str) {
        self.script(
            "document.querySelector(arguments[0]).value = arguments[1];",
            json!([css, text]),
        )
        .await;
    }

    /// Presses Enter with the focus on the element `css`, as a keyboard user does.
    pub async fn press_enter(&self, css: &str) {
        let id = self.find(css).await;
        self.must(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": "\u{E007}" })),
        )
        .await;
    }

    /// The names of the page's form controls that have no label (a `<label for>`, or an
    /// `aria-label`), and of its buttons and links that have no text.
    pub async fn unlabelled(&self) -> Value {
        self.script(
            "const controls = [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
               .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
               .map(e => e.name || e.id || e.outerHTML);
             const named = [...document.querySelectorAll('button, a')]
               .filter(e => !e.textContent.trim() && !e.getAttribute('aria-label'))
               .map(e => e.outerHTML);
             return controls.concat(named);",
            json!([]),
        )
        .await
    }

    pub async fn text(&self, css: &str) -> String {
        let id = self.find(css).await;
        self.must("GET", &format!("/element/{id}/text"), None)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub async fn source(&self) -> String {
        self.must("GET", "/source", None)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub async fn script(&self, script: &str, args: Value) -> Value {
        self.must(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
        .await
    }

    /// Waits up to `secs` for `script` to return true.
    pub async fn wait_for(&self, script: &str, secs: u64) -> bool {
        let until = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < until {
            if self.script(script, json!([])).await == json!(true) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// The text of an open alert, if one is open.
    pub async fn alert(&self) -> Option<String> {
        self.cmd("GET", "/alert/text", None)
            .await
            .ok()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
    }

    pub async fn window_size(&self, width: u32, height: u32) {
        self.must(
            "POST",
            "/window/rect",
            Some(json!({ "width": width, "height": height })),
        )
        .await;
    }

    /// Saves a PNG of the page as `target/console/<name>.png`.
    pub async fn screenshot(&self, name: &str) {
        let b64 = self.must("GET", "/screenshot", None).await;
        let bytes = wsp_types::wire::ContentEncoding::Base64
            .decode(b64.as_str().unwrap())
            .expect("a PNG in base64")
            .into_owned();
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), bytes).unwrap();
    }

    pub async fn quit(mut self) {
        let _ = self.http.delete(&self.session).send().await;
        self.ended = true;
    }
}

impl Drop for Browser {
    /// A test that failed before [`Browser::quit`] still closes its browser: a blocking
    /// `DELETE` of the session (Drop cannot await), so no Chromium outlives the test run.
    fn drop(&mut self) {
        use std::io::{Read, Write};
        if self.ended {
            return;
        }
        let Some(rest) = self.session.strip_prefix("http://") else {
            return;
        };
        let Some((authority, path)) = rest.split_once('/') else {
            return;
        };
        let Ok(mut tcp) = std::net::TcpStream::connect(authority) else {
            return;
        };
        let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
        let request = format!(
            "DELETE /{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        if tcp.write_all(request.as_bytes()).is_ok() {
            // The answer comes once the browser has quit.
            let _ = tcp.read_to_end(&mut Vec::new());
        }
    }
}
