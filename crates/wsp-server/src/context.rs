//! The run-start context over HTTP (wsp extensions, seed 003): `GET /v1/host/workspace/context`
//! (from the caller's live workspace) and `GET /v1/runs/{runId}/context` (from a run's
//! snapshot, what the run sees), rendered by `wsp-context` within `?budget=N` tokens. JSON
//! (`{text, report}`) by default, the text alone with `Accept: text/plain`.

use axum::extract::State;
use axum::http::HeaderValue;
use axum::http::header::ACCEPT;
use wsp_context::{ContextConfig, DEFAULT_BUDGET_TOKENS, SessionContext, StoreSource, assemble};
use wsp_store::StoreError;

use crate::AppState;
use crate::error::WireError;
use crate::extract::{Authed, Reply, RunId, RunsRead, WorkspaceRead};
use crate::fails::{self, Documented, Failure};

/// The live workspace's context.
pub(crate) const LIVE: &str = "/v1/host/workspace/context";

/// A run's context.
pub(crate) const RUN: &str = "/v1/runs/{runId}/context";

/// The largest budget rendered, in tokens (a bound on the work one request can ask for).
pub(crate) const MAX_BUDGET: usize = 1_000_000;

/// `?budget=N&session=ID` and the form of the answer (`Accept`).
pub(crate) struct ContextParams {
    budget: usize,
    strict: bool,
    session: Option<String>,
    text: bool,
}

impl axum::extract::FromRequestParts<AppState> for ContextParams {
    type Rejection = WireError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &AppState,
    ) -> Result<Self, WireError> {
        let params = crate::request::query_params(parts.uri.query())?;
        crate::request::only_params(&params, &["budget", "strict", "session"], "the context")?;
        let strict = match crate::request::param(&params, "strict") {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                return Err(WireError::validation("strict must be true or false")
                    .with_detail("field", "strict"));
            }
        };
        let session = match crate::request::param(&params, "session") {
            None => None,
            Some(id) if wsp_context::is_session_id(id) => Some(id.to_owned()),
            Some(_) => {
                return Err(WireError::validation(
                    "session must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit",
                )
                .with_detail("field", "session"));
            }
        };
        let budget = crate::request::bounded_param(
            &params,
            "budget",
            1..=MAX_BUDGET,
            DEFAULT_BUDGET_TOKENS,
        )?;
        Ok(Self {
            budget,
            strict,
            session,
            text: wants_text(parts.headers.get(ACCEPT)),
        })
    }
}

impl fails::Fallible for ContextParams {
    fn failures() -> Vec<Failure> {
        vec![fails::BAD_QUERY]
    }
}

