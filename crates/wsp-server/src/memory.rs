//! The agent's memory over HTTP (wsp extensions, seed 003): `GET /v1/host/workspace/search`
//! (the lines of the caller's live text files that hold a query's words, best first) and
//! `POST /v1/host/workspace/memory` (one line appended to today's `memory/YYYY-MM-DD.md`).
//! Both are owner-scoped like every file endpoint: the owner comes from the credential alone.

use axum::extract::State;
use chrono::Utc;
use serde::Deserialize;
use wsp_context::{WriteError, WriteOptions, append_memory_line};
use wsp_store::search::{MAX_QUERY_CHARS, MAX_SEARCH_RESULTS};
use wsp_store::{SearchQuery, SearchQueryError};
use wsp_types::wire::{MemoryAppended, WorkspaceSearchMatch, WorkspaceSearchResults};
use wsp_types::{ErrorCode, WorkspacePrefix};

use crate::AppState;
use crate::error::WireError;
use crate::extract::{Authed, JsonBody, OrWire, Reply, WorkspaceRead, WorkspaceWrite};
use crate::fails::{self, Documented, Failure};

/// The search route.
pub(crate) const SEARCH: &str = "/v1/host/workspace/search";

/// The memory log route.
pub(crate) const MEMORY: &str = "/v1/host/workspace/memory";

/// Results of a search that gives no `limit`.
pub(crate) const DEFAULT_SEARCH_RESULTS: usize = 10;

/// The longest line `POST /v1/host/workspace/memory` appends, in characters.
pub(crate) const MAX_MEMORY_LINE_CHARS: usize = 4096;

/// What a memory line must be, exactly as the OpenAPI document says it (`minLength` 1,
/// `maxLength` 4096, a character other than a space or a tab, no CR or LF).
pub(crate) fn check_line(line: &str) -> Result<(), &'static str> {
    if line.contains(['\n', '\r']) {
        return Err("text holds a line break; append each line with its own request");
    }
    if line.chars().all(|c| c == ' ' || c == '\t') {
        return Err("text is empty or only spaces; give the line to remember");
    }
    if line.chars().count() > MAX_MEMORY_LINE_CHARS {
        return Err("text is over 4096 characters; a memory line is one short fact");
    }
    Ok(())
}

/// `?q=...&prefix=...&limit=N` of a search; `None` when `q` holds no word (nothing matches).
pub(crate) struct SearchParams(Option<SearchQuery>, String);

impl axum::extract::FromRequestParts<AppState> for SearchParams {
    type Rejection = WireError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &AppState,
    ) -> Result<Self, WireError> {
        let params = crate::request::query_params(parts.uri.query())?;
        let field = |name: &'static str, problem: String| {
            WireError::validation(problem).with_detail("field", name)
        };
        crate::request::only_params(
            &params,
            &["q", "prefix", "limit"],
            "GET /v1/host/workspace/search",
        )?;
        let Some(text) = crate::request::param(&params, "q") else {
            return Err(field("q", "q (the words to search for) is required".into()));
        };
        let prefix = match crate::request::param(&params, "prefix") {
            None => WorkspacePrefix::all(),
            Some(raw) => WorkspacePrefix::parse(raw)
                .map_err(|e| field("prefix", format!("prefix is not a workspace prefix: {e}")))?,
        };
        let limit = crate::request::bounded_param(
            &params,
            "limit",
            1..=MAX_SEARCH_RESULTS,
            DEFAULT_SEARCH_RESULTS,
        )?;
        if text.is_empty() {
            return Err(field("q", "q (the words to search for) is empty".into()));
        }
        match SearchQuery::new(text, prefix, limit) {
            Ok(query) => Ok(Self(Some(query), text.to_owned())),
            // Punctuation alone: a query no line can match, answered as one.
            Err(SearchQueryError::NoWords) if text.chars().count() <= MAX_QUERY_CHARS => {
                Ok(Self(None, text.to_owned()))
            }
            Err(e) => Err(field("q", e.to_string())),
        }
    }
}

