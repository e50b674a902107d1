//! Runs (RFC 0059 §D, WIRE.md §6): a run is a pinned, immutable snapshot of the caller's
//! workspace for an agent loop that runs elsewhere.
//!
//! Runs are bounded per workspace: at most [`ServerConfig::max_open_runs`](crate::ServerConfig)
//! open, and while the open ones keep more than `max_pinned_bytes` of old versions from
//! pruning, no new one starts (429 `rate_limited`). Without the bounds, a run between every
//! two writes would keep every version whatever `maxVersions` says.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use wsp_store::{
    QuotaExceeded, RunMeta, SnapshotCursor, SnapshotId, SnapshotInfo, SnapshotLabel, SnapshotQuota,
    StoreError,
};
use wsp_types::wire::{
    Run, RunCreate, RunCreated, RunList, RunOwner, RunStatus, RunSummary, RunWorkspaceEntry,
};
use wsp_types::{ErrorCode, Owner, WorkspacePrefix};

use crate::auth::Caller;
use crate::error::WireError;
use crate::extract::{
    Authed, JsonBody, ListPrefix, OrWire, Reply, RunId, RunsCreate, RunsRead, SmallLimit, WsPath,
};
use crate::fails::{self, Documented, Failure};
use crate::{AppState, encode};

/// Where a run's status is read (`{RUNS}{runId}`).
const RUNS: &str = "/v1/runs/";

/// 404 for run `id` (as the caller sent it).
pub(crate) fn run_not_found(id: &str) -> WireError {
    WireError::new(ErrorCode::NotFound, format!("no run {id:?}"))
}

/// Reads a run, ending it first when its time to live has passed.
pub(crate) async fn load(
    state: &AppState,
    owner: &Owner,
    id: &SnapshotId,
) -> Result<(SnapshotInfo, RunMeta), WireError> {
    let store = &state.inner.store;
    let mut info = store
        .snapshot_info(owner, id)
        .await
        .map_err(|e| map(e, id))?;
    // A snapshot that is not a run's is no run.
    let meta = info
        .label
        .run()
        .cloned()
        .ok_or_else(|| run_not_found(id.as_str()))?;
    if info.released.is_none() && meta.expired(info.created_at, Utc::now()) {
        info = store
            .release_snapshot(owner, id, "completed")
            .await
            .map_err(|e| map(e, id))?;
    }
    Ok((info, meta))
}

/// Open runs looked at per store call while sweeping.
const SWEEP_PAGE: usize = 500;

/// What one [`sweep_runs`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunSweep {
    /// Runs past their time to live that it ended (`completed`).
    pub ended: usize,
    /// Records of runs (released snapshots) that ended longer ago than the retention, now
    /// forgotten.
    pub forgotten: usize,
}

/// Ends (`completed`) every run of every owner whose time to live has passed, then forgets the
/// runs that ended longer ago than `ended_run_retention`. Snapshots that are not runs are never
/// ended here. A store that cannot list open snapshots answers [`StoreError::Unsupported`]; its
/// runs still end when next read.
///
/// [`crate::serve`] runs this periodically; a host serving [`crate::router`] itself calls it.
pub async fn sweep_runs(state: &AppState) -> Result<RunSweep, StoreError> {
    let store = &state.inner.store;
    let now = Utc::now();
    let mut sweep = RunSweep::default();
    loop {
        let page = store.open_snapshots_before(now, SWEEP_PAGE).await?;
        let full = page.len() == SWEEP_PAGE;
        let mut all_ended = true;
        for (owner, info) in page {
            let Some(meta) = info.label.run() else {
                all_ended = false;
                continue;
            };
            if !meta.expired(info.created_at, now) {
                all_ended = false;
                continue;
            }
            match store.release_snapshot(&owner, &info.id, "completed").await {
                // Ended here, or by a reader or another replica in the meantime.
                Ok(_) | Err(StoreError::NotFound) => sweep.ended += 1,
                Err(e) => return Err(e),
            }
        }
        // The oldest come first: a page that ended everything may hide more behind it.
        if !(full && all_ended) {
            break;
        }
    }
    let retention = chrono::Duration::from_std(state.inner.config.ended_run_retention)
        .unwrap_or(chrono::Duration::MAX);
    if let Some(cutoff) = now.checked_sub_signed(retention) {
        loop {
            let n = match store.forget_released_snapshots(cutoff, SWEEP_PAGE).await {
                Ok(n) => n,
                // A store that keeps every record still gets its expired runs ended.
                Err(StoreError::Unsupported(_)) => break,
                Err(e) => return Err(e),
            };
            sweep.forgotten += n;
            if n < SWEEP_PAGE {
                break;
            }
        }
    }
    Ok(sweep)
}

