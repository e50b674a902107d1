//! The pages' HTML (maud: compiled templates that escape every value they are given).
//!
//! No inline script, style or event attribute anywhere: the Content-Security-Policy forbids
//! them, and the one script is `assets/console.js`.

use chrono::{DateTime, SecondsFormat, Utc};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use wsp_types::wire::{
    AgentInventoryEntry, Run, RunSummary, WorkspaceContext, WorkspaceFile, WorkspaceFileMeta,
};

use crate::api::{self, q};
use crate::assets;
use crate::diff::{self, Side};

/// What the live script watches on a page.
pub(crate) enum Watch<'a> {
    Nothing,
    /// An open file at a version; `editing` when the page is its editor.
    File {
        path: &'a str,
        version: u64,
        editing: bool,
    },
    /// A folder (a path prefix, empty for the root).
    Folder(&'a str),
}

/// The signed-in person's part of every page.
pub(crate) struct Signed<'a> {
    pub(crate) csrf: &'a str,
    pub(crate) can_write: bool,
}

/// A whole page.
pub(crate) fn page(
    title: &str,
    signed: Option<&Signed<'_>>,
    watch: &Watch<'_>,
    body: Markup,
) -> Markup {
    let (path, prefix, version, editing) = match watch {
        Watch::Nothing => (None, None, None, false),
        Watch::File {
            path,
            version,
            editing,
        } => (Some(*path), None, Some(version.to_string()), *editing),
        Watch::Folder(prefix) => (None, Some(*prefix), None, false),
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · wsp console" }
                link rel="stylesheet" href=(assets::CSS.url);
                script src=(assets::JS.url) defer {}
            }
            body data-watch-path=[path] data-watch-prefix=[prefix] data-version=[version] data-editing[editing] {
                a.skip href="#main" { "Skip to the content" }
                header {
                    a.brand href="/console/" { "wsp console" }
                    @if let Some(s) = signed {
                        nav aria-label="Sections" {
                            a href="/console/files" { "Files" }
                            a href="/console/runs" { "Runs" }
                            a href="/console/context" { "Context" }
                            a href="/console/agents" { "Agents" }
                        }
                        form method="post" action="/console/sign-out" {
                            input type="hidden" name="csrf" value=(s.csrf);
                            button.secondary type="submit" { "Sign out" }
                        }
                    }
                }
                main id="main" {
                    div #live .notice .live role="status" aria-live="polite" hidden {}
                    (body)
                }
            }
        }
    }
}

/// The hidden CSRF field of a state-changing form.
pub(crate) fn csrf_field(s: &Signed<'_>) -> Markup {
    html! { input type="hidden" name="csrf" value=(s.csrf); }
}

/// An error box.
pub(crate) fn error_box(message: &str) -> Markup {
    html! { p.notice.error role="alert" { (message) } }
}

/// The sign-in page.
pub(crate) fn sign_in(message: Option<&str>) -> Markup {
    page(
        "Sign in",
        None,
        &Watch::Nothing,
        html! {
            div.signin {
                h1 { "Sign in" }
                @if let Some(m) = message { (error_box(m)) }
                form method="post" action="/console/sign-in" {
                    label for="key" { "API key" }
                    input #key type="password" name="key" autocomplete="off" required autofocus;
                    p.muted { "The key stays on the server for this session; the page never holds it." }
                    div.actions { button type="submit" { "Sign in" } }
                }
            }
        },
    )
}

/// The folders above `prefix` as links.
fn crumbs(prefix: &str) -> Markup {
    let mut at = String::new();
    let links: Vec<(&str, String)> = prefix
        .split('/')
        .filter(|p| !p.is_empty())
        .map(|part| {
            at.push_str(part);
            at.push('/');
            (part, at.clone())
        })
        .collect();
    html! {
        p.crumbs {
            a href="/console/files" { "workspace" }
            @for (part, to) in &links {
                " / " a href={ "/console/files?prefix=" (q(to)) } { (part) }
            }
        }
    }
}

/// A row of a folder listing: a subfolder, or a file.
pub(crate) enum Entry<'a> {
    Folder {
        name: String,
        prefix: String,
        files: usize,
    },
    File {
        name: String,
        meta: &'a WorkspaceFileMeta,
    },
}

