//! The console's routes and handlers: each finds the session, calls the API with its key, and
//! renders the answer; every failure is answered once, as a page, by [`ConsoleError`].

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequestParts, Path, RawQuery, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use http::header::{self, HeaderName, HeaderValue};
use http::request::Parts;
use http::{HeaderMap, Method, StatusCode};
use maud::Markup;
use wsp_types::WorkspacePath;
use wsp_types::wire::{
    AgentInventory, PublishRequest, PublishResponse, Run, RunList, RunStatus, WorkspaceContext,
    WorkspaceFile, WorkspaceFileCreate, WorkspaceFileHistory, WorkspaceFileList,
};

use crate::ConsoleConfig;
use crate::api::{self, Api, enc, q};
use crate::assets::{self, Asset};
use crate::error::ConsoleError;
use crate::session::{self, Lookup, Session, Sessions};
use crate::view::{self, Draft, Entry, Signed, Watch};

/// Largest form or upload the console reads (the API's own limits decide what is stored).
const MAX_FORM_BYTES: usize = 32 * 1024 * 1024;

/// Runs on one page of the runs list.
const RUNS_PAGE: u32 = 50;

/// Largest sign-in form.
const MAX_SIGN_IN_BYTES: usize = 4096;

/// The path the sign-in check reads: any answer but 401 means the key is known.
const SIGN_IN_PROBE: &str = "/v1/host/workspace/files/console-sign-in-check";

/// The write probe of the sign-in: a conditional write that no live file can satisfy. A key
/// that may write is answered 409 (nothing is written); one that may not, 403.
const WRITE_PROBE: &str = "/v1/host/workspace/files/console-write-check";

/// The state of the console's routes.
pub(crate) struct Console {
    api: Router,
    sessions: Sessions,
    config: ConsoleConfig,
}

impl Console {
    pub(crate) fn new(api: Router, config: ConsoleConfig) -> Self {
        Self {
            api,
            sessions: Sessions::new(config.idle_timeout),
            config,
        }
    }
}

type Shared = Arc<Console>;
type Result<T, E = ConsoleError> = std::result::Result<T, E>;

/// The console's routes.
pub(crate) fn routes(console: Shared) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to("/console/") }))
        .route("/console", get(|| async { Redirect::to("/console/") }))
        .route(
            "/console/",
            get(|| async { Redirect::to("/console/files") }),
        )
        .route("/console/{*rest}", get(not_found).post(not_found))
        .route("/console/sign-in", get(sign_in_page).post(sign_in))
        .route("/console/sign-out", post(sign_out))
        .route("/console/files", get(files))
        .route("/console/file/{*path}", get(file))
        .route("/console/edit/{*path}", get(edit))
        .route("/console/new", get(new_file))
        .route("/console/save", post(save))
        .route("/console/delete/{*path}", get(confirm_delete))
        .route("/console/delete", post(delete))
        .route("/console/upload", post(upload))
        .route("/console/download/{*path}", get(download))
        .route("/console/history/{*path}", get(history))
        .route("/console/diff/{*path}", get(diff))
        .route("/console/restore", post(restore))
        .route("/console/events", get(events))
        .route("/console/runs", get(runs))
        .route("/console/runs/{run_id}", get(run))
        .route("/console/runs/{run_id}/file/{*path}", get(run_file))
        .route("/console/runs/{run_id}/context", get(run_context))
        .route("/console/context", get(context))
        .route("/console/agents", get(agents))
        .route("/console/publish", post(publish))
        .route(&assets::CSS.url, get(|| async { asset(&assets::CSS) }))
        .route(&assets::JS.url, get(|| async { asset(&assets::JS) }))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            end_refused_sessions,
        ))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(console)
}

/// The Content-Security-Policy of every console response: only this origin's script and
/// stylesheet, no inline code, no framing, forms post only here.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
    base-uri 'none'";

async fn security_headers(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: under it browsers send `Origin: null` with a same-origin form POST,
    // which would make the origin check refuse the console's own forms. `same-origin` still
    // tells no other site which console page linked to it.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    resp
}

/// Ends the session of a request answered 401: its key is no longer accepted (revoked), so
/// the key is not kept in memory until the idle timeout.
async fn end_refused_sessions(
    State(c): State<Shared>,
    req: http::Request<Body>,
    next: axum::middleware::Next,
) -> Response {
    let id = session::cookie_id(req.headers());
    let resp = next.run(req).await;
    if resp.status() == StatusCode::UNAUTHORIZED
        && let Some(id) = id
    {
        c.sessions.end(&id);
    }
    resp
}

fn asset(a: &Asset) -> Response {
    (
        [
            (header::CONTENT_TYPE, a.content_type),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        a.body,
    )
        .into_response()
}

/// An HTML page with its status.
fn html(status: StatusCode, markup: Markup) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        markup.into_string(),
    )
        .into_response()
}

