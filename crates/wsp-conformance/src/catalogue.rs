//! The scenario catalogue: one line per scenario, in report order.
//!
//! To add a scenario, write one `async fn(&Ctx) -> ScenarioResult` in `scenarios/` and add one
//! `scenario!` line here (and a row in `conformance/README.md`). Ids are stable: never renumber,
//! never reuse a retired id.

use crate::scenario::{Gate, Scenario};
use crate::scenarios::{
    agents, atomicity, auth, binary, capability, context, delete, discovery, errors, etag,
    idempotency, isolation, limits, list, memory, paths, read, redaction, runs, versions, write,
};

macro_rules! scenario {
    ($id:literal, $clause:literal, $gate:expr, $title:literal, $run:path) => {
        Scenario {
            id: $id,
            clause: $clause,
            gate: $gate,
            title: $title,
            run: |ctx| Box::pin($run(ctx)),
        }
    };
}

const ALWAYS: Gate = Gate::Always;
const BLOCK: Gate = Gate::Advertised(&["workspace"]);
const WS: Gate = Gate::Advertised(&["workspace.supported"]);
const NO_WS: Gate = Gate::NotAdvertised("workspace.supported");
const VERSIONED: Gate = Gate::Advertised(&["workspace.supported", "workspace.versioned"]);
const MAX_VERSIONS: Gate = Gate::Advertised(&[
    "workspace.supported",
    "workspace.versioned",
    "workspace.maxVersions",
]);
const MAX_FILE_BYTES: Gate = Gate::Advertised(&["workspace.supported", "workspace.maxFileBytes"]);
const REQUEST_BODY: Gate = Gate::Advertised(&["workspace.supported", "limits.maxRequestBodyBytes"]);
const MAX_FILES: Gate = Gate::Advertised(&["workspace.supported", "workspace.maxFiles"]);
const RUNS: Gate = Gate::Advertised(&["workspace.supported", "wsp.runs"]);
const RUN_LIST: Gate = Gate::Advertised(&["workspace.supported", "wsp.runs", "wsp.runList"]);
const EVENTS: Gate = Gate::Advertised(&["workspace.supported", "wsp.events"]);
const DELETE_EVENTS: Gate =
    Gate::Advertised(&["workspace.supported", "wsp.events", "wsp.deleteEvents"]);
const UPDATED_BY: Gate = Gate::Advertised(&["workspace.supported", "wsp.history", "wsp.updatedBy"]);
const BINARY: Gate = Gate::Advertised(&["workspace.supported", "wsp.binaryContent"]);
const CONTEXT: Gate = Gate::Advertised(&["workspace.supported", "wsp.context"]);
const RUN_CONTEXT: Gate = Gate::Advertised(&["workspace.supported", "wsp.context", "wsp.runs"]);
const SEARCH: Gate = Gate::Advertised(&["workspace.supported", "wsp.search"]);
const MEMORY: Gate = Gate::Advertised(&["workspace.supported", "wsp.memory", "wsp.search"]);
const BINARY_LIMIT: Gate = Gate::Advertised(&[
    "workspace.supported",
    "workspace.maxFileBytes",
    "wsp.binaryContent",
]);
const AGENTS: Gate = Gate::Advertised(&["agents.manifestRuntime.supported"]);
const PUBLISH: Gate =
    Gate::Advertised(&["workspace.supported", "agents.manifestRuntime.supported"]);