/// A folder of the workspace.
pub(crate) fn folder(
    s: &Signed<'_>,
    prefix: &str,
    filter: &str,
    entries: &[Entry<'_>],
    filtered_files: usize,
) -> Markup {
    html! {
        h1 { "Files" }
        (crumbs(prefix))
        form.inline method="get" action="/console/files" role="search" {
            input type="hidden" name="prefix" value=(prefix);
            div {
                label for="filter" { "Filter by path" }
                input #filter type="text" name="filter" value=(filter) placeholder="e.g. memory";
            }
            button type="submit" { "Filter" }
        }
        @if !filter.is_empty() {
            p.muted { (filtered_files) " file(s) under this folder match “" (filter) "”." }
        }
        table {
            thead { tr {
                th scope="col" { "Name" }
                th.num scope="col" { "Size" }
                th.num scope="col" { "Version" }
                th.hide-narrow scope="col" { "Updated" }
                th.hide-narrow scope="col" { "Author" }
            } }
            tbody {
                @if entries.is_empty() {
                    tr { td colspan="5" .muted { "No files here." } }
                }
                @for e in entries {
                    @match e {
                        Entry::Folder { name, prefix, files } => tr {
                            td { a href={ "/console/files?prefix=" (q(prefix)) } { (name) "/" } }
                            td.num.muted { (files) " file(s)" }
                            td {} td.hide-narrow {} td.hide-narrow {}
                        },
                        Entry::File { name, meta } => tr {
                            td { a href={ "/console/file/" (meta.path) } { (name) } }
                            td.num { (meta.size.map(human_size).unwrap_or_default()) }
                            td.num { (meta.version) }
                            td.hide-narrow { (when(&meta.updated_at)) }
                            td.hide-narrow { (meta.updated_by.as_deref().unwrap_or("")) }
                        },
                    }
                }
            }
        }
        @if s.can_write {
            h2 { "Add" }
            div.actions {
                a.button href={ "/console/new?prefix=" (q(prefix)) } { "New file" }
            }
            form method="post" action="/console/upload" enctype="multipart/form-data" {
                (csrf_field(s))
                input type="hidden" name="prefix" value=(prefix);
                label for="upload" { "Upload a file into this folder" }
                div.inline {
                    div { input #upload type="file" name="file" required; }
                    button.secondary type="submit" { "Upload" }
                }
            }
        }
    }
}

/// A time for people: `2026-05-25 10:15:00 UTC` (to the second), in a `<time>` element that
/// keeps the exact value as the API wrote it (RFC 3339, `Z`, fractional seconds as needed).
pub(crate) fn when(at: &DateTime<Utc>) -> Markup {
    let exact = at.to_rfc3339_opts(SecondsFormat::AutoSi, true);
    let short = at.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    html! { time datetime=(exact) { (short) } }
}

/// `n` bytes for people.
pub(crate) fn human_size(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

/// The metadata block of a file.
fn meta(f: &WorkspaceFile) -> Markup {
    html! {
        dl.meta {
            dt { "Version" } dd { (f.version) }
            dt { "ETag" } dd { code { (f.etag.as_deref().unwrap_or("")) } }
            dt { "Updated" } dd { (when(&f.updated_at)) }
            dt { "Author" } dd { (f.updated_by.as_deref().unwrap_or("")) }
            dt { "Type" } dd { (f.content_type) }
        }
    }
}

/// The parent folder of `path` (with its trailing `/`, empty at the root).
pub(crate) fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..=i])
}

/// The body of a file: rendered Markdown, source, or a note for bytes.
fn content(f: &WorkspaceFile, source: bool) -> Markup {
    html! {
        @if f.encoding().is_binary() {
            p.muted { "This file holds bytes, not text: download it to open it." }
        } @else if api::is_markdown(f) && !source {
            div.rendered { (PreEscaped(crate::markdown::to_html(&f.content))) }
        } @else {
            pre { code { (f.content) } }
        }
    }
}