/// How often [`crate::serve`] sweeps runs: a quarter of the time to live, between
/// one second and one minute.
pub(crate) fn sweep_interval(run_ttl: std::time::Duration) -> std::time::Duration {
    (run_ttl / 4).clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(60),
    )
}

/// Sweeps runs every [`sweep_interval`] until the task is dropped; stops for good on a store
/// that cannot list open snapshots.
pub(crate) async fn sweep_forever(state: AppState) {
    let mut tick = tokio::time::interval(sweep_interval(state.inner.config.run_ttl));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match sweep_runs(&state).await {
            Ok(RunSweep {
                ended: 0,
                forgotten: 0,
            }) => {}
            Ok(done) => tracing::info!(
                ended = done.ended,
                forgotten = done.forgotten,
                "swept runs: ended those past their time to live, forgot those ended long ago"
            ),
            Err(StoreError::Unsupported(_)) => {
                tracing::debug!("the store cannot list open snapshots: runs end when read");
                return;
            }
            Err(e) => tracing::warn!(error = %e, "sweeping expired runs failed; retrying later"),
        }
    }
}

fn map(e: StoreError, id: &SnapshotId) -> WireError {
    match e {
        StoreError::NotFound => run_not_found(id.as_str()),
        other => WireError::from_store(other, id.as_str()),
    }
}

fn status_of(info: &SnapshotInfo) -> RunStatus {
    match &info.released {
        None => RunStatus::Running,
        Some((_, outcome)) if outcome == "cancelled" => RunStatus::Cancelled,
        Some(_) => RunStatus::Completed,
    }
}

