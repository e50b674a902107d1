//! `read_file`: numbered lines of a text file, a window of them, and its etag.

use super::{Vfs, as_text, cut, word};
use crate::error::{VfsError, VfsErrorCode};
use crate::path::VirtualPath;
use crate::scope::Operation;
use crate::store::{Fail, FileBytes};
use crate::tools::{FileRead, ReadFileArgs, ToolName};

/// One whole file as [`Vfs::read_whole`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeFile {
    /// The file.
    pub path: VirtualPath,
    /// Its etag.
    pub etag: String,
    /// Its bytes (UTF-8 text, or not: the caller decides what to do with bytes).
    pub bytes: Vec<u8>,
}

impl Vfs {
    /// One file's whole content, for a host that injects it (the run-start context) rather than a
    /// model that pages it: the same scope check as `read_file` (so never on a write-only
    /// Workspace) and the same byte limit (`TooLarge` past it).
    pub async fn read_whole(&self, path: &str) -> Result<WholeFile, VfsError> {
        let (path, ws, rel) = self.authorize_file(path, Operation::Read, ToolName::ReadFile)?;
        let file = ws
            .store
            .read(&rel, self.limits.max_read_bytes)
            .await
            .map_err(|f| match f {
                Fail::TooLarge { max } => VfsError::new(
                    VfsErrorCode::TooLarge,
                    format!("{path} is over the read limit of {max} bytes"),
                ),
                f => word(f, &path),
            })?;
        Ok(WholeFile {
            path,
            etag: file.etag.into_string(),
            bytes: file.bytes,
        })
    }

    /// `read_file`: numbered lines of a text file and its etag.
    pub async fn read_file(&self, args: ReadFileArgs) -> Result<FileRead, VfsError> {
        let (path, ws, rel) =
            self.authorize_file(&args.path, Operation::Read, ToolName::ReadFile)?;
        if args.limit == Some(0) {
            return Err(VfsError::invalid_argument(
                "limit must be at least 1 (or left out for the default)",
            ));
        }
        let file = ws.store.read(&rel, self.limits.max_read_bytes).await.map_err(|f| match f {
            Fail::TooLarge { max } => VfsError::new(
                VfsErrorCode::TooLarge,
                format!("{path} is over read_file's limit of {max} bytes; use grep to find what you need in it"),
            ),
            f => word(f, &path),
        })?;
        Ok(self.select_lines(path, file, args.offset, args.limit))
    }

    fn select_lines(
        &self,
        path: VirtualPath,
        file: FileBytes,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> FileRead {
        let size = file.bytes.len() as u64;
        let etag = file.etag.into_string();
        let start_line = offset.unwrap_or(1).max(1);
        let Some(text) = as_text(&file.bytes) else {
            return FileRead {
                path,
                etag,
                size,
                binary: true,
                total_lines: 0,
                start_line,
                lines: vec![],
                more: false,
            };
        };
        let total_lines = line_count(text);
        let limit = limit.unwrap_or(self.limits.default_read_lines);
        // The page also stops before its text (numbered lines) passes `max_read_bytes`, whatever
        // `limit` asks for: a file of empty lines would otherwise cost many times its size.
        let mut text_bytes: u64 = 0;
        let mut lines: Vec<String> = Vec::new();
        for (i, line) in text
            .lines()
            .skip((start_line - 1) as usize)
            .take(limit as usize)
            .enumerate()
        {
            let line = cut(line, self.limits.max_line_chars);
            let number = start_line + i as u64;
            let rendered = numbered_line_bytes(number, line.len());
            if !lines.is_empty() && text_bytes + rendered > self.limits.max_read_bytes {
                break;
            }
            text_bytes += rendered;
            lines.push(line);
        }
        let more = start_line - 1 + (lines.len() as u64) < total_lines;
        FileRead {
            path,
            etag,
            size,
            binary: false,
            total_lines,
            start_line,
            lines,
            more,
        }
    }
}

/// `text.lines().count()`, counting line feeds in one pass over the bytes.
fn line_count(text: &str) -> u64 {
    let feeds = text.bytes().filter(|&b| b == b'\n').count() as u64;
    feeds + u64::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Bytes of `line_len` bytes of text as `read_file` shows it: the number right-aligned in six
/// columns (more when it has more digits), a tab, the text, a line feed.
fn numbered_line_bytes(number: u64, line_len: usize) -> u64 {
    let digits = number.checked_ilog10().unwrap_or(0) as u64 + 1;
    digits.max(6) + 1 + line_len as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_count_agrees_with_str_lines() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\nb\n",
            "\n\n",
            "a\r\nb\r\n",
            "a\r\n\r\nb",
            "é\n€",
        ] {
            assert_eq!(line_count(text), text.lines().count() as u64, "{text:?}");
        }
    }

    #[test]
    fn numbered_lines_are_measured_as_rendered() {
        for (number, line) in [
            (1, ""),
            (7, "abc"),
            (999_999, "x"),
            (1_000_000, "é"),
            (u64::MAX, ""),
        ] {
            let rendered = format!("{number:>6}\t{line}\n");
            assert_eq!(
                numbered_line_bytes(number, line.len()),
                rendered.len() as u64,
                "{rendered:?}"
            );
        }
    }
}