/// A file of the live workspace.
pub(crate) fn file(s: &Signed<'_>, f: &WorkspaceFile, source: bool) -> Markup {
    let p = f.path.as_str();
    html! {
        h1 { (p) }
        (crumbs(parent(p)))
        (meta(f))
        div.actions {
            @if api::is_markdown(f) && !f.encoding().is_binary() {
                @if source { a href={ "/console/file/" (p) } { "Rendered" } }
                @else { a href={ "/console/file/" (p) "?source=1" } { "Source" } }
            }
            a href={ "/console/history/" (p) } { "History" }
            a href={ "/console/download/" (p) } { "Download" }
            @if s.can_write && !f.encoding().is_binary() {
                a.button href={ "/console/edit/" (p) } { "Edit" }
            }
            @if s.can_write {
                a href={ "/console/agents?path=" (q(p)) } { "Publish to an agent" }
                a.button.secondary href={ "/console/delete/" (p) } { "Delete" }
            }
        }
        (content(f, source))
    }
}

/// A file of a run's snapshot.
pub(crate) fn run_file(run_id: &str, f: &WorkspaceFile, source: bool) -> Markup {
    let p = f.path.as_str();
    html! {
        h1 { (p) }
        p.crumbs { a href={ "/console/runs/" (run_id) } { "run " (run_id) } " (snapshot)" }
        (meta(f))
        @if api::is_markdown(f) && !f.encoding().is_binary() {
            div.actions {
                @if source { a href={ "/console/runs/" (run_id) "/file/" (p) } { "Rendered" } }
                @else { a href={ "/console/runs/" (run_id) "/file/" (p) "?source=1" } { "Source" } }
            }
        }
        (content(f, source))
    }
}

/// What the editor holds.
pub(crate) struct Draft<'a> {
    pub(crate) path: &'a str,
    /// The etag the text was based on; empty for a new file.
    pub(crate) etag: &'a str,
    pub(crate) version: u64,
    pub(crate) content: &'a str,
    pub(crate) content_type: &'a str,
    /// Whether the path may be typed (a new file).
    pub(crate) new: bool,
}

/// The editor.
pub(crate) fn editor(s: &Signed<'_>, d: &Draft<'_>, error: Option<&str>) -> Markup {
    html! {
        h1 { @if d.new { "New file" } @else { "Edit " (d.path) } }
        @if !d.new { (crumbs(parent(d.path))) }
        @if let Some(e) = error { (error_box(e)) }
        (editor_form(s, d, "Save"))
    }
}

fn editor_form(s: &Signed<'_>, d: &Draft<'_>, button: &str) -> Markup {
    html! {
        form method="post" action="/console/save" {
            (csrf_field(s))
            input type="hidden" name="etag" value=(d.etag);
            input type="hidden" name="contentType" value=(d.content_type);
            @if d.content.contains("\r\n") { input type="hidden" name="crlf" value="1"; }
            @if d.new {
                label for="path" { "Path" }
                input #path type="text" name="path" value=(d.path) required
                    pattern="[A-Za-z0-9][A-Za-z0-9._/\\-]*" placeholder="notes/today.md";
            } @else {
                input type="hidden" name="path" value=(d.path);
            }
            label for="content" { "Content" }
            // The HTML parser drops one line break right after `<textarea>`: give it one to drop.
            textarea #content name="content" spellcheck="false" { "\n" (d.content) }
            div.actions {
                button type="submit" { (button) }
                @if d.new { a href="/console/files" { "Cancel" } }
                @else { a href={ "/console/file/" (d.path) } { "Cancel" } }
            }
        }
    }
}

/// A diff as lines marked `-` and `+`.
pub(crate) fn diff_block(old: &str, new: &str, label: &str) -> Markup {
    let lines = diff::lines(old, new);
    html! {
        div.diff role="region" aria-label=(label) {
            @for l in &lines {
                @match l.side {
                    Side::Same => div { span.mark aria-hidden="true" { " " } (l.text) },
                    Side::Removed => div.removed { span.mark { "-" } (l.text) },
                    Side::Added => div.added { span.mark { "+" } (l.text) },
                }
            }
            @if lines.is_empty() { div.muted { "(both empty)" } }
        }
    }
}