impl fails::Fallible for SearchParams {
    fn failures() -> Vec<Failure> {
        vec![fails::BAD_QUERY]
    }
}

/// The OpenAPI operation of [`search`] and the failures of its own steps.
pub(crate) struct SearchOp;

impl Documented for SearchOp {
    const OWN: &'static [Failure] = &[fails::STORE_UNAVAILABLE];
}

/// `GET /v1/host/workspace/search?q=...` (extension): ranked lines of the caller's files.
#[utoipa::path(
    get,
    impl_for = SearchOp,
    path = SEARCH,
    tag = "workspace",
    operation_id = "searchWorkspace",
    summary = "Search the caller's files for lines holding some words (wsp extension)",
    description = "Needs `workspace:read`. The lines of the caller's live text files (under `prefix`) holding any of the words of `q`, best first: a query word matches each word of a line that starts with it, case-insensitively; a line scores 100 per distinct query word plus one per further occurrence; ties go to the later path (a newer daily log first), then the earlier line. On SQLite and PostgreSQL an index kept in each write's transaction picks the 200 best-ranked files whose lines are read (`truncated` says when more matched); the memory store reads every file. Binary files are never searched, and another tenant's or workspace's text never appears.",
    params(
        ("q" = String, Query, min_length = 1, max_length = 256, description = "The words to look for: runs of letters and digits (a query of punctuation alone matches nothing)."),
        ("prefix" = Option<String>, Query, description = "Search only the files whose path starts with this (a plain string prefix, as for the list)."),
        ("limit" = Option<u64>, Query, minimum = 1, maximum = 100, description = "Most lines to answer (default 10)."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The best matching lines.", body = ref("#/components/schemas/WorkspaceSearchResults")),
    ),
)]
pub(crate) async fn search(
    State(state): State<AppState>,
    auth: Authed<WorkspaceRead>,
    SearchParams(query, text): SearchParams,
) -> Result<Reply, WireError> {
    let Some(query) = query else {
        return Ok(Reply::json(&WorkspaceSearchResults {
            files_searched: 0,
            matches: Vec::new(),
            query: text,
            total: 0,
            truncated: false,
        }));
    };
    let found = state
        .inner
        .store
        .search(&auth.owner, &query)
        .await
        .or_wire(query.prefix().as_str())?;
    let matches = found
        .hits
        .into_iter()
        .map(|hit| WorkspaceSearchMatch {
            line: std::num::NonZeroU64::new(hit.line).unwrap_or(std::num::NonZeroU64::MIN),
            path: hit.path,
            score: i64::from(hit.score),
            snippet: hit.snippet,
        })
        .collect();
    Ok(Reply::json(&WorkspaceSearchResults {
        files_searched: found.files,
        matches,
        query: query.text().to_owned(),
        total: found.total,
        truncated: found.truncated,
    }))
}

/// The body of an append: `text`, nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AppendBody {
    text: String,
}

/// A line the log cannot take.
const BAD_LINE: Failure = fails::fail(
    ErrorCode::ValidationError,
    "`text` is empty, only spaces, holds a line break or is over 4096 characters (`details.field`)",
);
/// Other writers changed the log on every attempt.
const CONTENDED: Failure = fails::fail(
    ErrorCode::WorkspaceConflict,
    "Other writers changed today's log on every attempt; try again",
);

/// The OpenAPI operation of [`append`] and the failures of its own steps.
pub(crate) struct AppendMemoryOp;

