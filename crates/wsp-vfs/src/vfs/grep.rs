//! `grep`: lines of text files that contain a literal string or match a regular expression.

use regex::RegexBuilder;

use super::{Vfs, as_text, cut, parse_path};
use crate::error::VfsError;
use crate::store::Fail;
use crate::tools::{GrepArgs, GrepMatch, GrepMatches, ToolName};

impl Vfs {
    /// `grep`: lines of text files containing a literal string (or matching a regex).
    pub async fn grep(&self, args: GrepArgs) -> Result<GrepMatches, VfsError> {
        let root = parse_path(args.path.as_deref().unwrap_or("/"))?;
        if args.pattern.is_empty() {
            return Err(VfsError::invalid_argument(
                "pattern is empty; give the text to search for",
            ));
        }
        let source = if args.regex {
            args.pattern.clone()
        } else {
            regex::escape(&args.pattern)
        };
        let re = RegexBuilder::new(&source)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| VfsError::invalid_argument(format!("the regex is not valid: {e}")))?;
        let cap = args
            .max_results
            .unwrap_or(self.limits.default_grep_results)
            .clamp(1, self.limits.max_grep_results);
        let (files, mut truncated) = self.search_files(&root, ToolName::Grep).await?;
        let mut out = GrepMatches {
            matches: Vec::new(),
            truncated: false,
            files_searched: 0,
            skipped_binary: 0,
            skipped_large: 0,
            skipped_refused: 0,
        };
        'files: for f in files {
            // Files of unknown size are checked by the read, which stops past the limit.
            if f.size
                .is_some_and(|size| size > self.limits.grep_max_file_bytes)
            {
                out.skipped_large += 1;
                continue;
            }
            let bytes = match f
                .ws
                .store
                .read(&f.rel, self.limits.grep_max_file_bytes)
                .await
            {
                Ok(file) => file.bytes,
                Err(Fail::TooLarge { .. }) => {
                    out.skipped_large += 1;
                    continue;
                }
                Err(
                    Fail::Symlink
                    | Fail::HardLink
                    | Fail::SpecialFile
                    | Fail::Escape
                    | Fail::HostDenied
                    | Fail::Loop,
                ) => {
                    out.skipped_refused += 1;
                    continue;
                }
                Err(_) => continue,
            };
            let Some(text) = as_text(&bytes) else {
                out.skipped_binary += 1;
                continue;
            };
            out.files_searched += 1;
            for (i, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    if out.matches.len() as u64 == cap {
                        truncated = true;
                        break 'files;
                    }
                    out.matches.push(GrepMatch {
                        path: f.path.clone(),
                        line: i as u64 + 1,
                        text: cut(line, self.limits.max_grep_line_chars),
                    });
                }
            }
        }
        out.truncated = truncated;
        Ok(out)
    }
}