/// The conflict page: someone saved first. Their text against the person's, and the editor
/// again, holding the person's text, based on the version now live.
pub(crate) fn conflict(s: &Signed<'_>, theirs: Option<&WorkspaceFile>, d: &Draft<'_>) -> Markup {
    html! {
        h1 { "Someone else saved " (d.path) " first" }
        @match theirs {
            Some(t) => {
                p.notice.error role="alert" {
                    "Version " (t.version) " was saved by " (t.updated_by.as_deref().unwrap_or("someone"))
                    " at " (when(&t.updated_at)) " while you edited. Nothing was overwritten. "
                    "Lines marked − are only in their version, lines marked + only in your text. "
                    "Merge below and save again."
                }
                (diff_block(&t.content, d.content, "Their version against your text"))
            }
            None => p.notice.error role="alert" {
                "This file was deleted (or created) by someone else while you edited. Nothing was "
                "overwritten. Saving below creates it again with your text."
            },
        }
        (editor_form(s, d, "Save merged text"))
    }
}

/// The confirmation before a delete.
pub(crate) fn confirm_delete(s: &Signed<'_>, f: &WorkspaceFile) -> Markup {
    html! {
        h1 { "Delete " (f.path) "?" }
        p { "Version " (f.version) " is the live one. After a delete the file leaves the list and its history is no longer served." }
        form method="post" action="/console/delete" {
            (csrf_field(s))
            input type="hidden" name="path" value=(f.path);
            input type="hidden" name="etag" value=(f.etag.as_deref().unwrap_or(""));
            div.actions {
                button.danger type="submit" { "Delete" }
                a href={ "/console/file/" (f.path) } { "Keep it" }
            }
        }
    }
}