/// A 303 to `to`, a path of this console. Every caller names a path the API accepted, but a
/// location that is no header value falls back to the file list rather than failing.
fn see_other(to: &str) -> Response {
    let location =
        HeaderValue::try_from(to).unwrap_or_else(|_| HeaderValue::from_static("/console/files"));
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        let status = self.status();
        if let Self::Internal(detail) = &self {
            // Never a key, a cookie or file content: what step failed.
            tracing::error!(detail = %detail, "a console page failed");
        }
        match &self {
            Self::SignedOut => see_other("/console/sign-in"),
            Self::Expired
            | Self::Api {
                status: StatusCode::UNAUTHORIZED,
                ..
            } => {
                let text = if matches!(self, Self::Expired) {
                    self.explain()
                } else {
                    "Your key is no longer accepted. Sign in again.".to_owned()
                };
                let mut resp = html(status, view::sign_in(Some(&text)));
                // Whether the cookie was Secure does not matter to its removal.
                if let Ok(v) = HeaderValue::try_from(session::clear_cookie(false)) {
                    resp.headers_mut().insert(header::SET_COOKIE, v);
                }
                resp
            }
            _ => html(
                status,
                view::page(
                    "Error",
                    None,
                    &Watch::Nothing,
                    view::message(
                        &format!(
                            "{} {}",
                            status.as_u16(),
                            status.canonical_reason().unwrap_or("")
                        ),
                        &self.explain(),
                        true,
                        ("/console/files", "Back to the files"),
                    ),
                ),
            ),
        }
    }
}

/// Whether a state-changing request comes from this console's own pages: a browser's
/// `Sec-Fetch-Site` must say `same-origin`, and an `Origin` must name the host asked.
fn same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site")
        && site.as_bytes() != b"same-origin"
    {
        return false;
    }
    match headers.get(header::ORIGIN) {
        None => true,
        Some(origin) => {
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
            let authority = origin
                .to_str()
                .ok()
                .and_then(|o| o.split_once("://"))
                .map(|(_, a)| a);
            host.is_some() && authority == host
        }
    }
}

/// A signed-in request: its session (idle clock restarted) and, for a POST, a same-origin
/// check. The CSRF token is checked where the form is read ([`Form::check`]).
struct Ctx {
    console: Shared,
    session: Session,
}

impl FromRequestParts<Shared> for Ctx {
    type Rejection = ConsoleError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, ConsoleError> {
        if parts.method != Method::GET && !same_origin(&parts.headers) {
            return Err(ConsoleError::Forbidden(
                "this request came from another site",
            ));
        }
        let id = session::cookie_id(&parts.headers).ok_or(ConsoleError::SignedOut)?;
        match state.sessions.get(&id) {
            Lookup::Live(session) => Ok(Self {
                console: state.clone(),
                session,
            }),
            Lookup::Expired => Err(ConsoleError::Expired),
            Lookup::Absent => Err(ConsoleError::SignedOut),
        }
    }
}

impl Ctx {
    fn api(&self) -> Api<'_> {
        Api {
            router: &self.console.api,
            key: &self.session.key,
        }
    }

    fn signed(&self) -> Signed<'_> {
        Signed {
            csrf: &self.session.csrf,
            can_write: self.session.can_write,
        }
    }

    fn page(&self, title: &str, watch: &Watch<'_>, body: Markup) -> Response {
        self.page_with(StatusCode::OK, title, watch, body)
    }

    fn page_with(
        &self,
        status: StatusCode,
        title: &str,
        watch: &Watch<'_>,
        body: Markup,
    ) -> Response {
        html(status, view::page(title, Some(&self.signed()), watch, body))
    }

    /// A page saying what failed, keeping the navigation (the error stays the request's).
    fn failure(&self, e: &ConsoleError, back: (&str, &str)) -> Response {
        if matches!(e.status(), StatusCode::UNAUTHORIZED) {
            return ConsoleError::Expired.into_response();
        }
        self.page_with(
            e.status(),
            "Error",
            &Watch::Nothing,
            view::message("That did not work", &e.explain(), true, back),
        )
    }
}

/// The fields of a submitted form.
struct Form(HashMap<String, String>);

impl Form {
    fn parse(body: &[u8]) -> Self {
        Self(form_urlencoded::parse(body).into_owned().collect())
    }

    async fn read(body: Body, limit: usize) -> Result<Self> {
        let bytes = axum::body::to_bytes(body, limit)
            .await
            .map_err(|_| ConsoleError::BadRequest("The form is too large.".into()))?;
        Ok(Self::parse(&bytes))
    }

    fn get(&self, name: &str) -> &str {
        self.0.get(name).map_or("", String::as_str)
    }

    fn required(&self, name: &str) -> Result<&str> {
        match self.0.get(name) {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(ConsoleError::BadRequest(format!(
                "The form lacks `{name}`."
            ))),
        }
    }

