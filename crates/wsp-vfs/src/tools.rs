//! The file tools: names, input types and schemas, MCP annotations, results and how results read.
//!
//! Plain data only: the MCP server (`wsp-mcp`) turns a [`ToolDefinition`] into its SDK's type.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::path::VirtualPath;
use crate::scope::AccessScope;
use crate::store::EntryKind;

/// A file tool of the `files` profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolName {
    /// `ls {path}`
    Ls,
    /// `read_file {path, offset?, limit?}`
    ReadFile,
    /// `write_file {path, content, if_match?, create_only?}`
    WriteFile,
    /// `edit_file {path, old_string, new_string, replace_all?, if_match?}`
    EditFile,
    /// `delete_file {path}`
    DeleteFile,
    /// `glob {pattern, path?}`
    Glob,
    /// `grep {pattern, path?, regex?, max_results?}`
    Grep,
}

/// What `write_file` does, the first sentence of each of its descriptions.
macro_rules! write_file_text {
    () => {
        "Create a file or replace its whole content; missing parent directories are created."
    };
}

impl ToolName {
    /// Every file tool, in catalogue order.
    pub const ALL: [ToolName; 7] = [
        Self::Ls,
        Self::ReadFile,
        Self::Glob,
        Self::Grep,
        Self::WriteFile,
        Self::EditFile,
        Self::DeleteFile,
    ];