/// A file's versions, the diff form and restore buttons.
pub(crate) fn history(
    s: &Signed<'_>,
    path: &str,
    live_etag: &str,
    versions: &[WorkspaceFileMeta],
) -> Markup {
    let newest = versions.first().map_or(0, |v| v.version.get());
    let second = versions.get(1).map_or(newest, |v| v.version.get());
    html! {
        h1 { "History of " (path) }
        (crumbs(parent(path)))
        p { a href={ "/console/file/" (path) } { "Open the file" } }
        @if versions.len() > 1 {
            form.inline method="get" action={ "/console/diff/" (path) } {
                div {
                    label for="from" { "From version" }
                    select #from name="from" {
                        @for v in versions { option value=(v.version) selected[v.version.get() == second] { (v.version) } }
                    }
                }
                div {
                    label for="to" { "To version" }
                    select #to name="to" {
                        @for v in versions { option value=(v.version) selected[v.version.get() == newest] { (v.version) } }
                    }
                }
                button type="submit" { "Show the difference" }
            }
        }
        table {
            thead { tr {
                th.num scope="col" { "Version" }
                th scope="col" { "Updated" }
                th scope="col" { "Author" }
                th.num.hide-narrow scope="col" { "Size" }
                th scope="col" { span.hide-narrow { "Actions" } }
            } }
            tbody {
                @for v in versions {
                    tr {
                        td.num { a href={ "/console/file/" (path) "?version=" (v.version) } { (v.version) } }
                        td { (when(&v.updated_at)) }
                        td { (v.updated_by.as_deref().unwrap_or("")) }
                        td.num.hide-narrow { (v.size.map(human_size).unwrap_or_default()) }
                        td {
                            @if v.version.get() == newest { span.muted { "live" } }
                            @else if s.can_write {
                                form method="post" action="/console/restore" {
                                    (csrf_field(s))
                                    input type="hidden" name="path" value=(path);
                                    input type="hidden" name="version" value=(v.version);
                                    input type="hidden" name="etag" value=(live_etag);
                                    button.secondary type="submit" aria-label={ "Restore version " (v.version) } { "Restore" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// An old version of a file.
pub(crate) fn old_version(f: &WorkspaceFile, source: bool) -> Markup {
    html! {
        h1 { (f.path) " at version " (f.version) }
        p.crumbs { a href={ "/console/history/" (f.path) } { "History" } " · " a href={ "/console/file/" (f.path) } { "live version" } }
        (meta(f))
        (content(f, source))
    }
}

/// The difference between two versions.
pub(crate) fn version_diff(path: &str, from: &WorkspaceFile, to: &WorkspaceFile) -> Markup {
    html! {
        h1 { (path) ": version " (from.version) " → " (to.version) }
        p.crumbs { a href={ "/console/history/" (path) } { "History" } }
        p.muted {
            "Version " (from.version) " by " (from.updated_by.as_deref().unwrap_or("?")) " at " (when(&from.updated_at))
            "; version " (to.version) " by " (to.updated_by.as_deref().unwrap_or("?")) " at " (when(&to.updated_at)) "."
        }
        (diff_block(&from.content, &to.content, "Difference between the two versions"))
    }
}

/// The runs.
pub(crate) fn runs(runs: &[RunSummary], older: Option<&str>) -> Markup {
    html! {
        h1 { "Runs" }
        p.muted { "Each run pinned a snapshot of the workspace when it started: the files as the agent saw them." }
        table {
            thead { tr {
                th scope="col" { "Run" } th scope="col" { "Workflow" } th scope="col" { "Status" }
                th scope="col" { "Started" } th.hide-narrow scope="col" { "Ended" }
            } }
            tbody {
                @if runs.is_empty() { tr { td colspan="5" .muted { "No runs." } } }
                @for r in runs {
                    tr {
                        td { a href={ "/console/runs/" (r.run_id) } { code { (r.run_id.get(..12).unwrap_or(&r.run_id)) } } }
                        td { (r.workflow_id) }
                        td { (r.status) }
                        td { (when(&r.started_at)) }
                        td.hide-narrow { @if let Some(e) = &r.ended_at { (when(e)) } }
                    }
                }
            }
        }
        @if let Some(cursor) = older {
            p { a href={ "/console/runs?cursor=" (q(cursor)) } { "Older runs" } }
        }
    }
}

/// One run and its snapshot's files.
pub(crate) fn run(r: &Run, files: Option<&[WorkspaceFileMeta]>) -> Markup {
    html! {
        h1 { "Run " (r.run_id) }
        p.crumbs { a href="/console/runs" { "Runs" } }
        dl.meta {
            dt { "Workflow" } dd { (r.workflow_id) }
            dt { "Status" } dd { (r.status) }
            dt { "Started" } dd { (when(&r.started_at)) }
            @if let Some(e) = &r.ended_at { dt { "Ended" } dd { (when(e)) } }
        }
        p { a href={ "/console/runs/" (r.run_id) "/context" } { "Context this run loads" } }
        h2 { "Snapshot" }
        @match files {
            None => p.muted { "The run has ended: its snapshot was released." },
            Some(files) => table {
                thead { tr { th scope="col" { "Path" } th.num scope="col" { "Version" } th.num scope="col" { "Size" } th.hide-narrow scope="col" { "Updated" } } }
                tbody {
                    @if files.is_empty() { tr { td colspan="4" .muted { "The workspace was empty." } } }
                    @for f in files {
                        tr {
                            td { a href={ "/console/runs/" (r.run_id) "/file/" (f.path) } { (f.path) } }
                            td.num { (f.version) }
                            td.num { (f.size.map(human_size).unwrap_or_default()) }
                            td.hide-narrow { (when(&f.updated_at)) }
                        }
                    }
                }
            },
        }
    }
}

/// A context preview and its budget report.
pub(crate) fn context(title: &str, action: &str, budget: u64, c: &WorkspaceContext) -> Markup {
    let r = &c.report;
    html! {
        h1 { (title) }
        form.inline method="get" action=(action) {
            div {
                label for="budget" { "Budget (tokens)" }
                input #budget type="number" name="budget" min="1" value=(budget);
            }
            button type="submit" { "Preview" }
        }
        h2 { "Budget report" }
        p {
            (r.used_tokens) " of " (r.budget_tokens) " tokens used (" (r.tokenizer) ", source " (r.source) ")."
            @if r.over_budget == Some(true) { strong { " Over budget: AGENTS.md alone is larger than the budget." } }
        }
        table {
            thead { tr {
                th scope="col" { "Section" } th scope="col" { "Path" } th scope="col" { "Outcome" }
                th.num scope="col" { "Included" } th.num scope="col" { "Omitted" } th.num.hide-narrow scope="col" { "Full" }
                th.hide-narrow scope="col" { "Why" }
            } }
            tbody {
                @for e in &r.entries {
                    tr {
                        td { (e.section) } td { (e.path) } td { (e.outcome) }
                        td.num { (e.included_tokens) } td.num { (e.omitted_tokens) } td.num.hide-narrow { (e.full_tokens) }
                        td.hide-narrow { (e.reason.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
        h2 { "Text" }
        pre { code { (c.text) } }
    }
}

/// The agent inventory and the publish form.
pub(crate) fn agents(s: &Signed<'_>, agents: Option<&[AgentInventoryEntry]>, path: &str) -> Markup {
    html! {
        h1 { "Agents" }
        @match agents {
            None => p.muted { "This server has no agent inventory." },
            Some(agents) => {
                table {
                    thead { tr {
                        th scope="col" { "Agent" } th scope="col" { "Label" } th.hide-narrow scope="col" { "Persona" }
                        th.hide-narrow scope="col" { "Model class" } th scope="col" { "Pack" }
                    } }
                    tbody {
                        @if agents.is_empty() { tr { td colspan="5" .muted { "No agent is visible to this key." } } }
                        @for a in agents {
                            tr {
                                td { code { (a.agent_id) } }
                                td { (a.label) @if let Some(d) = &a.description { br; span.muted { (d) } } }
                                td.hide-narrow { (a.persona) }
                                td.hide-narrow { (a.model_class) }
                                td { (a.pack_name) " " (a.pack_version) }
                            }
                        }
                    }
                }
                @if s.can_write && !agents.is_empty() {
                    h2 { "Publish a file to a shared agent" }
                    p.muted { "Copies your current file into the shared agent's workspace as a new version there." }
                    form method="post" action="/console/publish" {
                        (csrf_field(s))
                        div.inline {
                            div {
                                label for="pub-path" { "Your file" }
                                input #pub-path type="text" name="path" value=(path) required placeholder="knowledge/recipes.md";
                            }
                            div {
                                label for="pub-agent" { "Shared agent" }
                                select #pub-agent name="targetAgentId" {
                                    @for a in agents { option value=(a.agent_id) { (a.label) " (" (a.agent_id) ")" } }
                                }
                            }
                            div {
                                label for="pub-target" { "Path there (optional)" }
                                input #pub-target type="text" name="targetPath" placeholder="same path";
                            }
                            button type="submit" { "Publish" }
                        }
                    }
                }
            }
        }
    }
}

/// A short message page (after publishing, or an error).
pub(crate) fn message(title: &str, text: &str, error: bool, back: (&str, &str)) -> Markup {
    html! {
        h1 { (title) }
        @if error { (error_box(text)) } @else { p.notice.ok role="status" { (text) } }
        p { a href=(back.0) { (back.1) } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shortened_to_the_second() {
        // The exact value is the API's own text of the time (chrono's serde form).
        let check = |at: &str, shown: &str| {
            let time: DateTime<Utc> = serde_json::from_value(serde_json::json!(at)).unwrap();
            assert_eq!(serde_json::to_value(time).unwrap(), serde_json::json!(at));
            assert_eq!(
                when(&time).into_string(),
                format!("<time datetime=\"{at}\">{shown}</time>")
            );
        };
        check("2026-05-25T10:15:00.123456Z", "2026-05-25 10:15:00 UTC");
        check("2026-05-25T10:15:00.123Z", "2026-05-25 10:15:00 UTC");
        check("2026-05-25T10:15:59.999999999Z", "2026-05-25 10:15:59 UTC");
        check("2026-05-25T10:15:00Z", "2026-05-25 10:15:00 UTC");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(3 * 1_048_576), "3.0 MiB");
    }

    #[test]
    fn parents_keep_their_slash() {
        assert_eq!(parent("a.md"), "");
        assert_eq!(parent("notes/a.md"), "notes/");
        assert_eq!(parent("a/b/c.md"), "a/b/");
    }
}