    /// The form carries the session's CSRF token.
    fn check(&self, ctx: &Ctx) -> Result<()> {
        if ctx.session.csrf_matches(self.get("csrf")) {
            Ok(())
        } else {
            Err(ConsoleError::Forbidden(
                "the form did not come from this session's page; reload it and try again",
            ))
        }
    }
}

/// The query of a URL as fields.
fn query(raw: Option<String>) -> HashMap<String, String> {
    raw.map(|r| form_urlencoded::parse(r.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

fn version_param(params: &HashMap<String, String>, name: &str) -> Result<Option<u64>> {
    match params.get(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| ConsoleError::BadRequest(format!("`{name}` must be a version number."))),
    }
}

fn file_uri(path: &str) -> String {
    format!("/v1/host/workspace/files/{}", enc(path))
}

async fn not_found(_ctx: Ctx) -> Result<Response> {
    Err(ConsoleError::Api {
        status: StatusCode::NOT_FOUND,
        code: "not_found".into(),
        message: "no such console page".into(),
    })
}

// ----- sign in and out -----

async fn sign_in_page(headers: HeaderMap, State(c): State<Shared>) -> Response {
    if let Some(id) = session::cookie_id(&headers)
        && let Lookup::Live(_) = c.sessions.get(&id)
    {
        return see_other("/console/files");
    }
    html(StatusCode::OK, view::sign_in(None))
}

async fn sign_in(State(c): State<Shared>, headers: HeaderMap, body: Body) -> Result<Response> {
    if !same_origin(&headers) {
        return Err(ConsoleError::Forbidden(
            "this request came from another site",
        ));
    }
    let form = Form::read(body, MAX_SIGN_IN_BYTES).await?;
    let key = form.get("key").trim();
    let refuse = |text: &str| Ok(html(StatusCode::UNAUTHORIZED, view::sign_in(Some(text))));
    if key.is_empty() || key.len() > 512 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return refuse("That is not an API key.");
    }
    let api = Api {
        router: &c.api,
        key,
    };
    match api.send(Method::GET, SIGN_IN_PROBE, &[], None).await {
        Err(ConsoleError::Api {
            status: StatusCode::UNAUTHORIZED,
            ..
        }) => return refuse("That key was not accepted."),
        Err(ConsoleError::Internal(_)) => return Err(ConsoleError::Internal("sign-in".into())),
        Err(ConsoleError::Api { status, .. }) if status.is_server_error() => {
            return Err(ConsoleError::Internal("sign-in".into()));
        }
        _ => {}
    }
    let probe = api
        .send(
            Method::PUT,
            WRITE_PROBE,
            &[(header::IF_MATCH, "\"console-write-check\"".to_owned())],
            Some(api::body(&WorkspaceFileCreate {
                content: String::new(),
                content_encoding: None,
                content_type: "text/markdown".to_owned(),
            })?),
        )
        .await;
    let can_write = !matches!(
        probe,
        Err(ConsoleError::Api {
            status: StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED,
            ..
        })
    );
    let id = c.sessions.start(key.to_owned(), can_write);
    let mut resp = see_other("/console/files");
    let cookie = HeaderValue::try_from(session::set_cookie(&id, c.config.secure_cookie))
        .map_err(|_| ConsoleError::Internal("cookie".into()))?;
    resp.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(resp)
}

async fn sign_out(ctx: Ctx, headers: HeaderMap, body: Body) -> Result<Response> {
    Form::read(body, MAX_SIGN_IN_BYTES).await?.check(&ctx)?;
    if let Some(id) = session::cookie_id(&headers) {
        ctx.console.sessions.end(&id);
    }
    let mut resp = see_other("/console/sign-in");
    let cookie = HeaderValue::try_from(session::clear_cookie(ctx.console.config.secure_cookie))
        .map_err(|_| ConsoleError::Internal("cookie".into()))?;
    resp.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(resp)
}

// ----- files -----

async fn files(ctx: Ctx, RawQuery(raw): RawQuery) -> Result<Response> {
    let params = query(raw);
    let prefix = params.get("prefix").map_or("", String::as_str);
    let filter = params.get("filter").map_or("", |f| f.trim());
    let uri = if prefix.is_empty() {
        "/v1/host/workspace/files".to_owned()
    } else {
        format!("/v1/host/workspace/files?prefix={}", q(prefix))
    };
    let list: WorkspaceFileList = ctx.api().get(&uri).await?;
    let needle = filter.to_lowercase();
    let mut folders: Vec<(String, usize)> = Vec::new();
    let mut entries_files = Vec::new();
    let mut matched = 0;
    for meta in &list.files {
        let path = meta.path.as_str();
        let rest = path.strip_prefix(prefix).unwrap_or(path);
        if !needle.is_empty() {
            // A filter lists every matching file below the folder, by its path from here.
            if path.to_lowercase().contains(&needle) {
                matched += 1;
                entries_files.push(Entry::File {
                    name: rest.to_owned(),
                    meta,
                });
            }
            continue;
        }
        match rest.split_once('/') {
            Some((dir, _)) => match folders.last_mut() {
                Some((last, n)) if last == dir => *n += 1,
                _ => folders.push((dir.to_owned(), 1)),
            },
            None => entries_files.push(Entry::File {
                name: rest.to_owned(),
                meta,
            }),
        }
    }
    let mut entries: Vec<Entry<'_>> = folders
        .into_iter()
        .map(|(name, files)| Entry::Folder {
            prefix: format!("{prefix}{name}/"),
            name,
            files,
        })
        .collect();
    entries.extend(entries_files);
    let title = if prefix.is_empty() { "Files" } else { prefix };
    Ok(ctx.page(
        title,
        &Watch::Folder(prefix),
        view::folder(&ctx.signed(), prefix, filter, &entries, matched),
    ))
}

async fn read_file(ctx: &Ctx, path: &str, version: Option<u64>) -> Result<WorkspaceFile> {
    let uri = match version {
        Some(v) => format!("{}?version={v}", file_uri(path)),
        None => file_uri(path),
    };
    ctx.api().get(&uri).await
}

async fn file(ctx: Ctx, Path(path): Path<String>, RawQuery(raw): RawQuery) -> Result<Response> {
    let params = query(raw);
    let source = params.contains_key("source");
    let version = version_param(&params, "version")?;
    let f = read_file(&ctx, &path, version).await?;
    if version.is_some() {
        return Ok(ctx.page(
            f.path.as_str(),
            &Watch::Nothing,
            view::old_version(&f, source),
        ));
    }
    Ok(ctx.page(
        f.path.as_str(),
        &Watch::File {
            path: f.path.as_str(),
            version: f.version.get(),
            editing: false,
        },
        view::file(&ctx.signed(), &f, source),
    ))
}

async fn edit(ctx: Ctx, Path(path): Path<String>) -> Result<Response> {
    let f = read_file(&ctx, &path, None).await?;
    if f.encoding().is_binary() {
        return Err(ConsoleError::BadRequest(
            "This file holds bytes, not text: it cannot be edited here.".into(),
        ));
    }
    let draft = Draft {
        path: f.path.as_str(),
        etag: f.etag.as_deref().unwrap_or(""),
        version: f.version.get(),
        content: &f.content,
        content_type: &f.content_type,
        new: false,
    };
    Ok(ctx.page(
        &format!("Edit {}", f.path),
        &Watch::File {
            path: f.path.as_str(),
            version: f.version.get(),
            editing: true,
        },
        view::editor(&ctx.signed(), &draft, None),
    ))
}

async fn new_file(ctx: Ctx, RawQuery(raw): RawQuery) -> Result<Response> {
    let params = query(raw);
    let prefix = params.get("prefix").map_or("", String::as_str);
    let draft = Draft {
        path: prefix,
        etag: "",
        version: 0,
        content: "",
        content_type: "",
        new: true,
    };
    Ok(ctx.page(
        "New file",
        &Watch::Nothing,
        view::editor(&ctx.signed(), &draft, None),
    ))
}

/// The media type of a new file, by its name.
fn media_type_for(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "md" | "markdown" => "text/markdown",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "pdf" => "application/pdf",
        "txt" | "log" | "" => "text/plain",
        _ => "application/octet-stream",
    }
}