async fn run_document(
    state: &AppState,
    owner: &Owner,
    info: &SnapshotInfo,
    meta: RunMeta,
) -> Result<Run, WireError> {
    let workspace = if info.released.is_none() {
        let files = state
            .inner
            .store
            .list_at(owner, &info.id, &WorkspacePrefix::all())
            .await
            .map_err(|e| map(e, &info.id))?;
        files
            .into_iter()
            .map(|m| RunWorkspaceEntry {
                path: m.path,
                version: encode::version(m.version),
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Run {
        ended_at: info.released.as_ref().map(|(at, _)| *at),
        owner: RunOwner {
            tenant: owner.tenant.to_string(),
            workspace: owner.workspace.to_string(),
        },
        run_id: info.id.to_string(),
        started_at: info.created_at,
        status: status_of(info),
        workflow_id: meta.workflow_id,
        workspace,
    })
}

/// The bounds on a workspace's open runs: `maxOpenRuns` of them, keeping at most
/// `maxPinnedBytes` of old versions from pruning. Checked by the store in the transaction that
/// takes the snapshot, so racing requests (on any replica) never open more than the cap.
fn run_quota(config: &crate::ServerConfig) -> SnapshotQuota {
    SnapshotQuota {
        max_open: config.max_open_runs,
        max_pinned_bytes: config.max_pinned_bytes,
    }
}

/// 429 `rate_limited` naming the limit (`details.limit`), its value (`details.max`) and where
/// the workspace stands (`details.current`).
fn quota_exceeded(refused: QuotaExceeded) -> WireError {
    let (limit, max, current, message) = match refused {
        QuotaExceeded::OpenSnapshots { open, max } => (
            "maxOpenRuns",
            max,
            open,
            format!(
                "this workspace's open runs are at their limit (maxOpenRuns {max}); end one \
                 (POST /v1/runs/{{runId}}/cancel) or wait for one to complete"
            ),
        ),
        QuotaExceeded::PinnedBytes { pinned, max } => (
            "maxPinnedBytes",
            max,
            pinned,
            format!(
                "this workspace's open runs keep {pinned} bytes of old versions from pruning, \
                 over its quota (maxPinnedBytes {max}); end a run (POST \
                 /v1/runs/{{runId}}/cancel) before starting another; writes are not affected"
            ),
        ),
    };
    WireError::new(ErrorCode::RateLimited, message)
        .with_detail("limit", limit)
        .with_detail("max", max)
        .with_detail("current", current)
}

/// The workspace's open runs are at a bound.
const RUN_QUOTA: Failure = fails::fail(
    ErrorCode::RateLimited,
    "The workspace has `maxOpenRuns` open runs, or its open runs keep more than \
     `maxPinnedBytes` of old versions from pruning (`details.limit` names which, `details.max` \
     its value, `details.current` where the workspace stands); end a run and retry, writes are \
     never refused for it",
);
/// No running run: an ended run's snapshot is gone.
pub(crate) const RUN_NOT_RUNNING: Failure = fails::fail(
    ErrorCode::NotFound,
    "No such running run for this owner; an ended run's snapshot is gone",
);
/// No file at the path in the run's snapshot.
const FILE_NOT_IN_SNAPSHOT: Failure =
    fails::fail(ErrorCode::NotFound, "No such file in the run's snapshot");

/// The route that starts runs.
pub(crate) const CREATE: &str = "/v1/runs";

/// The route of one run.
pub(crate) const RUN: &str = "/v1/runs/{runId}";

/// The route that ends a run.
pub(crate) const CANCEL: &str = "/v1/runs/{runId}/cancel";

/// The route of a run's files.
pub(crate) const RUN_FILES: &str = "/v1/runs/{runId}/workspace/files";

/// The route of one file of a run.
pub(crate) const RUN_FILE: &str = "/v1/runs/{runId}/workspace/files/{*path}";

/// The OpenAPI operation of [`create`] and the failures of its own steps.
pub(crate) struct CreateRunOp;

impl Documented for CreateRunOp {
    const OWN: &'static [Failure] = &[
        fails::SECRET_REFUSED,
        RUN_QUOTA,
        fails::NO_SNAPSHOTS,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `POST /v1/runs`: takes the snapshot now.
#[utoipa::path(
    post,
    impl_for = CreateRunOp,
    path = CREATE,
    tag = "runs",
    operation_id = "createRun",
    summary = "Start a run: pin an immutable snapshot of the caller's workspace",
    description = "Needs `runs:create`. Pins the caller's workspace as it is now: reads through the run see exactly that state, whatever is written afterwards, until the run is cancelled or its time to live passes. Bounded per workspace by `maxOpenRuns` and `maxPinnedBytes` (429 `rate_limited`).",
    request_body(content = ref("#/components/schemas/RunCreate"), content_type = "application/json"),
    security(("bearerAuth" = [])),
    responses(
        (status = 201, description = "The run; its snapshot is taken.", body = ref("#/components/schemas/RunCreated")),
    ),
)]
pub(crate) async fn create(
    State(state): State<AppState>,
    auth: Authed<RunsCreate>,
    body: JsonBody<RunCreate, SmallLimit>,
) -> Result<Reply, WireError> {
    let info = start(&state, &auth, body.value.workflow_id.to_string()).await?;
    let status_url = format!("{RUNS}{}", info.id);
    let created = RunCreated {
        events_url: format!("/v1/host/workspace/events?since={}", info.seq),
        run_id: info.id.to_string(),
        status: RunStatus::Running,
        status_url: Some(status_url.clone()),
    };
    Ok(Reply::json(&created)
        .status(StatusCode::CREATED)
        .location(&status_url))
}

/// Takes the snapshot of a new run of `workflow_id` for `caller`, its metadata in the label,
/// within the workspace's run quota (429).
async fn start(
    state: &AppState,
    caller: &Caller,
    workflow_id: String,
) -> Result<SnapshotInfo, WireError> {
    crate::secrets::refuse_secret(state, &caller.owner, "workflowId", &workflow_id)?;
    let label = SnapshotLabel::Run(RunMeta::new(
        workflow_id,
        caller.principal.clone(),
        state.inner.config.run_ttl,
    ));
    let quota = run_quota(&state.inner.config);
    let taken = state
        .inner
        .store
        .snapshot_within(&caller.owner, &label, quota);
    taken.await.or_wire("runs")?.map_err(quota_exceeded)
}

/// The OpenAPI operation of [`get_run`] and the failures of its own steps.
pub(crate) struct GetRunOp;

impl Documented for GetRunOp {
    const OWN: &'static [Failure] = &[
        fails::RUN_NOT_FOUND,
        fails::NO_SNAPSHOTS,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `GET /v1/runs/{runId}`
#[utoipa::path(
    get,
    impl_for = GetRunOp,
    path = RUN,
    tag = "runs",
    operation_id = "getRun",
    summary = "A run, its status and the files its snapshot holds",
    description = "Needs `runs:read`. The run's status (`running`, `completed` or `cancelled`), its times, and while it runs the paths and versions its snapshot holds. A run past its time to live is ended when read.",
    params(("runId" = String, Path, description = "The run id.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The run.", body = ref("#/components/schemas/Run")),
    ),
)]
pub(crate) async fn get_run(
    State(state): State<AppState>,
    auth: Authed<RunsRead>,
    RunId(id): RunId,
) -> Result<Reply, WireError> {
    let (info, meta) = load(&state, &auth.owner, &id).await?;
    let run = run_document(&state, &auth.owner, &info, meta).await?;
    Ok(Reply::json(&run))
}