    /// The tool's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ls => "ls",
            Self::ReadFile => "read_file",
            Self::WriteFile => "write_file",
            Self::EditFile => "edit_file",
            Self::DeleteFile => "delete_file",
            Self::Glob => "glob",
            Self::Grep => "grep",
        }
    }

    /// The tool called `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Whether a table whose Workspaces have `scopes` offers this tool (VFS.md, "Tools"):
    /// reading tools when some Workspace is RO or RW, `write_file` when some is RW or WO,
    /// `edit_file` and `delete_file` when some is RW.
    pub fn offered_for(self, scopes: &[AccessScope]) -> bool {
        use AccessScope::*;
        let any = |wanted: &[AccessScope]| scopes.iter().any(|s| wanted.contains(s));
        match self {
            Self::Ls | Self::ReadFile | Self::Glob | Self::Grep => any(&[ReadOnly, ReadWrite]),
            Self::WriteFile => any(&[ReadWrite, WriteOnly]),
            Self::EditFile | Self::DeleteFile => any(&[ReadWrite]),
        }
    }

    /// The tool's definition as a table whose Workspaces have `scopes` offers it: the
    /// [`definition`](Self::definition), except that where no Workspace is readable,
    /// `write_file` neither takes nor mentions `if_match`, whose etag only `read_file` gives.
    pub fn definition_for(self, scopes: &[AccessScope]) -> ToolDefinition {
        let mut def = self.definition();
        if self == Self::WriteFile && !Self::ReadFile.offered_for(scopes) {
            if let Some(properties) = def.input_schema["properties"].as_object_mut() {
                properties.remove("if_match");
            }
            def.description = concat!(
                write_file_text!(),
                " With `create_only: true` it is refused if the file exists."
            )
            .to_owned();
        }
        def
    }

    /// The tool's definition: description, input schema and annotations.
    pub fn definition(self) -> ToolDefinition {
        let (title, description, schema, annotations) = match self {
            Self::Ls => (
                "List a directory",
                "List the entries of a directory in your workspaces. Directories end in '/'; \
                 workspaces mounted below the directory appear as directories. Listing a file \
                 shows that file.",
                input_schema::<LsArgs>(),
                ToolAnnotations::read_only(),
            ),
            Self::ReadFile => (
                "Read a file",
                "Read a text file with numbered lines (like `cat -n`). `offset` is the first line \
                 to show (1-based) and `limit` how many lines; by default up to 2000 lines from \
                 the start. The result ends with the file's etag: pass it as `if_match` to \
                 write_file or edit_file so a change made since you read it is not overwritten.",
                input_schema::<ReadFileArgs>(),
                ToolAnnotations::read_only(),
            ),
            Self::WriteFile => (
                "Write a file",
                concat!(
                    write_file_text!(),
                    " With `if_match` (an etag from read_file) the write is refused if the file \
                     changed since; with `create_only: true` it is refused if the file exists. \
                     To change part of a file, prefer edit_file."
                ),
                input_schema::<WriteFileArgs>(),
                ToolAnnotations {
                    read_only_hint: false,
                    destructive_hint: true,
                    idempotent_hint: true,
                    open_world_hint: false,
                },
            ),
            Self::EditFile => (
                "Edit a file",
                "Replace an exact string in a file. `old_string` must match the file's text \
                 exactly, whitespace and indentation included, and must occur exactly once unless \
                 `replace_all` is true. Read the file first and copy the text from it (without \
                 the line numbers).",
                input_schema::<EditFileArgs>(),
                ToolAnnotations {
                    read_only_hint: false,
                    destructive_hint: true,
                    idempotent_hint: false,
                    open_world_hint: false,
                },
            ),
            Self::DeleteFile => (
                "Delete a file",
                "Delete one file. Directories cannot be deleted.",
                input_schema::<DeleteFileArgs>(),
                ToolAnnotations {
                    read_only_hint: false,
                    destructive_hint: true,
                    idempotent_hint: true,
                    open_world_hint: false,
                },
            ),
            Self::Glob => (
                "Find files by name",
                "Find files whose path matches a glob pattern such as `**/*.md` or `src/*.rs`. A \
                 relative pattern is matched against paths below `path` (default `/`, every \
                 readable workspace); a pattern starting with '/' against the whole path. `*` \
                 stays within one directory, `**` crosses directories. Results are sorted and \
                 capped; the result says when it was cut.",
                input_schema::<GlobArgs>(),
                ToolAnnotations::read_only(),
            ),
            Self::Grep => (
                "Search file contents",
                "Search the text files below `path` (default `/`, every readable workspace) for \
                 lines containing `pattern`. The pattern is a literal string unless `regex` is \
                 true (Rust regex syntax). Returns `path:line: text`, at most `max_results` \
                 matches (default 100); the result says when it was cut and which files were \
                 skipped (binary or large).",
                input_schema::<GrepArgs>(),
                ToolAnnotations::read_only(),
            ),
        };
        ToolDefinition {
            name: self.as_str().to_owned(),
            title: title.to_owned(),
            description: description.to_owned(),
            input_schema: schema,
            annotations,
        }
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The tools offered for Workspaces with `scopes`, in catalogue order; none for an empty table.
///
/// ```
/// use wsp_vfs::{AccessScope, catalogue};
/// let names = |scopes: &[AccessScope]| catalogue(scopes).into_iter().map(|t| t.name).collect::<Vec<_>>();
/// assert_eq!(names(&[AccessScope::ReadOnly]), ["ls", "read_file", "glob", "grep"]);
/// assert_eq!(names(&[AccessScope::WriteOnly]), ["write_file"]);
/// assert!(names(&[]).is_empty());
/// ```
pub fn catalogue(scopes: &[AccessScope]) -> Vec<ToolDefinition> {
    ToolName::ALL
        .into_iter()
        .filter(|t| t.offered_for(scopes))
        .map(|t| t.definition_for(scopes))
        .collect()
}

/// A tool as an MCP server lists it: name, title, description, JSON Schema of the input and
/// annotations. Serializes with MCP's field names (`inputSchema`, `readOnlyHint`, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// The name the model calls.
    pub name: String,
    /// A short human title.
    pub title: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// The JSON Schema (draft 2020-12) of the arguments object.
    pub input_schema: Value,
    /// Hints about the tool's effects.
    pub annotations: ToolAnnotations,
}

/// MCP tool annotations, as plain data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool does not change anything.
    pub read_only_hint: bool,
    /// The tool may destroy or overwrite data.
    pub destructive_hint: bool,
    /// Calling it again with the same arguments has no further effect.
    pub idempotent_hint: bool,
    /// The tool reaches outside the closed set of the agent's workspaces.
    pub open_world_hint: bool,
}