/// The preconditions of a save: replace exactly `etag`, or create (`etag` empty).
fn precondition(etag: &str) -> Vec<(HeaderName, String)> {
    if etag.is_empty() {
        vec![(header::IF_NONE_MATCH, "*".to_owned())]
    } else {
        vec![(header::IF_MATCH, etag.to_owned())]
    }
}

async fn save(ctx: Ctx, body: Body) -> Result<Response> {
    let form = Form::read(body, MAX_FORM_BYTES).await?;
    form.check(&ctx)?;
    let path = form.get("path").trim().to_owned();
    let etag = form.get("etag");
    // Browsers send a textarea's line breaks as CRLF; a file keeps the ones it had.
    let content = if form.get("crlf") == "1" {
        form.get("content").to_owned()
    } else {
        form.get("content").replace("\r\n", "\n")
    };
    let content_type = match form.get("contentType") {
        "" => media_type_for(&path),
        t => t,
    };
    let new = etag.is_empty();
    let draft = |etag: &'static str| Draft {
        path: &path,
        etag,
        version: 0,
        content: &content,
        content_type,
        new,
    };
    if path.is_empty() {
        let d = draft("");
        return Ok(ctx.page_with(
            StatusCode::BAD_REQUEST,
            "New file",
            &Watch::Nothing,
            view::editor(&ctx.signed(), &d, Some("Give the file a path.")),
        ));
    }
    let answer = ctx
        .api()
        .send(
            Method::PUT,
            &file_uri(&path),
            &precondition(etag),
            Some(api::body(&WorkspaceFileCreate {
                content: content.clone(),
                content_encoding: None,
                content_type: content_type.to_owned(),
            })?),
        )
        .await;
    match answer {
        Ok(_) => Ok(see_other(&format!("/console/file/{path}"))),
        Err(ConsoleError::Api {
            status: StatusCode::CONFLICT,
            code,
            ..
        }) if code == "workspace_conflict" => {
            let theirs = match read_file(&ctx, &path, None).await {
                Ok(f) if !f.encoding().is_binary() => Some(f),
                Ok(_) => {
                    return Err(ConsoleError::BadRequest(
                        "Someone saved bytes at this path meanwhile; your text was not saved."
                            .into(),
                    ));
                }
                Err(ConsoleError::Api {
                    status: StatusCode::NOT_FOUND,
                    ..
                }) => None,
                Err(e) => return Err(e),
            };
            let base = theirs
                .as_ref()
                .and_then(|t| t.etag.clone())
                .unwrap_or_default();
            let d = Draft {
                path: &path,
                etag: &base,
                version: theirs.as_ref().map_or(0, |t| t.version.get()),
                content: &content,
                content_type,
                new: false,
            };
            let watch = Watch::File {
                path: &path,
                version: d.version,
                editing: true,
            };
            Ok(ctx.page_with(
                StatusCode::CONFLICT,
                &format!("Conflict on {path}"),
                &watch,
                view::conflict(&ctx.signed(), theirs.as_ref(), &d),
            ))
        }
        Err(e @ ConsoleError::Api { status, .. }) if status != StatusCode::UNAUTHORIZED => {
            // Refused (read-only key, bad path, too large): the text stays in the form.
            let owned_etag = etag.to_owned();
            let d = Draft {
                etag: &owned_etag,
                ..draft("")
            };
            Ok(ctx.page_with(
                status,
                "Not saved",
                &Watch::Nothing,
                view::editor(
                    &ctx.signed(),
                    &d,
                    Some(&format!("Not saved: {}", e.explain())),
                ),
            ))
        }
        Err(e) => Err(e),
    }
}