/// Runs listed by default on one page of `GET /v1/runs`.
pub(crate) const DEFAULT_RUNS_PAGE: usize = 50;
/// The most runs one page of `GET /v1/runs` may ask for.
pub(crate) const MAX_RUNS_PAGE: usize = 200;

/// `?limit=N&cursor=C` of `GET /v1/runs`.
pub(crate) struct RunsPage {
    limit: usize,
    after: Option<SnapshotCursor>,
}

impl axum::extract::FromRequestParts<AppState> for RunsPage {
    type Rejection = WireError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &AppState,
    ) -> Result<Self, WireError> {
        let params = crate::request::query_params(parts.uri.query())?;
        let field = |name: &'static str, problem: String| {
            WireError::validation(problem).with_detail("field", name)
        };
        crate::request::only_params(&params, &["limit", "cursor"], "GET /v1/runs")?;
        let limit =
            crate::request::bounded_param(&params, "limit", 1..=MAX_RUNS_PAGE, DEFAULT_RUNS_PAGE)?;
        let after = match crate::request::param(&params, "cursor") {
            None => None,
            Some(text) => Some(parse_cursor(text).ok_or_else(|| {
                field(
                    "cursor",
                    "cursor is not one this server gave (use a nextCursor as it was sent)".into(),
                )
            })?),
        };
        Ok(Self { limit, after })
    }
}

impl fails::Fallible for RunsPage {
    fn failures() -> Vec<Failure> {
        vec![fails::BAD_QUERY]
    }
}

/// A `nextCursor`: the start time of the page's last run in microseconds, `-`, and its id.
fn cursor_text(cursor: &SnapshotCursor) -> String {
    format!(
        "{}-{}",
        cursor.created_at.timestamp_micros().max(0),
        cursor.id.as_str()
    )
}

