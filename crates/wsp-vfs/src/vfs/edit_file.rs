//! `edit_file`: replace an exact string in a text file, once or everywhere.

use super::{Vfs, as_text, etag_arg, word};
use crate::error::{VfsError, VfsErrorCode};
use crate::scope::Operation;
use crate::store::Fail;
use crate::tools::{EditFileArgs, FileEdited, ToolName};

impl Vfs {
    /// `edit_file`: replace an exact string, once or everywhere.
    pub async fn edit_file(&self, args: EditFileArgs) -> Result<FileEdited, VfsError> {
        let (path, ws, rel) =
            self.authorize_file(&args.path, Operation::Edit, ToolName::EditFile)?;
        if args.old_string.is_empty() {
            return Err(VfsError::invalid_argument(
                "old_string is empty; copy the exact text to replace from the file, or use write_file to replace the whole file",
            ));
        }
        if args.old_string == args.new_string {
            return Err(VfsError::invalid_argument(
                "old_string and new_string are the same; there is nothing to change",
            ));
        }
        let file = ws
            .store
            .read_to_change(&rel, self.limits.max_read_bytes)
            .await
            .map_err(|f| word(f, &path))?;
        if let Some(tag) = &args.if_match
            && etag_arg(tag) != file.etag
        {
            return Err(VfsError::stale(&path));
        }
        let text = as_text(&file.bytes).ok_or_else(|| {
            VfsError::invalid_argument(format!(
                "{path} is a binary file; edit_file changes text files only"
            ))
        })?;
        // Count the matches, keeping the first few positions for the message: nothing here
        // grows with the number of matches.
        const SHOWN: usize = 10;
        let mut count: u64 = 0;
        let mut first: Vec<usize> = Vec::with_capacity(SHOWN);
        for (at, _) in text.match_indices(&args.old_string) {
            if first.len() < SHOWN {
                first.push(at);
            }
            count += 1;
        }
        let line_of = |at: usize| text[..at].matches('\n').count() + 1;
        match count {
            0 => {
                return Err(VfsError::invalid_argument(format!(
                    "old_string was not found in {path}. Read the file again and copy the exact text, including \
                     whitespace and indentation, without the line numbers"
                )));
            }
            n if n > 1 && !args.replace_all => {
                let lines: Vec<String> = first.iter().map(|at| line_of(*at).to_string()).collect();
                return Err(VfsError::invalid_argument(format!(
                    "old_string occurs {n} times in {path} (at lines {}); include more of the surrounding text to \
                     make it unique, or set replace_all to true to replace every occurrence",
                    lines.join(", ")
                )));
            }
            _ => {}
        }
        // The result's size, from the count, is checked before a byte of it is built.
        let max = self.limits.max_write_bytes;
        let too_large = |size: Option<u64>| {
            let size = size.map_or_else(|| "more than 2^64".to_owned(), |s| s.to_string());
            VfsError::new(
                VfsErrorCode::TooLarge,
                format!(
                    "the edited file would be {size} bytes, over write_file's limit of {max} bytes; \
                     replace fewer occurrences or with shorter text"
                ),
            )
        };
        let replaced = if args.replace_all { count } else { 1 };
        let new_size = size_after_replacing(
            text.len() as u64,
            replaced,
            args.old_string.len() as u64,
            args.new_string.len() as u64,
        );
        let new_len = match new_size {
            Some(size) if size <= max => size as usize,
            size => return Err(too_large(size)),
        };
        let mut new_text = String::with_capacity(new_len);
        let mut rest = 0;
        for (at, old) in text.match_indices(&args.old_string).take(replaced as usize) {
            new_text.push_str(&text[rest..at]);
            new_text.push_str(&args.new_string);
            rest = at + old.len();
        }
        new_text.push_str(&text[rest..]);
        debug_assert_eq!(new_text.len(), new_len);
        let cond = crate::store::WriteCondition::IfMatch(file.etag);
        let written = ws
            .store
            .write(&rel, new_text, cond, self.compare_limit())
            .await
            .map_err(|f| match f {
                // Grown past the limit since it was read: it changed.
                Fail::Stale | Fail::TooLargeToCompare { .. } => VfsError::new(
                    VfsErrorCode::Conflict,
                    format!("{path} changed while it was being edited; read it again and retry"),
                ),
                f => word(f, &path),
            })?;
        Ok(FileEdited {
            path,
            replacements: replaced,
            etag: written.etag.into_string(),
        })
    }
}

/// `content_len` after `count` non-overlapping occurrences of `old_len` bytes become `new_len`
/// bytes each; `None` when that does not fit in a `u64`.
fn size_after_replacing(content_len: u64, count: u64, old_len: u64, new_len: u64) -> Option<u64> {
    content_len
        .checked_sub(count.checked_mul(old_len)?)?
        .checked_add(count.checked_mul(new_len)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaced_sizes_are_computed_without_overflow() {
        assert_eq!(size_after_replacing(10, 2, 1, 3), Some(14));
        assert_eq!(size_after_replacing(10, 2, 3, 1), Some(6));
        assert_eq!(
            size_after_replacing(4 << 20, 4 << 20, 1, 2000),
            Some(8_388_608_000)
        );
        assert_eq!(size_after_replacing(u64::MAX, 1, 1, 2), None);
        assert_eq!(size_after_replacing(10, u64::MAX, 1, 2), None);
        assert_eq!(size_after_replacing(10, 1, u64::MAX, 0), None);
    }
}