async fn confirm_delete(ctx: Ctx, Path(path): Path<String>) -> Result<Response> {
    let f = read_file(&ctx, &path, None).await?;
    Ok(ctx.page(
        &format!("Delete {}", f.path),
        &Watch::Nothing,
        view::confirm_delete(&ctx.signed(), &f),
    ))
}

async fn delete(ctx: Ctx, body: Body) -> Result<Response> {
    let form = Form::read(body, MAX_SIGN_IN_BYTES).await?;
    form.check(&ctx)?;
    let path = form.required("path")?;
    let headers = match form.get("etag") {
        "" => vec![],
        etag => vec![(header::IF_MATCH, etag.to_owned())],
    };
    let back = format!("/console/file/{path}");
    match ctx
        .api()
        .send(Method::DELETE, &file_uri(path), &headers, None)
        .await
    {
        Ok(_) => Ok(see_other(&format!(
            "/console/files?prefix={}",
            q(view::parent(path))
        ))),
        Err(ConsoleError::Api {
            status: StatusCode::CONFLICT,
            ..
        }) => Ok(ctx.page_with(
            StatusCode::CONFLICT,
            "Not deleted",
            &Watch::Nothing,
            view::message(
                "Not deleted",
                "Someone saved a new version after you asked to delete it. Look at it first.",
                true,
                (&back, "Open the file"),
            ),
        )),
        Err(e) => Ok(ctx.failure(&e, (&back, "Back to the file"))),
    }
}