/// Reads [`cursor_text`]'s form. A time past what the clock can say reads as the latest
/// representable time: such a cursor continues from the newest run.
fn parse_cursor(text: &str) -> Option<SnapshotCursor> {
    let (micros, id) = text.split_once('-')?;
    if micros.is_empty() || micros.len() > 19 || !micros.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let micros: u64 = micros.parse().ok()?;
    let created_at = i64::try_from(micros)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_micros)
        .unwrap_or(chrono::DateTime::<Utc>::MAX_UTC);
    Some(SnapshotCursor {
        created_at,
        id: SnapshotId::parse(id)?,
    })
}

/// The OpenAPI operation of [`list`] and the failures of its own steps.
pub(crate) struct ListRunsOp;

impl Documented for ListRunsOp {
    const OWN: &'static [Failure] = &[fails::NO_SNAPSHOTS, fails::STORE_UNAVAILABLE];
}

/// `GET /v1/runs` (extension): the caller's runs, newest first, a page at a time.
#[utoipa::path(
    get,
    impl_for = ListRunsOp,
    path = CREATE,
    tag = "runs",
    operation_id = "listRuns",
    summary = "List the caller's runs, newest first (wsp extension)",
    description = "Needs `runs:read`. The caller's runs, running and ended (until the server forgets ended ones), newest first, each with its id, status, workflow and times. A page holds at most `limit` runs and may hold fewer; `nextCursor` continues the listing and its absence means there is no more. A run started after a page was read never shifts the later pages. Another owner's runs are never listed.",
    params(
        ("limit" = Option<u64>, Query, minimum = 1, maximum = 200, description = "Most runs on the page (default 50)."),
        ("cursor" = Option<String>, Query, description = "The `nextCursor` of the previous page, as it was sent."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "One page of runs.", body = ref("#/components/schemas/RunList")),
    ),
)]
pub(crate) async fn list(
    State(state): State<AppState>,
    auth: Authed<RunsRead>,
    page: RunsPage,
) -> Result<Reply, WireError> {
    let store = &state.inner.store;
    let infos = store
        .list_snapshots(&auth.owner, page.after.as_ref(), page.limit)
        .await
        .or_wire("runs")?;
    let next = (infos.len() == page.limit)
        .then(|| infos.last().map(SnapshotCursor::after))
        .flatten();
    let now = Utc::now();
    let mut runs = Vec::with_capacity(infos.len());
    for mut info in infos {
        // A snapshot that is not a run's is no run.
        let Some(meta) = info.label.run().cloned() else {
            continue;
        };
        // As `GET /v1/runs/{runId}` does: a run past its time to live ends when read.
        if info.released.is_none() && meta.expired(info.created_at, now) {
            info = store
                .release_snapshot(&auth.owner, &info.id, "completed")
                .await
                .map_err(|e| map(e, &info.id))?;
        }
        runs.push(RunSummary {
            ended_at: info.released.as_ref().map(|(at, _)| *at),
            run_id: info.id.to_string(),
            started_at: info.created_at,
            status: status_of(&info),
            workflow_id: meta.workflow_id,
        });
    }
    Ok(Reply::json(&RunList {
        next_cursor: next.as_ref().map(cursor_text),
        runs,
    }))
}

/// The OpenAPI operation of [`cancel`] and the failures of its own steps.
pub(crate) struct CancelRunOp;

impl Documented for CancelRunOp {
    const OWN: &'static [Failure] = &[
        fails::RUN_NOT_FOUND,
        fails::NO_SNAPSHOTS,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `POST /v1/runs/{runId}/cancel`: ends the run and releases its snapshot.
#[utoipa::path(
    post,
    impl_for = CancelRunOp,
    path = CANCEL,
    tag = "runs",
    operation_id = "cancelRun",
    summary = "End a run and release its snapshot",
    description = "Needs `runs:create`. Ends a running run (`cancelled`) and releases its snapshot; an ended run is answered with its record unchanged.",
    params(("runId" = String, Path, description = "The run id.")),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The run, ended (`cancelled`, or `completed` if it had already ended).", body = ref("#/components/schemas/Run")),
    ),
)]
pub(crate) async fn cancel(
    State(state): State<AppState>,
    auth: Authed<RunsCreate>,
    RunId(id): RunId,
) -> Result<Reply, WireError> {
    let (info, meta) = load(&state, &auth.owner, &id).await?;
    let info = if info.released.is_none() {
        let released = state
            .inner
            .store
            .release_snapshot(&auth.owner, &id, "cancelled");
        released.await.map_err(|e| map(e, &id))?
    } else {
        info
    };
    let run = run_document(&state, &auth.owner, &info, meta).await?;
    Ok(Reply::json(&run))
}