impl ToolAnnotations {
    /// The annotations of a tool that only reads.
    pub fn read_only() -> Self {
        Self {
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }
}

/// The JSON Schema of `T` as a tool input: draft 2020-12, no `$schema`, `title` or top-level
/// `description`, optional fields without a `null` type.
pub(crate) fn input_schema<T: JsonSchema>() -> Value {
    let settings =
        schemars::generate::SchemaSettings::draft2020_12().with(|s| s.meta_schema = None);
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("title");
        // The type's doc comment ("Arguments of ...") says nothing the tool's description does not.
        obj.remove("description");
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            for prop in props.values_mut() {
                let Some(prop) = prop.as_object_mut() else {
                    continue;
                };
                if let Some(Value::Array(types)) = prop.get("type") {
                    let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                    let single = if kept.len() == 1 {
                        kept[0].clone()
                    } else {
                        Value::Array(kept)
                    };
                    prop.insert("type".into(), single);
                }
                if prop.get("default") == Some(&Value::Null) {
                    prop.remove("default");
                }
            }
        }
    }
    value
}

/// Arguments of `ls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LsArgs {
    /// Absolute path of the directory to list, e.g. `/project/src`.
    pub path: String,
}

/// Arguments of `read_file`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// Absolute path of the file, e.g. `/project/README.md`.
    pub path: String,
    /// First line to return, 1-based (0 and 1 both mean the first line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Most lines to return (default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// Arguments of `write_file`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Absolute path of the file to create or replace.
    pub path: String,
    /// The whole new content (UTF-8 text).
    pub content: String,
    /// Only write if the file's current etag is this one (from read_file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_match: Option<String>,
    /// Only write if no file exists at the path.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub create_only: bool,
}

/// Arguments of `edit_file`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// Absolute path of the file to edit.
    pub path: String,
    /// The exact text to replace, copied from the file.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace_all: bool,
    /// Only edit if the file's current etag is this one (from read_file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_match: Option<String>,
}

/// Arguments of `delete_file`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteFileArgs {
    /// Absolute path of the file to delete.
    pub path: String,
}

/// Arguments of `glob`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    /// Glob pattern, e.g. `**/*.md`; relative to `path` unless it starts with '/'.
    pub pattern: String,
    /// Directory to search below (default `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Arguments of `grep`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Text to search for (a literal string unless `regex` is true).
    pub pattern: String,
    /// Directory or file to search (default `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Treat `pattern` as a regular expression (Rust regex syntax).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub regex: bool,
    /// Most matching lines to return (default 100, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_results: Option<u64>,
}

/// What a tool call returns: text for the model and the same result as structured JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutput {
    /// The result as the model reads it.
    pub text: String,
    /// The result as JSON (MCP `structuredContent`).
    pub structured: Value,
}

/// A tool result that renders itself for the model.
pub trait ToolResult: Serialize {
    /// The text the model reads.
    fn render(&self) -> String;

    /// Text and structured JSON together.
    fn into_output(self) -> ToolOutput
    where
        Self: Sized,
    {
        ToolOutput {
            text: self.render(),
            structured: serde_json::to_value(&self).unwrap_or(Value::Null),
        }
    }
}

/// One entry of an `ls` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListEntry {
    /// The name within the directory.
    pub name: String,
    /// File, directory or symbolic link.
    pub kind: EntryKind,
    /// Size in bytes, for files where the store knows it without another call (virtual
    /// Mounts); physical listings leave it out rather than `stat` every entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The entry is a Workspace mounted here.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mount_point: bool,
}