async fn upload(ctx: Ctx, headers: HeaderMap, body: Body) -> Result<Response> {
    let boundary = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::multipart::boundary)
        .ok_or_else(|| ConsoleError::BadRequest("The upload is not a form with a file.".into()))?;
    let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
        .await
        .map_err(|_| ConsoleError::BadRequest("The upload is too large.".into()))?;
    let parts = crate::multipart::parse(&bytes, &boundary)
        .ok_or_else(|| ConsoleError::BadRequest("The upload could not be read.".into()))?;
    let field = |name: &str| parts.iter().find(|p| p.name == name);
    let text = |name: &str| {
        field(name)
            .map(|p| String::from_utf8_lossy(&p.body).into_owned())
            .unwrap_or_default()
    };
    let mut fields = HashMap::new();
    fields.insert("csrf".to_owned(), text("csrf"));
    Form(fields).check(&ctx)?;
    let prefix = text("prefix");
    let file = field("file")
        .filter(|p| p.filename.as_deref().is_some_and(|n| !n.is_empty()))
        .ok_or_else(|| ConsoleError::BadRequest("Choose a file to upload.".into()))?;
    let filename = file.filename.as_deref().unwrap_or_default();
    // Browsers send a bare name; some older ones sent the whole local path.
    let name = filename.rsplit(['/', '\\']).next().unwrap_or(filename);
    let path = format!("{prefix}{name}");
    let (content, encoding) = wsp_types::body_of(file.body.clone());
    let body = api::body(&WorkspaceFileCreate {
        content,
        // Left out for text, so that the body is the plain OpenWOP one.
        content_encoding: encoding.is_binary().then_some(encoding),
        content_type: media_type_for(&path).to_owned(),
    })?;
    let back = format!("/console/files?prefix={}", q(&prefix));
    match ctx
        .api()
        .send(Method::PUT, &file_uri(&path), &precondition(""), Some(body))
        .await
    {
        Ok(_) => Ok(see_other(&format!("/console/file/{path}"))),
        Err(ConsoleError::Api {
            status: StatusCode::CONFLICT,
            ..
        }) => Ok(ctx.page_with(
            StatusCode::CONFLICT,
            "Not uploaded",
            &Watch::Nothing,
            view::message(
                "Not uploaded",
                &format!(
                    "{path} already exists. Open it to edit it, or delete it first; an upload never replaces a file."
                ),
                true,
                (&back, "Back to the folder"),
            ),
        )),
        Err(e) => Ok(ctx.failure(&e, (&back, "Back to the folder"))),
    }
}

async fn download(ctx: Ctx, Path(path): Path<String>) -> Result<Response> {
    let f = read_file(&ctx, &path, None).await?;
    let bytes = f
        .bytes()
        .map_err(|_| ConsoleError::Internal("stored base64".into()))?
        .into_owned();
    let path = f.path.as_str();
    let name = path.rsplit('/').next().unwrap_or(path);
    // Paths hold only `A-Za-z0-9._-` and `/`: the name needs no quoting beyond the quotes.
    let disposition = format!("attachment; filename=\"{name}\"");
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        bytes,
    )
        .into_response())
}

// ----- history -----

async fn history(ctx: Ctx, Path(path): Path<String>) -> Result<Response> {
    let h: WorkspaceFileHistory = ctx
        .api()
        .get(&format!("/v1/host/workspace/history/{}", enc(&path)))
        .await?;
    let live_etag = h
        .versions
        .first()
        .and_then(|v| v.etag.clone())
        .unwrap_or_default();
    let live = h.versions.first().map_or(0, |v| v.version.get());
    Ok(ctx.page(
        &format!("History of {path}"),
        &Watch::File {
            path: &path,
            version: live,
            editing: false,
        },
        view::history(&ctx.signed(), &path, &live_etag, &h.versions),
    ))
}

async fn diff(ctx: Ctx, Path(path): Path<String>, RawQuery(raw): RawQuery) -> Result<Response> {
    let params = query(raw);
    let (Some(from), Some(to)) = (
        version_param(&params, "from")?,
        version_param(&params, "to")?,
    ) else {
        return Err(ConsoleError::BadRequest(
            "Choose the two versions to compare.".into(),
        ));
    };
    let a = read_file(&ctx, &path, Some(from)).await?;
    let b = read_file(&ctx, &path, Some(to)).await?;
    if a.encoding().is_binary() || b.encoding().is_binary() {
        return Err(ConsoleError::BadRequest(
            "These versions hold bytes, not text: there is no line diff.".into(),
        ));
    }
    Ok(ctx.page(
        &format!("{path}: {from} to {to}"),
        &Watch::Nothing,
        view::version_diff(&path, &a, &b),
    ))
}

async fn restore(ctx: Ctx, body: Body) -> Result<Response> {
    let form = Form::read(body, MAX_SIGN_IN_BYTES).await?;
    form.check(&ctx)?;
    let path = form.required("path")?.to_owned();
    let version = version_param(&form.0, "version")?
        .ok_or_else(|| ConsoleError::BadRequest("The form lacks `version`.".into()))?;
    let etag = form.required("etag")?;
    let back = format!("/console/history/{path}");
    let old = match read_file(&ctx, &path, Some(version)).await {
        Ok(f) => f,
        Err(e) => return Ok(ctx.failure(&e, (&back, "Back to the history"))),
    };
    let body = api::body(&WorkspaceFileCreate {
        // Named for bytes only, as the API answered it.
        content_encoding: old.content_encoding.filter(|e| e.is_binary()),
        content: old.content,
        content_type: old.content_type,
    })?;
    match ctx
        .api()
        .send(Method::PUT, &file_uri(&path), &precondition(etag), Some(body))
        .await
    {
        Ok(_) => Ok(see_other(&format!("/console/file/{path}"))),
        Err(ConsoleError::Api {
            status: StatusCode::CONFLICT,
            ..
        }) => Ok(ctx.page_with(
            StatusCode::CONFLICT,
            "Not restored",
            &Watch::Nothing,
            view::message(
                "Not restored",
                "Someone saved a new version since this history was shown: nothing was overwritten. Look at the history again.",
                true,
                (&back, "Back to the history"),
            ),
        )),
        Err(e) => Ok(ctx.failure(&e, (&back, "Back to the history"))),
    }
}

