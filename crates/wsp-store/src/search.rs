//! Full-text search of an owner's live text files: the query, the ranked lines it finds, and
//! the line scoring every backend shares (so that the same files give the same answer on
//! memory, SQLite and PostgreSQL).
//!
//! A backend with an index (SQLite FTS5, PostgreSQL text search) uses it to pick the candidate
//! files, at most [`MAX_CANDIDATE_FILES`], best first; [`scan_lines`] then finds the matching
//! lines of each and [`rank`] orders them. The default ([`crate::WorkspaceStore::search`])
//! scans every live text file under the prefix.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use wsp_types::{WorkspacePath, WorkspacePrefix};

/// The longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 256;
/// The most results one search returns.
pub const MAX_SEARCH_RESULTS: usize = 100;
/// The most files an indexed search reads lines from (the best-ranked first).
pub const MAX_CANDIDATE_FILES: usize = 200;
/// How much of a file an index covers, in characters (PostgreSQL's text search value is
/// bounded; both indexed backends cover the same part, so they answer alike).
pub const INDEXED_CHARS: usize = 200_000;
/// Characters of a matching line shown in a result.
pub const SNIPPET_CHARS: usize = 240;

/// A validated search: the words to find, where, and how many results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    text: String,
    terms: Vec<String>,
    prefix: WorkspacePrefix,
    limit: usize,
}

/// Why a search was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchQueryError {
    /// No word (a run of letters or digits) in the query, or the query is too long.
    #[error(
        "the query must hold at least one word (letters or digits) in at most {MAX_QUERY_CHARS} characters"
    )]
    NoWords,
    /// A limit outside 1..=[`MAX_SEARCH_RESULTS`].
    #[error("the limit must be from 1 to {MAX_SEARCH_RESULTS}")]
    Limit,
}

impl SearchQuery {
    /// A search for the words of `text` in the files under `prefix`, at most `limit` results.
    ///
    /// ```
    /// use wsp_store::SearchQuery;
    /// use wsp_types::WorkspacePrefix;
    /// let q = SearchQuery::new("Friday DEPLOY, deploy!", WorkspacePrefix::all(), 10).unwrap();
    /// assert_eq!(q.terms(), ["friday", "deploy"]);
    /// assert!(SearchQuery::new("...", WorkspacePrefix::all(), 10).is_err());
    /// ```
    pub fn new(
        text: &str,
        prefix: WorkspacePrefix,
        limit: usize,
    ) -> Result<Self, SearchQueryError> {
        if text.chars().count() > MAX_QUERY_CHARS {
            return Err(SearchQueryError::NoWords);
        }
        let terms = terms(text);
        if terms.is_empty() {
            return Err(SearchQueryError::NoWords);
        }
        if !(1..=MAX_SEARCH_RESULTS).contains(&limit) {
            return Err(SearchQueryError::Limit);
        }
        Ok(Self {
            text: text.to_owned(),
            terms,
            prefix,
            limit,
        })
    }

    /// This search under another prefix.
    pub fn with_prefix(mut self, prefix: WorkspacePrefix) -> Self {
        self.prefix = prefix;
        self
    }

    /// The query as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its words: lowercase runs of letters and digits, each once, in order.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Only files whose path starts with this are searched.
    pub fn prefix(&self) -> &WorkspacePrefix {
        &self.prefix
    }