/// The result of `ls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// The path listed.
    pub path: VirtualPath,
    /// `file` when the path is a file (its one entry is the file), else `directory`.
    pub kind: EntryKind,
    /// The entries, sorted by name.
    pub entries: Vec<ListEntry>,
    /// Entries were left out past the listing cap.
    pub truncated: bool,
    /// A remark for the model (e.g. that a write-only Workspace's files are not listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ToolResult for Listing {
    fn render(&self) -> String {
        let mut out = String::new();
        if self.kind == EntryKind::File {
            if let Some(e) = self.entries.first() {
                let _ = writeln!(out, "{} (file, {} bytes)", self.path, e.size.unwrap_or(0));
            }
            return out;
        }
        let _ = writeln!(out, "{}:", self.path);
        if self.entries.is_empty() {
            out.push_str("(empty directory)\n");
        }
        for e in &self.entries {
            match e.kind {
                EntryKind::Directory if e.mount_point => {
                    let _ = writeln!(out, "{}/ (workspace)", e.name);
                }
                EntryKind::Directory => {
                    let _ = writeln!(out, "{}/", e.name);
                }
                EntryKind::File => {
                    let _ = match e.size {
                        Some(size) => writeln!(out, "{} ({size} bytes)", e.name),
                        None => writeln!(out, "{}", e.name),
                    };
                }
                EntryKind::Symlink => {
                    let _ = writeln!(out, "{} (symbolic link)", e.name);
                }
            }
        }
        if self.truncated {
            let _ = writeln!(
                out,
                "(listing cut at {} entries; use glob to narrow it)",
                self.entries.len()
            );
        }
        if let Some(note) = &self.note {
            let _ = writeln!(out, "({note})");
        }
        out
    }

    /// The structured result is a summary: the entries are the text, one per line, so a client
    /// is not sent the listing twice.
    fn into_output(self) -> ToolOutput {
        let mut structured = serde_json::json!({
            "path": self.path,
            "kind": self.kind,
            "entry_count": self.entries.len(),
            "truncated": self.truncated,
        });
        if let Some(note) = &self.note {
            structured["note"] = Value::from(note.as_str());
        }
        ToolOutput {
            text: self.render(),
            structured,
        }
    }
}

/// The result of `read_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileRead {
    /// The file.
    pub path: VirtualPath,
    /// Its etag, for `if_match`.
    pub etag: String,
    /// Its size in bytes.
    pub size: u64,
    /// The file is not UTF-8 text (or contains NUL); no lines are returned.
    pub binary: bool,
    /// Lines in the file.
    pub total_lines: u64,
    /// The 1-based number of the first returned line.
    pub start_line: u64,
    /// The returned lines, without line endings (long lines are cut, saying so).
    pub lines: Vec<String>,
    /// More lines follow the returned ones.
    pub more: bool,
}

impl ToolResult for FileRead {
    fn render(&self) -> String {
        let body: usize = self.lines.iter().map(|l| l.len() + 8).sum();
        let mut out = String::with_capacity(body + 160);
        if self.binary {
            let _ = writeln!(
                out,
                "({} is a binary file of {} bytes; not shown. etag {})",
                self.path, self.size, self.etag
            );
            return out;
        }
        for (i, line) in self.lines.iter().enumerate() {
            let _ = writeln!(out, "{:>6}\t{line}", self.start_line + i as u64);
        }
        if self.total_lines == 0 {
            let _ = writeln!(out, "({} is empty; etag {})", self.path, self.etag);
        } else if self.lines.is_empty() {
            let _ = writeln!(
                out,
                "({} has {} lines; offset {} is past the end. etag {})",
                self.path, self.total_lines, self.start_line, self.etag
            );
        } else {
            let last = self.start_line + self.lines.len() as u64 - 1;
            let more = if self.more {
                format!("; continue with offset={}", last + 1)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "(lines {}-{last} of {}{more}; etag {})",
                self.start_line, self.total_lines, self.etag
            );
        }
        out
    }

    /// The structured result carries everything but the lines: they are the text, numbered, so
    /// a client is not sent the file twice. `returned_lines` says how many the text holds.
    fn into_output(self) -> ToolOutput {
        let structured = serde_json::json!({
            "path": self.path,
            "etag": self.etag,
            "size": self.size,
            "binary": self.binary,
            "total_lines": self.total_lines,
            "start_line": self.start_line,
            "returned_lines": self.lines.len(),
            "more": self.more,
        });
        ToolOutput {
            text: self.render(),
            structured,
        }
    }
}

/// The result of `write_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileWritten {
    /// The file.
    pub path: VirtualPath,
    /// Bytes written.
    pub size: u64,
    /// The new etag; absent on write-only Workspaces, where it would tell whether the file
    /// existed before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// Whether the file was created (rather than replaced); absent on write-only Workspaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
}

impl ToolResult for FileWritten {
    fn render(&self) -> String {
        let how = match self.created {
            Some(true) => " (created)",
            Some(false) => " (replaced)",
            None => "",
        };
        let etag = self
            .etag
            .as_ref()
            .map(|e| format!("; etag {e}"))
            .unwrap_or_default();
        format!("wrote {} bytes to {}{how}{etag}\n", self.size, self.path)
    }
}