/// The change feed of the session's key, passed through: `EventSource` sends no
/// `Authorization` header, so the console adds the key it holds.
async fn events(ctx: Ctx, headers: HeaderMap) -> Result<Response> {
    let mut pass = Vec::new();
    if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
        pass.push((HeaderName::from_static("last-event-id"), last.to_owned()));
    }
    let resp = ctx
        .api()
        .raw(Method::GET, "/v1/host/workspace/events", &pass, None)
        .await?;
    if !resp.status().is_success() {
        return Ok(resp.status().into_response());
    }
    let (parts, body) = resp.into_parts();
    let mut out = Response::new(body);
    *out.status_mut() = parts.status;
    for name in [header::CONTENT_TYPE, header::CACHE_CONTROL] {
        if let Some(v) = parts.headers.get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    Ok(out)
}

// ----- runs, context, agents -----

async fn runs(ctx: Ctx, RawQuery(raw): RawQuery) -> Result<Response> {
    let params = query(raw);
    let uri = match params.get("cursor").filter(|c| !c.is_empty()) {
        Some(cursor) => format!("/v1/runs?limit={RUNS_PAGE}&cursor={}", q(cursor)),
        None => format!("/v1/runs?limit={RUNS_PAGE}"),
    };
    let list: RunList = ctx.api().get(&uri).await?;
    Ok(ctx.page(
        "Runs",
        &Watch::Nothing,
        view::runs(&list.runs, list.next_cursor.as_deref()),
    ))
}

