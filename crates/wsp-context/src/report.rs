//! What the assembler did, for the caller: [`ContextReport`].

use serde::{Deserialize, Serialize};

/// What one call of the assembler included, truncated, skipped and why. Serializes to JSON
/// (camelCase keys), e.g. for `wsp context render --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextReport {
    /// What was read (`snapshot <id> of <owner>`, `live workspace <owner>`, ...).
    pub source: String,
    /// The token counter's name (`chars/4` by default).
    pub tokenizer: String,
    /// The budget, in tokens.
    pub budget_tokens: usize,
    /// What the rendered text costs, counted as a whole; never above `budget_tokens`.
    pub used_tokens: usize,
    /// The budget could not even hold the frame and one marker per file, so the text is a single
    /// `[TRUNCATED: ...]` line (or empty) and every entry below is omitted.
    pub collapsed: bool,
    /// `AGENTS.md` alone was larger than the budget and was loaded in full anyway (seed 003:
    /// the persona is never cut), every other file cut to its marker: `usedTokens` is then over
    /// `budgetTokens`, and the text says so first. Never with `strict_budget`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_budget: bool,
    /// One entry per file, listing or index the assembler considered, in rendering order; index
    /// entries that could not be read follow their index.
    pub entries: Vec<ReportEntry>,
}

/// One file, listing or index in a [`ContextReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportEntry {
    /// Which part of the context.
    pub section: Section,
    /// The workspace path (a directory prefix such as `knowledge/` for listings and indexes),
    /// under [`ContextConfig::path_root`](crate::ContextConfig::path_root) when one is set.
    pub path: String,
    /// What happened to it.
    pub outcome: EntryOutcome,
    /// Its full body, in tokens (0 when missing or skipped).
    pub full_tokens: usize,
    /// How much of the body is in the text, in tokens.
    pub included_tokens: usize,
    /// How much was left out, in tokens (as the inline marker says).
    pub omitted_tokens: usize,
    /// Its floor: body tokens reserved for it before the rest of the budget goes by priority
    /// (it takes only what its body needs).
    pub floor_tokens: usize,
    /// Why it was skipped or cut, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Closing tags of the context's own blocks found in the content and neutralized
    /// (`</workspace_` became `<\/workspace_`) so file data cannot end its block early.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub escaped_tags: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The parts of the run-start context, in rendering and priority order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Section {
    /// `## Session Context`: the date, the workspace's path and the session, before the files.
    Session,
    /// `## Workspace guidance`: how the workspace is laid out and kept, before the files.
    Guidance,
    /// `AGENTS.md`: persona and behaviour guidelines.
    Agents,
    /// `MEMORY.md`: curated long-term memory.
    Memory,
    /// `MEMORY-INDEX.json`: the machine-loaded memory index (RFC 0059 ruling 3), when present.
    MemoryIndex,
    /// `knowledge/KNOWLEDGE.md`: the domain knowledge entry point.
    Knowledge,
    /// The listing of `knowledge/`.
    KnowledgeListing,
    /// A configured extra file.
    Extra,
    /// The index of `skills/*/SKILL.md`.
    Skills,
    /// The index of `subagents/*.md`.
    Subagents,
}

/// What happened to a [`ReportEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EntryOutcome {
    /// In the text in full.
    Included,
    /// In the text up to a `[TRUNCATED: N tokens omitted, read <path>]` marker.
    Truncated,
    /// Only its `[TRUNCATED: ...]` marker is in the text: no room for any of the body.
    Omitted,
    /// No such file: `[MISSING: <path>]` in the text.
    Missing,
    /// The source refused it (a symbolic link leaving the workspace, ...): `[SKIPPED: <path>:
    /// <reason>]` in the text.
    Skipped,
}

impl ContextReport {
    /// One line for a terminal: tokens used and what was not included in full.
    ///
    /// `context: 812/8000 tokens (chars/4); 4 included, 1 truncated (MEMORY.md), 1 missing (SOUL.md)`
    pub fn summary(&self) -> String {
        let mut line = format!(
            "context: {}/{} tokens ({})",
            self.used_tokens, self.budget_tokens, self.tokenizer
        );
        if self.collapsed {
            line.push_str("; budget too small, everything omitted");
        }
        if self.over_budget {
            line.push_str("; OVER BUDGET: AGENTS.md alone is larger, loaded in full");
        }
        let groups = [
            (EntryOutcome::Included, "included"),
            (EntryOutcome::Truncated, "truncated"),
            (EntryOutcome::Omitted, "omitted"),
            (EntryOutcome::Missing, "missing"),
            (EntryOutcome::Skipped, "skipped"),
        ];
        let mut first = true;
        for (outcome, word) in groups {
            let paths: Vec<&str> = self
                .entries
                .iter()
                .filter(|e| e.outcome == outcome)
                .map(|e| e.path.as_str())
                .collect();
            if paths.is_empty() {
                continue;
            }
            line.push_str(if first { "; " } else { ", " });
            first = false;
            line.push_str(&format!("{} {word}", paths.len()));
            if outcome != EntryOutcome::Included {
                line.push_str(&format!(" ({})", paths.join(", ")));
            }
        }
        line
    }
}