/// The result of `edit_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEdited {
    /// The file.
    pub path: VirtualPath,
    /// How many occurrences were replaced.
    pub replacements: u64,
    /// The new etag.
    pub etag: String,
}

impl ToolResult for FileEdited {
    fn render(&self) -> String {
        let s = if self.replacements == 1 { "" } else { "s" };
        format!(
            "replaced {} occurrence{s} in {}; etag {}\n",
            self.replacements, self.path, self.etag
        )
    }
}

/// The result of `delete_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDeleted {
    /// The file that was deleted.
    pub path: VirtualPath,
}

impl ToolResult for FileDeleted {
    fn render(&self) -> String {
        format!("deleted {}\n", self.path)
    }
}

/// The result of `glob`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GlobMatches {
    /// The matching files, sorted.
    pub matches: Vec<VirtualPath>,
    /// The search stopped at a cap, so there may be more.
    pub truncated: bool,
}

impl ToolResult for GlobMatches {
    fn render(&self) -> String {
        let mut out = String::new();
        for m in &self.matches {
            let _ = writeln!(out, "{m}");
        }
        let n = self.matches.len();
        if self.truncated {
            let _ = writeln!(
                out,
                "(results cut at {n} files; there may be more: narrow the pattern or the path)"
            );
        } else {
            let s = if n == 1 { "" } else { "es" };
            let _ = writeln!(out, "({n} match{s})");
        }
        out
    }
}

/// One matching line of `grep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrepMatch {
    /// The file.
    pub path: VirtualPath,
    /// The 1-based line number.
    pub line: u64,
    /// The line (cut when very long).
    pub text: String,
}

/// The result of `grep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrepMatches {
    /// The matching lines, by path then line.
    pub matches: Vec<GrepMatch>,
    /// The search stopped at `max_results` or at the walk cap, so there may be more.
    pub truncated: bool,
    /// Text files searched.
    pub files_searched: u64,
    /// Files skipped as binary (NUL bytes or not UTF-8).
    pub skipped_binary: u64,
    /// Files skipped for their size.
    pub skipped_large: u64,
    /// Files the workspace refused to read (links, special files).
    pub skipped_refused: u64,
}