/// The OpenAPI operation of [`list_files`] and the failures of its own steps.
pub(crate) struct ListRunFilesOp;

impl Documented for ListRunFilesOp {
    const OWN: &'static [Failure] = &[
        RUN_NOT_RUNNING,
        fails::NO_SNAPSHOTS,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `GET /v1/runs/{runId}/workspace/files` (extension): the snapshot's files.
#[utoipa::path(
    get,
    impl_for = ListRunFilesOp,
    path = RUN_FILES,
    tag = "runs",
    operation_id = "listRunWorkspaceFiles",
    summary = "List the files of a run's snapshot (wsp extension)",
    description = "Needs `runs:read`. The files of the run's snapshot whose path starts with `prefix`, metadata only, as they were when the run started; 404 once the run has ended.",
    params(
        ("runId" = String, Path, description = "The run id."),
        ("prefix" = Option<String>, Query, description = "Plain string prefix of the paths to list."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The snapshot's files, as of the run's start.", body = ref("#/components/schemas/WorkspaceFileList")),
    ),
)]
pub(crate) async fn list_files(
    State(state): State<AppState>,
    auth: Authed<RunsRead>,
    RunId(id): RunId,
    ListPrefix(prefix): ListPrefix,
) -> Result<Reply, WireError> {
    let (info, _) = load(&state, &auth.owner, &id).await?;
    let files = state
        .inner
        .store
        .list_at(&auth.owner, &info.id, &prefix)
        .await;
    Ok(Reply::encoded(encode::file_list(
        files.map_err(|e| map(e, &id))?,
    )))
}

/// The OpenAPI operation of [`get_file`] and the failures of its own steps.
pub(crate) struct GetRunFileOp;

impl Documented for GetRunFileOp {
    const OWN: &'static [Failure] = &[
        RUN_NOT_RUNNING,
        FILE_NOT_IN_SNAPSHOT,
        fails::NO_SNAPSHOTS,
        fails::STORE_UNAVAILABLE,
    ];
}

/// `GET /v1/runs/{runId}/workspace/files/{path}` (extension): one file as the run sees it.
#[utoipa::path(
    get,
    impl_for = GetRunFileOp,
    path = RUN_FILE,
    tag = "runs",
    operation_id = "getRunWorkspaceFile",
    summary = "Read a file of a run's snapshot (wsp extension)",
    description = "Needs `runs:read`. The file as the run's snapshot holds it, whatever has been written since; 404 once the run has ended.",
    params(
        ("runId" = String, Path, description = "The run id."),
        ("path" = String, Path, description = "Workspace path, raw or percent-encoded."),
    ),
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "The file as of the run's start.", body = ref("#/components/schemas/WorkspaceFile")),
    ),
)]
pub(crate) async fn get_file(
    State(state): State<AppState>,
    auth: Authed<RunsRead>,
    RunId(id): RunId,
    WsPath(path): WsPath,
) -> Result<Reply, WireError> {
    let (info, _) = load(&state, &auth.owner, &id).await?;
    let file = state.inner.store.get_at(&auth.owner, &info.id, &path).await;
    Ok(crate::files::file_reply(file.or_wire(path.as_str())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_are_a_quarter_of_the_ttl_within_bounds() {
        use std::time::Duration;
        assert_eq!(
            sweep_interval(Duration::from_secs(2)),
            Duration::from_secs(1)
        );
        assert_eq!(
            sweep_interval(Duration::from_secs(40)),
            Duration::from_secs(10)
        );
        assert_eq!(
            sweep_interval(Duration::from_secs(86_400)),
            Duration::from_secs(60)
        );
    }
}