/// Every scenario of the suite, in the order they run and are reported.
#[rustfmt::skip]
pub static CATALOGUE: &[Scenario] = &[
    scenario!("WS-DISC-001", "WIRE §1", ALWAYS, "Discovery answers 200 application/json without credentials", discovery::answers_json),
    scenario!("WS-DISC-002", "WIRE §1", ALWAYS, "Discovery has protocolVersion, supportedEnvelopes, schemaVersions and limits", discovery::required_fields),
    scenario!("WS-DISC-003", "WIRE §1", ALWAYS, "limits has exactly clarificationRounds, schemaRounds, envelopesPerTurn (+ maxRequestBodyBytes), integers", discovery::limits_shape),
    scenario!("WS-DISC-004", "WIRE §1", ALWAYS, "Discovery sends Cache-Control", discovery::cache_control),
    scenario!("WS-DISC-005", "RFC 0059 §A", ALWAYS, "Capability blocks sit at the root, not under `capabilities`", discovery::no_capabilities_wrapper),
    scenario!("WS-DISC-006", "WIRE §1", ALWAYS, "A bearer header sent to discovery is ignored", discovery::bearer_ignored),
    scenario!("WS-DISC-007", "WIRE §1", ALWAYS, "implementation, when present, is {name, version} strings", discovery::implementation_shape),
    scenario!("WS-DISC-009", "WIRE §1, RFC 9110 §13.1.2", ALWAYS, "A tagged discovery document answers If-None-Match with 304", discovery::revalidates),
    scenario!("WS-DISC-010", "WIRE §1, OpenWOP capabilities", ALWAYS, "supportedTransports, when present, is an array of distinct non-empty names with rest, and an advertised sse answers text/event-stream", discovery::transports_shape),
    scenario!("WS-DISC-008", "WIRE §1", ALWAYS, "GET /v1/openapi.json serves OpenAPI 3.1 JSON without credentials", discovery::openapi_document),

    scenario!("WS-CAP-001", "RFC 0059 §A", BLOCK, "The workspace block has only its five keys and a boolean `supported`", capability::only_known_keys),
    scenario!("WS-CAP-002", "RFC 0059 §A", BLOCK, "versioned is a boolean; maxFileBytes, maxFiles, maxVersions are positive integers", capability::value_types),
    scenario!("WS-CAP-003", "RFC 0059 §A (Phase-0 ruling 2)", VERSIONED, "A versioned host advertises maxVersions", capability::versioned_has_max_versions),
    scenario!("WS-CAP-004", "RFC 0059 §C, WIRE §3", NO_WS, "Without workspace.supported the file endpoints answer 501 capability_not_provided", capability::unsupported_answers_501),

    scenario!("WS-PUT-001", "RFC 0059 §C", WS, "PUT of a new path: 200, version 1, string etag", write::create_is_version_one),
    scenario!("WS-PUT-002", "RFC 0059 §C", WS, "PUT of an existing path: version + 1, new etag", write::replace_bumps_version),
    scenario!("WS-PUT-003", "RFC 0059 §B, WIRE §4", WS, "contentType defaults to text/markdown; a given one is kept", write::content_type_default),
    scenario!("WS-PUT-004", "WIRE §4", WS, "An unknown body key answers 400 validation_error", write::unknown_key_refused),
    scenario!("WS-PUT-005", "WIRE §3", WS, "`content` that is not a string answers 400 validation_error", write::content_not_string),
    scenario!("WS-PUT-006", "RFC 0059 §B, WIRE §3", WS, "A body without `content`, broken JSON or a non-object answers 400", write::bad_json_refused),
    scenario!("WS-PUT-007", "WIRE §3", WS, "A PUT body that is not application/json answers 415 unsupported_media_type", write::non_json_media_type),
    scenario!("WS-PUT-008", "WIRE §3", WS, "application/json with a charset parameter is accepted", write::json_with_charset),
    scenario!("WS-PUT-009", "RFC 0059 §B", WS, "Content round-trips byte for byte (multi-byte UTF-8, escapes, empty)", write::content_round_trips),
    scenario!("WS-PUT-010", "RFC 0059 §C", WS, "A refused write (400, 415, 409) changes nothing", write::refused_write_changes_nothing),

    scenario!("WS-GET-001", "RFC 0059 §B, WIRE §4", WS, "GET answers exactly the six WorkspaceFile fields; ETag header equals etag", read::all_fields_and_etag_header),
    scenario!("WS-GET-002", "RFC 0059 §C", WS, "GET of an absent path answers 404 not_found", read::absent_is_404),
    scenario!("WS-GET-003", "WIRE §4", WS, "The PUT answer is the stored file (equals the next GET)", read::put_answer_equals_get),

    scenario!("WS-LIST-001", "RFC 0059 §C", WS, "List entries are metadata without a `content` key", list::entries_without_content),
    scenario!("WS-LIST-002", "RFC 0059 Phase-0 ruling 1, WIRE §4", WS, "?prefix= is a plain string prefix filter", list::prefix_filter),
    scenario!("WS-LIST-003", "WIRE §4", WS, "List is sorted by path in byte order", list::sorted_by_bytes),
    scenario!("WS-LIST-004", "WIRE §4", WS, "List entries agree with GET (version, etag, contentType, updatedAt)", list::entries_agree_with_get),
    scenario!("WS-LIST-005", "WIRE §4", WS, "List shows live files only", list::live_files_only),

    scenario!("WS-PATH-001", "WIRE §4", WS, "Raw and %2F-encoded paths name the same file", paths::raw_and_encoded_are_one_file),
    scenario!("WS-PATH-002", "RFC 0059 §B, WIRE §4", WS, "Every refused path vector answers 400 validation_error (sent byte for byte)", paths::refused_vectors),
    scenario!("WS-PATH-003", "RFC 0059 §B, WIRE §4", WS, "Every legal path vector is accepted; %2F names the raw file", paths::accepted_vectors),
    scenario!("WS-PATH-004", "RFC 0059 §B", WS, "A 256-character path is accepted, 257 refused", paths::length_bounds),
    scenario!("WS-PATH-005", "WIRE §4", WS, "A path is percent-decoded exactly once", paths::decoded_once),

    scenario!("WS-ETAG-001", "RFC 0059 §C", WS, "A stale If-Match answers 409 workspace_conflict with details.currentVersion", etag::stale_if_match_conflicts),
    scenario!("WS-ETAG-002", "RFC 0059 §C", WS, "A fresh If-Match succeeds with version + 1", etag::fresh_if_match_succeeds),
    scenario!("WS-ETAG-003", "WIRE §3", WS, "If-Match: * matches any live version", etag::if_match_star_existing),
    scenario!("WS-ETAG-004", "WIRE §3", WS, "If-Match on an absent path answers 409 with currentVersion 0", etag::if_match_absent_conflicts),
    scenario!("WS-ETAG-005", "WIRE §4", WS, "If-None-Match: * creates an absent path and refuses an existing one (409)", etag::if_none_match_star),
    scenario!("WS-ETAG-006", "WIRE §3", WS, "An If-Match list matches any of its etags", etag::if_match_list),
    scenario!("WS-ETAG-007", "WIRE §4", WS, "DELETE honours If-Match: stale 409 and kept, fresh 204", etag::delete_if_match),
    scenario!("WS-ETAG-008", "WIRE §4", WS, "If-Match compares the exact etag (altered or weak etags do not match)", etag::exact_comparison),

    scenario!("WS-VER-001", "RFC 0059 §C", VERSIONED, "?version=N returns the historical content and etag", versions::historical_content),
    scenario!("WS-VER-002", "WIRE §3", VERSIONED, "?version=0, negative or non-integer answers 400 validation_error", versions::bad_version_refused),
    scenario!("WS-VER-003", "WIRE §4", VERSIONED, "?version= of a version never written answers 404", versions::future_version_404),
    scenario!("WS-VER-004", "RFC 0059 §A (Phase-0 ruling 2)", MAX_VERSIONS, "At least maxVersions versions are retained", versions::retains_max_versions),
    scenario!("WS-VER-005", "WIRE §3 (wsp extension)", UPDATED_BY, "The file, its list entry and its history entries name who wrote each version (updatedBy)", versions::versions_name_their_writer),

    scenario!("WS-BIN-001", "WIRE §3 (wsp extension)", BINARY, "Bytes written with contentEncoding base64 (NUL, invalid UTF-8) read back as the same base64 with their contentType", binary::bytes_round_trip),
    scenario!("WS-BIN-002", "WIRE §3 (wsp extension)", BINARY, "Malformed base64 or an unknown contentEncoding answers 400 validation_error and stores nothing", binary::malformed_base64_refused),
    scenario!("WS-CTX-001", "WIRE §4 (wsp extension), seed 003", CONTEXT, "The live context stays within strict budgets of 1, 40 and 8000 tokens, as JSON and as text/plain, and over a loose one only as overBudget says; bad parameters answer 400", context::live_context_within_budget),
    scenario!("WS-CTX-002", "WIRE §4 (wsp extension), seed 003", RUN_CONTEXT, "A run's context is the workspace's as the run started, and 404 once the run ended", context::run_context_reads_the_snapshot),
    scenario!("WS-SRCH-001", "WIRE §4 (wsp extension)", SEARCH, "Search answers the lines holding the words, more words first, and follows replaces and deletes", memory::search_ranks_and_follows_changes),
    scenario!("WS-SRCH-002", "RFC 0059 §E WCT-1, WIRE §4 (wsp extension)", SEARCH, "A search never shows another tenant's text", memory::search_keeps_to_the_owner),
    scenario!("WS-SRCH-003", "WIRE §3 (wsp extension)", SEARCH, "A search with no or an empty q, a limit outside 1..=100 or an unknown parameter answers 400; punctuation alone matches nothing", memory::bad_searches_refused),
    scenario!("WS-MEM-001", "WIRE §4 (wsp extension)", MEMORY, "24 concurrent memory appends are each in today's log memory/YYYY-MM-DD.md exactly once", memory::concurrent_appends_lose_nothing),
    scenario!("WS-MEM-002", "WIRE §3 (wsp extension)", MEMORY, "A memory line with a break, a blank one, one over 4096 characters or an unknown key answers 400 and writes nothing", memory::bad_lines_refused),
    scenario!("WS-BIN-003", "WIRE §3 (wsp extension)", BINARY_LIMIT, "maxFileBytes counts the decoded bytes of a base64 body", binary::limit_counts_decoded_bytes),

    scenario!("WS-DEL-001", "RFC 0059 §C", WS, "DELETE answers 204 with no body; GET then answers 404", delete::delete_then_404),
    scenario!("WS-DEL-002", "WIRE §4", WS, "DELETE of an absent or deleted path answers 404 not_found", delete::delete_absent_404),
    scenario!("WS-DEL-003", "RFC 0059 §C, WIRE §4", VERSIONED, "?version=N of a deleted life answers 404, also after re-creation", delete::old_life_versions_404),
    scenario!("WS-DEL-004", "WIRE §4", WS, "Re-creation after delete starts at version 1 with an etag never seen before", delete::recreate_fresh_etag),
    scenario!("WS-DEL-005", "WIRE §4", WS, "An If-Match from before a delete never succeeds after it", delete::stale_if_match_across_delete),

    scenario!("WS-LIM-001", "RFC 0059 §A", MAX_FILE_BYTES, "maxFileBytes + 1 answers 413 workspace_too_large (limit maxFileBytes); exactly maxFileBytes 200", limits::max_file_bytes),
    scenario!("WS-LIM-002", "WIRE §3", MAX_FILE_BYTES, "maxFileBytes counts UTF-8 bytes, not characters", limits::counts_utf8_bytes),
    scenario!("WS-LIM-003", "WIRE §3", MAX_FILE_BYTES, "The body limit sits above maxFileBytes: JSON escaping does not count", limits::escaping_does_not_count),
    scenario!("WS-LIM-004", "RFC 0059 §A, WIRE §3", MAX_FILES, "A new path past maxFiles answers 413 workspace_too_large (limit maxFiles)", limits::max_files),
    scenario!("WS-LIM-005", "WIRE §3", REQUEST_BODY, "A body over limits.maxRequestBodyBytes answers 413 workspace_too_large (limit requestBody)", limits::request_body_limit),

    scenario!("WS-ERR-001", "WIRE §3", WS, "Error answers are JSON with exactly error, message and optional details", errors::envelopes),

    scenario!("WS-AUTH-001", "WIRE §2", WS, "No credential: 401 unauthenticated on every operation", auth::no_key),
    scenario!("WS-AUTH-002", "WIRE §2", WS, "An unknown key: 401 unauthenticated on every operation", auth::unknown_key),
    scenario!("WS-AUTH-003", "WIRE §2", WS, "A malformed Authorization header answers 401", auth::malformed_authorization),
    scenario!("WS-AUTH-004", "WIRE §2", WS, "A read-only key gets 403 forbidden (requiredScope workspace:write) on PUT and DELETE", auth::read_only_cannot_write),
    scenario!("WS-AUTH-005", "WIRE §2", WS, "A read-only key can list and read", auth::read_only_can_read),
    scenario!("WS-AUTH-006", "WIRE §2, RFC 6750 §3", WS, "Every 401 carries a WWW-Authenticate: Bearer challenge", auth::challenge_names_bearer),

    scenario!("WS-WCT-001", "RFC 0059 §E WCT-1", WS, "B reading A's file gets exactly the answer for a missing path", isolation::read_like_missing),
    scenario!("WS-WCT-002", "RFC 0059 §E WCT-1", VERSIONED, "B reading ?version=1 of A's file gets the answer for a missing path", isolation::version_like_missing),
    scenario!("WS-WCT-003", "RFC 0059 §E WCT-1", WS, "B reading the history of A's file gets the answer for a missing path (extension)", isolation::history_like_missing),
    scenario!("WS-WCT-004", "RFC 0059 §E WCT-1", WS, "B's list never shows A's files", isolation::list_never_shows),
    scenario!("WS-WCT-005", "RFC 0059 §E WCT-1", WS, "B writing and deleting A's path touches only B's own file", isolation::writes_stay_separate),
    scenario!("WS-WCT-006", "RFC 0059 §E WCT-1", WS, "B deleting A's file gets the answer for a missing path; the file stays", isolation::delete_like_missing),
    scenario!("WS-WCT-007", "RFC 0059 §E WCT-1", WS, "A's etag in B's If-Match is answered as for a missing path", isolation::if_match_like_missing),

    scenario!("WS-IDEM-001", "WIRE §4", WS, "An Idempotency-Key replay returns the first answer and writes once", idempotency::replay_same_answer),
    scenario!("WS-IDEM-002", "WIRE §3", WS, "The same Idempotency-Key with another body answers 409 idempotency_key_mismatch", idempotency::mismatch_refused),
    scenario!("WS-IDEM-003", "WIRE §3", WS, "400 and 401 answers are never cached for an Idempotency-Key", idempotency::validation_not_cached),

    scenario!("WS-ATOM-001", "RFC 0059 §C", WS, "Concurrent readers during large writes only ever see whole bodies", atomicity::readers_see_whole_bodies),
    scenario!("WS-ATOM-002", "RFC 0059 §C, WIRE §4", WS, "Racing writers with one If-Match: exactly one 200, versions gap-free", atomicity::racing_if_match),
    scenario!("WS-ATOM-003", "WIRE §4", WS, "Racing unconditional writers: every acknowledged write gets its own version", atomicity::racing_unconditional),
    scenario!("WS-ATOM-004", "WIRE §4", WS, "Racing If-None-Match: * creators: exactly one 200", atomicity::racing_create_only),

    scenario!("WS-WSR-001", "RFC 0059 §E WSR-1", WS, "A known secret in written content is stored as [REDACTED:<id>]", redaction::secret_is_redacted),

    scenario!("WS-RUN-001", "RFC 0059 §D, WIRE §6", RUNS, "A write after POST /v1/runs is invisible to that run and visible to the next", runs::writes_after_start_are_invisible),
    scenario!("WS-RUN-002", "RFC 0059 §D, WIRE §6", RUNS, "A run's snapshot answers the same after a delete and re-create of the path", runs::snapshot_survives_delete_and_recreate),
    scenario!("WS-RUN-003", "WIRE §6", RUNS, "A cancelled run reports cancelled and its snapshot reads answer 404", runs::ended_runs_release_their_snapshot),
    scenario!("WS-RUN-004", "RFC 0059 §E WCT-1, WIRE §6", RUNS, "Owner B reading A's run gets exactly the answer for an unknown run", runs::other_owner_sees_no_run),
    scenario!("WS-RUN-005", "WIRE §6 (wsp extension)", RUN_LIST, "GET /v1/runs lists the caller's runs newest first across pages, and never another owner's", runs::runs_are_listed_newest_first),
    scenario!("WS-EVT-001", "RFC 0059 §C, WIRE §5", EVENTS, "workspace.updated events arrive in commit order; a delete carries the tombstone's version", runs::events_in_commit_order),
    scenario!("WS-EVT-002", "WIRE §5", EVENTS, "Last-Event-ID resumes with no gap and no duplicate", runs::resume_without_gap_or_duplicate),
    scenario!("WS-EVT-003", "RFC 0059 §E WCT-1, WIRE §5", EVENTS, "Owner B's feed never carries owner A's changes", runs::other_owner_never_sees_events),
    scenario!("WS-EVT-004", "WIRE §5 (wsp extension)", DELETE_EVENTS, "A delete's event payload has deleted: true; a write's has no deleted key", runs::delete_events_say_so),

    scenario!("WS-AGT-001", "RFC 0074 §B", AGENTS, "manifestRuntime has only supported, handoffValidation and installScope (host or tenant)", agents::capability_shape),
    scenario!("WS-AGT-002", "RFC 0074 §A, WIRE §2", AGENTS, "No or an unknown key: 401 on GET /v1/agents and /v1/agents/{id}, never a list", agents::credential_required),
    scenario!("WS-AGT-003", "RFC 0072 §A, WIRE §7", AGENTS, "The inventory is {agents, total}: well-formed entries sorted by agentId, total the count", agents::list_shape),
    scenario!("WS-AGT-004", "RFC 0074 §A, §C", AGENTS, "Tenant scope: A sees exactly the agents its workspace approved", agents::a_sees_its_approved_agents),
    scenario!("WS-AGT-005", "RFC 0074 §A, §C", AGENTS, "Tenant scope: B's inventory shows none of A's agents", agents::b_never_sees_a_agents),
    scenario!("WS-AGT-006", "RFC 0074 §A, §E", AGENTS, "Tenant scope: B's GET of A's agent is exactly the 404 of an agent that does not exist", agents::b_gets_404_for_a_agents),
    scenario!("WS-AGT-007", "RFC 0072 §A", AGENTS, "GET /v1/agents/{id} equals the list entry; an unknown agent is 404", agents::get_matches_the_list),
    scenario!("WS-AGT-008", "RFC 0074 §A, §B", AGENTS, "Host scope: every caller gets the same list", agents::host_scope_is_one_list),
    scenario!("WS-AGT-009", "RFC 0072 §D, WIRE §7", AGENTS, "No inventory answer carries a prompt, its reference or a credential", agents::never_a_prompt),
    scenario!("WS-AGT-010", "WIRE §2, WIRE §7", AGENTS, "A key without agents:read gets 403 forbidden (requiredScope agents:read)", agents::scope_required),
    scenario!("WS-PUB-001", "WIRE §8", PUBLISH, "A private agent publishes into a shared agent's workspace: a new version there each time", agents::publish_private_to_shared),
    scenario!("WS-PUB-002", "WIRE §8", PUBLISH, "A shared agent cannot publish (one way only): 403 forbidden", agents::publish_never_reverse),
    scenario!("WS-PUB-003", "WIRE §8", PUBLISH, "Publishing to an agent that is not shared (private or unknown): 403 forbidden, nothing written", agents::publish_only_to_shared),
    scenario!("WS-PUB-004", "WIRE §8", PUBLISH, "A shared agent never sees the private workspace: its read is the 404 of a missing file", agents::shared_never_sees_private),
    scenario!("WS-PUB-005", "WIRE §8", PUBLISH, "Publishing an absent file is 404; without a key 401", agents::publish_absent_and_unauthenticated),
];

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn ids_are_unique_well_formed_and_enough() {
        let mut seen = HashSet::new();
        for s in CATALOGUE {
            assert!(seen.insert(s.id), "duplicate id {}", s.id);
            let parts: Vec<&str> = s.id.split('-').collect();
            assert_eq!(parts.len(), 3, "{}", s.id);
            assert_eq!(parts[0], "WS");
            assert!(parts[1].chars().all(|c| c.is_ascii_uppercase()), "{}", s.id);
            assert!(
                parts[2].len() == 3 && parts[2].chars().all(|c| c.is_ascii_digit()),
                "{}",
                s.id
            );
            assert!(!s.clause.is_empty() && !s.title.is_empty(), "{}", s.id);
            assert!(
                ["RFC 0059", "RFC 0072", "RFC 0074", "WIRE §"]
                    .iter()
                    .any(|c| s.clause.starts_with(c)),
                "{} is tied to no clause",
                s.id
            );
        }
        assert!(CATALOGUE.len() >= 40, "only {} scenarios", CATALOGUE.len());
    }

    #[test]
    fn readme_table_lists_every_scenario() {
        let readme = include_str!("../../../conformance/README.md");
        for s in CATALOGUE {
            let row = format!("| `{}` |", s.id);
            assert!(
                readme.contains(&row),
                "conformance/README.md has no row for {}",
                s.id
            );
        }
    }
}