impl ToolResult for GrepMatches {
    fn render(&self) -> String {
        let mut out = String::new();
        for m in &self.matches {
            let _ = writeln!(out, "{}:{}: {}", m.path, m.line, m.text);
        }
        let n = self.matches.len();
        let s = if n == 1 { "" } else { "es" };
        let _ = write!(
            out,
            "({n} match{s} in {} files searched",
            self.files_searched
        );
        if self.truncated {
            out.push_str("; results cut, there may be more: narrow the pattern or the path, or raise max_results");
        }
        let mut skipped = Vec::new();
        if self.skipped_binary > 0 {
            skipped.push(format!("{} binary", self.skipped_binary));
        }
        if self.skipped_large > 0 {
            skipped.push(format!("{} too large", self.skipped_large));
        }
        if self.skipped_refused > 0 {
            skipped.push(format!("{} refused (links)", self.skipped_refused));
        }
        if !skipped.is_empty() {
            let _ = write!(out, "; skipped {} files", skipped.join(", "));
        }
        out.push_str(")\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_have_exactly_the_documented_arguments() {
        let cases: [(ToolName, &[&str], &[&str]); 7] = [
            (ToolName::Ls, &["path"], &["path"]),
            (ToolName::ReadFile, &["path", "offset", "limit"], &["path"]),
            (
                ToolName::WriteFile,
                &["path", "content", "if_match", "create_only"],
                &["path", "content"],
            ),
            (
                ToolName::EditFile,
                &[
                    "path",
                    "old_string",
                    "new_string",
                    "replace_all",
                    "if_match",
                ],
                &["path", "old_string", "new_string"],
            ),
            (ToolName::DeleteFile, &["path"], &["path"]),
            (ToolName::Glob, &["pattern", "path"], &["pattern"]),
            (
                ToolName::Grep,
                &["pattern", "path", "regex", "max_results"],
                &["pattern"],
            ),
        ];
        for (tool, props, required) in cases {
            let schema = tool.definition().input_schema;
            assert_eq!(schema["type"], "object", "{tool}");
            assert_eq!(schema["additionalProperties"], false, "{tool}");
            let mut have: Vec<&str> = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            have.sort_unstable();
            let mut want = props.to_vec();
            want.sort_unstable();
            assert_eq!(have, want, "{tool}");
            let mut req: Vec<&str> = schema["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            req.sort_unstable();
            let mut want_req = required.to_vec();
            want_req.sort_unstable();
            assert_eq!(req, want_req, "{tool}");
            for (name, prop) in schema["properties"].as_object().unwrap() {
                assert!(
                    prop["type"].is_string(),
                    "{tool}.{name} has type {}",
                    prop["type"]
                );
                assert!(
                    prop["description"].is_string(),
                    "{tool}.{name} lacks a description"
                );
            }
            assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
        }
    }

    /// `if_match` takes an etag from `read_file`: a table with no readable Workspace offers no
    /// `read_file`, so its `write_file` neither takes nor mentions `if_match`; a table with one
    /// keeps it (the write-only Workspaces among them refuse it per call).
    #[test]
    fn a_write_only_table_is_not_offered_if_match() {
        let write_file = |scopes: &[AccessScope]| {
            catalogue(scopes)
                .into_iter()
                .find(|t| t.name == "write_file")
                .unwrap()
        };
        let alone = write_file(&[AccessScope::WriteOnly]);
        assert!(
            alone.input_schema["properties"].get("if_match").is_none(),
            "{}",
            alone.input_schema
        );
        assert!(
            !alone.description.contains("if_match"),
            "{}",
            alone.description
        );
        assert!(
            !alone.description.contains("read_file"),
            "{}",
            alone.description
        );
        assert!(
            alone.description.contains("create_only"),
            "{}",
            alone.description
        );
        for scopes in [
            &[AccessScope::ReadWrite][..],
            &[AccessScope::WriteOnly, AccessScope::ReadOnly],
        ] {
            let def = write_file(scopes);
            assert!(
                def.input_schema["properties"].get("if_match").is_some(),
                "{scopes:?}"
            );
            assert_eq!(def, ToolName::WriteFile.definition());
        }
    }

    #[test]
    fn annotations_serialize_with_mcp_names() {
        let def = ToolName::WriteFile.definition();
        let json = serde_json::to_value(&def).unwrap();
        assert_eq!(json["annotations"]["readOnlyHint"], false);
        assert_eq!(json["annotations"]["destructiveHint"], true);
        assert_eq!(json["annotations"]["idempotentHint"], true);
        assert!(json["inputSchema"].is_object());
        for tool in [
            ToolName::Ls,
            ToolName::ReadFile,
            ToolName::Glob,
            ToolName::Grep,
        ] {
            assert!(tool.definition().annotations.read_only_hint, "{tool}");
        }
        for tool in [
            ToolName::WriteFile,
            ToolName::EditFile,
            ToolName::DeleteFile,
        ] {
            let a = tool.definition().annotations;
            assert!(!a.read_only_hint && a.destructive_hint, "{tool}");
        }
        assert!(!ToolName::EditFile.definition().annotations.idempotent_hint);
    }

    #[test]
    fn read_structured_result_leaves_the_lines_to_the_text() {
        let read = FileRead {
            path: VirtualPath::parse("/p/a.md").unwrap(),
            etag: "\"e\"".into(),
            size: 8,
            binary: false,
            total_lines: 3,
            start_line: 2,
            lines: vec!["two".into()],
            more: true,
        };
        let out = read.into_output();
        assert_eq!(out.structured["returned_lines"], 1);
        assert_eq!(out.structured["etag"], "\"e\"");
        assert_eq!(out.structured["path"], "/p/a.md");
        assert!(out.structured.get("lines").is_none());
        assert!(out.text.starts_with("     2\ttwo\n"));
    }

    #[test]
    fn read_result_reads_like_cat_n() {
        let read = FileRead {
            path: VirtualPath::parse("/p/a.md").unwrap(),
            etag: "\"e\"".into(),
            size: 8,
            binary: false,
            total_lines: 3,
            start_line: 2,
            lines: vec!["two".into()],
            more: true,
        };
        assert_eq!(
            read.render(),
            "     2\ttwo\n(lines 2-2 of 3; continue with offset=3; etag \"e\")\n"
        );
    }
}