/// Whether `Accept` asks for `text/plain` rather than JSON: it names `text/plain` and not
/// `application/json` (either may carry parameters).
fn wants_text(accept: Option<&HeaderValue>) -> bool {
    let Some(accept) = accept.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let ranges: Vec<String> = accept
        .split(',')
        .map(|r| {
            r.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    ranges.iter().any(|r| r == "text/plain") && !ranges.iter().any(|r| r == "application/json")
}

/// Renders `source` within the budget and answers in the form asked for.
async fn render(source: &StoreSource, params: &ContextParams) -> Result<Reply, WireError> {
    let config = ContextConfig::new(params.budget)
        .with_strict_budget(params.strict)
        .with_guidance(true)
        .with_session(Some(
            SessionContext::today().with_session_id(params.session.clone()),
        ));
    let ctx = assemble(source, &config)
        .await
        .map_err(|e| WireError::from_store(StoreError::unavailable(e.to_string()), "context"))?;
    if params.text {
        return Ok(Reply::with_type(
            HeaderValue::from_static("text/plain; charset=utf-8"),
            ctx.text,
        ));
    }
    Ok(Reply::json(&serde_json::json!({
        "text": ctx.text,
        "report": ctx.report,
    })))
}

/// The OpenAPI operation of [`live`] and the failures of its own steps.
pub(crate) struct LiveContextOp;

impl Documented for LiveContextOp {
    const OWN: &'static [Failure] = &[fails::STORE_UNAVAILABLE];
}

/// `GET /v1/host/workspace/context?budget=N` (extension).
#[utoipa::path(
    get,
    impl_for = LiveContextOp,
    path = LIVE,
    tag = "workspace",
    operation_id = "getWorkspaceContext",
    summary = "The run-start context of the caller's workspace (wsp extension)",
    description = "Needs `workspace:read`. What an agent loads before a turn (seed 003): a `## Session Context` (today's date in UTC, the workspace, `session` when given) and `## Workspace guidance`, then `AGENTS.md`, `MEMORY.md` (and `MEMORY-INDEX.json` when present), `knowledge/KNOWLEDGE.md`, a listing of `knowledge/`, and an index of `skills/*/SKILL.md` and `subagents/*.md`, each in a block marked as file data, within `budget` tokens (characters / 4) that the text does not exceed unless `AGENTS.md` alone is larger (seed 003 never cuts it: it is then loaded in full, everything else cut to its marker, the text opens with `[OVER BUDGET: ...]` and the report says `overBudget`; `strict=true` keeps the budget even then); every cut is marked in the text with the path to read, and the report lists what was included, truncated, omitted, missing or skipped. JSON by default; `Accept: text/plain` answers the text alone.",
    params(
        ("budget" = Option<u64>, Query, minimum = 1, maximum = 1000000, description = "The most tokens the text may take (default 8000)."),
        ("strict" = Option<bool>, Query, description = "`true`: never exceed the budget, even to load `AGENTS.md` in full (by default `AGENTS.md` is never cut: alone over the budget, it is loaded anyway and the report says `overBudget`)."),
        ("session" = Option<String>, Query, pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$", description = "The session's id, shown in the `## Session Context` that opens the text."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The context and its report (or, with `Accept: text/plain`, the text).",
            content(
                (ref("#/components/schemas/WorkspaceContext") = "application/json"),
                (String = "text/plain"),
            )),
    ),
)]
pub(crate) async fn live(
    State(state): State<AppState>,
    auth: Authed<WorkspaceRead>,
    params: ContextParams,
) -> Result<Reply, WireError> {
    let source = StoreSource::live(state.inner.store.clone(), auth.owner.clone());
    render(&source, &params).await
}

/// The OpenAPI operation of [`run`] and the failures of its own steps.
pub(crate) struct RunContextOp;

impl Documented for RunContextOp {
    const OWN: &'static [Failure] = &[
        crate::runs::RUN_NOT_RUNNING,
        fails::NO_SNAPSHOTS,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `GET /v1/runs/{runId}/context?budget=N` (extension).
#[utoipa::path(
    get,
    impl_for = RunContextOp,
    path = RUN,
    tag = "runs",
    operation_id = "getRunContext",
    summary = "The run-start context as a run sees it (wsp extension)",
    description = "Needs `runs:read`. The context of `GET /v1/host/workspace/context`, read from the run's snapshot: the files as they were when the run started, whatever has been written since; 404 once the run has ended.",
    params(
        ("runId" = String, Path, description = "The run id."),
        ("budget" = Option<u64>, Query, minimum = 1, maximum = 1000000, description = "The most tokens the text may take (default 8000)."),
        ("strict" = Option<bool>, Query, description = "`true`: never exceed the budget, even to load `AGENTS.md` in full (by default `AGENTS.md` is never cut: alone over the budget, it is loaded anyway and the report says `overBudget`)."),
        ("session" = Option<String>, Query, pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$", description = "The session's id, shown in the `## Session Context` that opens the text."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The context and its report (or, with `Accept: text/plain`, the text).",
            content(
                (ref("#/components/schemas/WorkspaceContext") = "application/json"),
                (String = "text/plain"),
            )),
    ),
)]
pub(crate) async fn run(
    State(state): State<AppState>,
    auth: Authed<RunsRead>,
    RunId(id): RunId,
    params: ContextParams,
) -> Result<Reply, WireError> {
    let (info, _) = crate::runs::load(&state, &auth.owner, &id).await?;
    if info.released.is_some() {
        return Err(crate::runs::run_not_found(id.as_str()));
    }
    let source = StoreSource::at_snapshot(state.inner.store.clone(), auth.owner.clone(), info.id);
    render(&source, &params).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_only_when_asked_for_and_json_is_not() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        assert!(wants_text(Some(&v("text/plain"))));
        assert!(wants_text(Some(&v("Text/Plain; charset=utf-8"))));
        assert!(!wants_text(Some(&v("application/json"))));
        assert!(!wants_text(Some(&v("text/plain, application/json"))));
        assert!(!wants_text(Some(&v("*/*"))));
        assert!(!wants_text(None));
    }
}