impl Documented for AppendMemoryOp {
    const OWN: &'static [Failure] = &[
        BAD_LINE,
        CONTENDED,
        fails::FILE_TOO_LARGE,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `POST /v1/host/workspace/memory` (extension): one line to today's daily memory log.
#[utoipa::path(
    post,
    impl_for = AppendMemoryOp,
    path = MEMORY,
    tag = "workspace",
    operation_id = "appendMemory",
    summary = "Append a line to today's memory log (wsp extension)",
    description = "Needs `workspace:write`. Appends `text` (no CR or LF, not only spaces and tabs, at most 4096 characters) as one line to the caller's daily memory log `memory/YYYY-MM-DD.md` (today in UTC), creating it: a conditional write retried on conflict, so concurrent appends never lose a line and earlier lines never change. The log's new version is an ordinary file version (history, the change feed, `updatedBy` the caller). A configured secret in the line is redacted as in any write; a log that would pass `maxFileBytes` is refused (413). Not idempotent: a retried request appends again.",
    request_body(content = ref("#/components/schemas/MemoryAppend"), content_type = "application/json"),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "Appended: the log, the line's number and the version that holds it.", body = ref("#/components/schemas/MemoryAppended")),
    ),
)]
pub(crate) async fn append(
    State(state): State<AppState>,
    auth: Authed<WorkspaceWrite>,
    body: JsonBody<AppendBody>,
) -> Result<Reply, WireError> {
    let line = body.value.text;
    check_line(&line)
        .map_err(|problem| WireError::validation(problem).with_detail("field", "text"))?;
    let options = WriteOptions::default().with_author(Some(auth.principal.clone()));
    let today = Utc::now().date_naive();
    let store = state.inner.store.as_ref();
    let updated = append_memory_line(store, &auth.owner, today, &line, &options)
        .await
        .map_err(|e| match e {
            WriteError::Store(e) => WireError::from_store(e, "memory log"),
            WriteError::Invalid(why) | WriteError::Corrupt { reason: why, .. } => {
                WireError::validation(why).with_detail("field", "text")
            }
            contended => WireError::new(ErrorCode::WorkspaceConflict, contended.to_string()),
        })?;
    let file = updated.file;
    let number = file.content.lines().count() as u64;
    Ok(Reply::json(&MemoryAppended {
        etag: file.meta.etag.as_str().to_owned(),
        line: std::num::NonZeroU64::new(number).unwrap_or(std::num::NonZeroU64::MIN),
        path: file.meta.path,
        version: std::num::NonZeroU64::new(file.meta.version).unwrap_or(std::num::NonZeroU64::MIN),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document's constraints on `text` accept exactly what [`check_line`] accepts: every
    /// string of up to six characters over `a`, space, tab, LF and CR, and the length bounds.
    #[test]
    fn the_documented_line_is_the_check() {
        let doc = crate::openapi::document();
        let text = doc
            .pointer("/components/schemas/MemoryAppend/properties/text")
            .expect("MemoryAppend.text")
            .clone();
        let some = regex::Regex::new(text["pattern"].as_str().expect("pattern")).unwrap();
        let never =
            regex::Regex::new(text["not"]["pattern"].as_str().expect("not.pattern")).unwrap();
        let (min, max) = (
            text["minLength"].as_u64().unwrap(),
            text["maxLength"].as_u64().unwrap(),
        );
        let documented = |s: &str| {
            let n = s.chars().count() as u64;
            n >= min && n <= max && some.is_match(s) && !never.is_match(s)
        };
        let mut samples = vec![String::new()];
        let mut frontier = vec![String::new()];
        for _ in 0..6 {
            frontier = frontier
                .iter()
                .flat_map(|s| ['a', ' ', '\t', '\n', '\r'].map(|c| format!("{s}{c}")))
                .collect();
            samples.extend(frontier.iter().cloned());
        }
        samples.extend([
            "é".repeat(4096),
            "é".repeat(4097),
            format!("{}\n", "a".repeat(10)),
        ]);
        for s in &samples {
            assert_eq!(documented(s), check_line(s).is_ok(), "{s:?}");
        }
        assert!(samples.len() > 19_000);
    }
}