async fn run(ctx: Ctx, Path(run_id): Path<String>) -> Result<Response> {
    let r: Run = ctx.api().get(&format!("/v1/runs/{}", enc(&run_id))).await?;
    let files = if r.status == RunStatus::Running {
        match ctx
            .api()
            .get::<WorkspaceFileList>(&format!("/v1/runs/{}/workspace/files", enc(&run_id)))
            .await
        {
            Ok(list) => Some(list.files),
            Err(ConsoleError::Api {
                status: StatusCode::NOT_FOUND,
                ..
            }) => None,
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    Ok(ctx.page(
        &format!("Run {}", r.run_id),
        &Watch::Nothing,
        view::run(&r, files.as_deref()),
    ))
}

async fn run_file(
    ctx: Ctx,
    Path((run_id, path)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let source = query(raw).contains_key("source");
    let f: WorkspaceFile = ctx
        .api()
        .get(&format!(
            "/v1/runs/{}/workspace/files/{}",
            enc(&run_id),
            enc(&path)
        ))
        .await?;
    Ok(ctx.page(
        f.path.as_str(),
        &Watch::Nothing,
        view::run_file(&run_id, &f, source),
    ))
}

fn budget_query(raw: Option<String>) -> Result<String> {
    let params = query(raw);
    Ok(match version_param(&params, "budget")? {
        Some(b) => format!("?budget={b}"),
        None => String::new(),
    })
}

async fn context(ctx: Ctx, RawQuery(raw): RawQuery) -> Result<Response> {
    let budget = budget_query(raw)?;
    let c: WorkspaceContext = ctx
        .api()
        .get(&format!("/v1/host/workspace/context{budget}"))
        .await?;
    let b = c.report.budget_tokens.get();
    Ok(ctx.page(
        "Context",
        &Watch::Nothing,
        view::context("Context an agent loads now", "/console/context", b, &c),
    ))
}

async fn run_context(
    ctx: Ctx,
    Path(run_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let budget = budget_query(raw)?;
    let c: WorkspaceContext = ctx
        .api()
        .get(&format!("/v1/runs/{}/context{budget}", enc(&run_id)))
        .await?;
    let b = c.report.budget_tokens.get();
    let action = format!("/console/runs/{run_id}/context");
    Ok(ctx.page(
        "Run context",
        &Watch::Nothing,
        view::context(&format!("Context of run {run_id}"), &action, b, &c),
    ))
}

async fn agents(ctx: Ctx, RawQuery(raw): RawQuery) -> Result<Response> {
    let path = query(raw).remove("path").unwrap_or_default();
    let list = match ctx.api().get::<AgentInventory>("/v1/agents").await {
        Ok(list) => Some(list.agents),
        Err(ConsoleError::Api {
            status: StatusCode::NOT_IMPLEMENTED,
            ..
        }) => None,
        Err(e) => return Err(e),
    };
    Ok(ctx.page(
        "Agents",
        &Watch::Nothing,
        view::agents(&ctx.signed(), list.as_deref(), &path),
    ))
}

/// The body of a publication. The paths are checked here, as the API checks them and refused
/// in its words, since a [`WorkspacePath`] holds only a valid one.
fn publish_request(path: &str, target_agent_id: &str, target_path: &str) -> Result<PublishRequest> {
    let invalid = |message: String| ConsoleError::Api {
        status: StatusCode::BAD_REQUEST,
        code: "validation_error".into(),
        message,
    };
    let path =
        WorkspacePath::parse(path).map_err(|e| invalid(format!("invalid workspace path: {e}")))?;
    let target_path = match target_path {
        "" => None,
        t => {
            Some(WorkspacePath::parse(t).map_err(|e| invalid(format!("invalid targetPath: {e}")))?)
        }
    };
    Ok(PublishRequest {
        path,
        target_agent_id: target_agent_id.to_owned(),
        target_path,
    })
}

async fn publish(ctx: Ctx, body: Body) -> Result<Response> {
    let form = Form::read(body, MAX_SIGN_IN_BYTES).await?;
    form.check(&ctx)?;
    let path = form.required("path")?.trim();
    let target_agent_id = form.required("targetAgentId")?;
    let target_path = form.get("targetPath").trim();
    let back = ("/console/agents", "Back to the agents");
    let req = match publish_request(path, target_agent_id, target_path) {
        Ok(req) => api::body(&req)?,
        Err(e) => return Ok(ctx.failure(&e, back)),
    };
    match ctx
        .api()
        .send(Method::POST, "/v1/host/workspace/publish", &[], Some(req))
        .await
    {
        Ok(answer) => {
            let p: PublishResponse = api::parse(&answer.body)?;
            Ok(ctx.page(
                "Published",
                &Watch::Nothing,
                view::message(
                    "Published",
                    &format!(
                        "{} is now version {} in the workspace of {}.",
                        p.path, p.version, p.target_agent_id
                    ),
                    false,
                    back,
                ),
            ))
        }
        Err(e) => Ok(ctx.failure(&e, back)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(headers: &[(&str, &str)], expect: bool) {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.insert(
                HeaderName::try_from(*k).unwrap(),
                HeaderValue::try_from(*v).unwrap(),
            );
        }
        assert_eq!(same_origin(&h), expect, "{headers:?}");
    }

    #[test]
    fn only_this_origin_may_post() {
        let host = ("host", "wsp.example:8787");
        check(&[host], true);
        check(&[host, ("sec-fetch-site", "same-origin")], true);
        check(&[host, ("origin", "https://wsp.example:8787")], true);
        check(&[host, ("origin", "http://wsp.example:8787")], true);
        check(&[host, ("sec-fetch-site", "same-site")], false);
        check(&[host, ("sec-fetch-site", "cross-site")], false);
        check(&[host, ("sec-fetch-site", "none")], false);
        check(&[host, ("origin", "https://evil.example")], false);
        check(&[host, ("origin", "https://wsp.example:8788")], false);
        check(&[host, ("origin", "null")], false);
        check(&[("origin", "https://wsp.example:8787")], false);
    }

    #[test]
    fn publish_paths_are_refused_as_the_api_refuses_them() {
        let req = publish_request("notes/a.md", "acme.cook", "").unwrap();
        assert_eq!(
            api::body(&req).unwrap(),
            serde_json::json!({ "path": "notes/a.md", "targetAgentId": "acme.cook" })
        );
        let req = publish_request("notes/a.md", "acme.cook", "inbox/a.md").unwrap();
        assert_eq!(
            req.target_path.as_ref().map(WorkspacePath::as_str),
            Some("inbox/a.md")
        );
        for (path, target, expect) in [
            ("", "", "invalid workspace path: path is empty"),
            (
                "../a.md",
                "",
                "invalid workspace path: path must start with an ASCII letter or digit",
            ),
            (
                "a.md",
                "a//b",
                "invalid targetPath: path has an empty, '.' or '..' component",
            ),
        ] {
            match publish_request(path, "acme.cook", target) {
                Err(ConsoleError::Api {
                    status: StatusCode::BAD_REQUEST,
                    code,
                    message,
                }) => {
                    assert_eq!(code, "validation_error");
                    assert_eq!(message, expect, "{path} {target}");
                }
                other => panic!("{path} {target}: {other:?}"),
            }
        }
    }

    #[test]
    fn new_files_get_a_media_type_by_name() {
        for (path, expect) in [
            ("a.md", "text/markdown"),
            ("A.MD", "text/markdown"),
            ("notes/x.json", "application/json"),
            ("README", "text/plain"),
            ("log.txt", "text/plain"),
            ("img.png", "image/png"),
            ("blob.bin", "application/octet-stream"),
        ] {
            assert_eq!(media_type_for(path), expect, "{path}");
        }
    }
}