    /// The most results returned.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The file.
    pub path: WorkspacePath,
    /// The line's number, from 1.
    pub line: u64,
    /// The line, trimmed, cut at [`SNIPPET_CHARS`] characters (then ending in `…`).
    pub snippet: String,
    /// How well it matches: 100 per distinct word present, plus one per further occurrence
    /// (at most 99). Higher is better.
    pub score: u32,
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchResults {
    /// The best lines, at most the query's limit: by score, then newer path (a later daily
    /// log first), then line.
    pub hits: Vec<SearchHit>,
    /// Matching lines found in all (more than `hits` when the limit cut them).
    pub total: u64,
    /// Files whose lines were read.
    pub files: u64,
    /// More files matched than were read ([`MAX_CANDIDATE_FILES`]): narrow the prefix or the
    /// words to see the rest.
    pub truncated: bool,
}

/// The words of a query: lowercase runs of letters and digits, each once, in order.
pub fn terms(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// How well `line` matches `terms` (see [`SearchHit::score`]); `None` when no word is in it.
/// A query word matches each word of the line that starts with it, case-insensitively
/// (`deploy` matches `Deploys`, not `redeploy`), as the indexes' prefix queries do.
pub fn score_line(line: &str, terms: &[String]) -> Option<u32> {
    let words: Vec<String> = line
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut distinct = 0u32;
    let mut occurrences = 0u32;
    for term in terms {
        let n = words
            .iter()
            .filter(|w| w.starts_with(term.as_str()))
            .count();
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        if n > 0 {
            distinct += 1;
            occurrences = occurrences.saturating_add(n - 1);
        }
    }
    (distinct > 0).then(|| distinct * 100 + occurrences.min(99))
}

/// `line` as a result shows it: trimmed, cut at [`SNIPPET_CHARS`] characters.
pub fn snippet(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// The matching lines of a text: each line's number (from 1), score and snippet.
pub fn matching_lines<'a>(
    text: &'a str,
    terms: &'a [String],
) -> impl Iterator<Item = (u64, u32, String)> + 'a {
    text.lines().enumerate().filter_map(|(i, line)| {
        score_line(line, terms).map(|score| (i as u64 + 1, score, snippet(line)))
    })
}

/// The matching lines of one file's text.
pub fn scan_lines(path: &WorkspacePath, text: &str, terms: &[String]) -> Vec<SearchHit> {
    matching_lines(text, terms)
        .map(|(line, score, snippet)| SearchHit {
            path: path.clone(),
            line,
            snippet,
            score,
        })
        .collect()
}

/// The order of matching lines, smallest first: higher score, then the later path in byte order
/// (a newer daily log first), then the earlier line. Every surface that ranks lines sorts by it.
pub fn rank_key(score: u32, path: &str, line: u64) -> (Reverse<u32>, Reverse<&str>, u64) {
    (Reverse(score), Reverse(path), line)
}

/// Orders `hits` ([`rank_key`]), keeps the best `limit`, and counts them.
pub fn rank(mut hits: Vec<SearchHit>, limit: usize, files: u64, truncated: bool) -> SearchResults {
    hits.sort_by(|a, b| {
        rank_key(a.score, a.path.as_str(), a.line).cmp(&rank_key(b.score, b.path.as_str(), b.line))
    });
    let total = hits.len() as u64;
    hits.truncate(limit);
    SearchResults {
        hits,
        total,
        files,
        truncated,
    }
}

/// The one token that names `owner` in a full-text index: `o`, the tenant's UTF-8 bytes in
/// lowercase hex, `x`, the workspace's. Letters and digits only, so every tokenizer keeps it
/// whole; an index that folds case (SQLite's `unicode61`, PostgreSQL's `simple`) matches it
/// however the hex digits were written. A query that requires it reads only the owner's entries.
///
/// ```
/// let owner = wsp_types::Owner::parse("t", "w").unwrap();
/// assert_eq!(wsp_store::search::owner_token(&owner), "o74x77");
/// ```
pub fn owner_token(owner: &wsp_types::Owner) -> String {
    use std::fmt::Write as _;
    let mut token = String::from("o");
    for b in owner.tenant.as_str().bytes() {
        let _ = write!(token, "{b:02x}");
    }
    token.push('x');
    for b in owner.workspace.as_str().bytes() {
        let _ = write!(token, "{b:02x}");
    }
    token
}

/// `text` cut to what an index covers ([`INDEXED_CHARS`]).
pub fn indexed_part(text: &str) -> &str {
    match text.char_indices().nth(INDEXED_CHARS) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_more_of_the_words_rank_higher() {
        let t = terms("Deploy FRIDAY deploy");
        assert_eq!(t, ["deploy", "friday"]);
        let both = score_line("No deploys on Friday", &t).unwrap();
        let one = score_line("deploy deploy deploy", &t).unwrap();
        assert!(both > one, "{both} > {one}");
        assert_eq!(score_line("nothing here", &t), None);
        assert_eq!(
            score_line("we redeploy", &t),
            None,
            "words match at their start"
        );
        assert!(terms("--- ...").is_empty());
    }

    #[test]
    fn a_snippet_is_cut_on_a_character_boundary() {
        let long = "é".repeat(SNIPPET_CHARS + 10);
        let s = snippet(&long);
        assert_eq!(s.chars().count(), SNIPPET_CHARS + 1);
        assert!(s.ends_with('…'));
        assert_eq!(snippet("  short  "), "short");
        assert_eq!(indexed_part("abc"), "abc");
        assert_eq!(
            indexed_part(&"ü".repeat(INDEXED_CHARS + 5)).chars().count(),
            INDEXED_CHARS
        );
    }

    #[test]
    fn queries_are_bounded() {
        let root = WorkspacePrefix::all;
        assert_eq!(
            SearchQuery::new(&"a ".repeat(100), root(), 5)
                .unwrap()
                .terms(),
            ["a"]
        );
        assert_eq!(
            SearchQuery::new(&"x".repeat(MAX_QUERY_CHARS + 1), root(), 5),
            Err(SearchQueryError::NoWords)
        );
        assert_eq!(
            SearchQuery::new("x", root(), 0),
            Err(SearchQueryError::Limit)
        );
        assert_eq!(
            SearchQuery::new("x", root(), MAX_SEARCH_RESULTS + 1),
            Err(SearchQueryError::Limit)
        );
    }
}
