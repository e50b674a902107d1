//! Line diffs between two texts, for the conflict page and the history.

use similar::{ChangeTag, TextDiff};

/// How a line of a diff relates the two texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// In both texts.
    Same,
    /// Only in the first text.
    Removed,
    /// Only in the second text.
    Added,
}

/// One line of a diff, without its line ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) side: Side,
    pub(crate) text: String,
}

/// The lines of `old` and `new` in order, each marked (a Myers diff on lines).
pub(crate) fn lines(old: &str, new: &str) -> Vec<Line> {
    TextDiff::from_lines(old, new)
        .iter_all_changes()
        .map(|c| Line {
            side: match c.tag() {
                ChangeTag::Equal => Side::Same,
                ChangeTag::Delete => Side::Removed,
                ChangeTag::Insert => Side::Added,
            },
            text: c.value().trim_end_matches(['\n', '\r']).to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(old: &str, new: &str, expect: &str) {
        let got: String = lines(old, new)
            .iter()
            .map(|l| {
                let mark = match l.side {
                    Side::Same => ' ',
                    Side::Removed => '-',
                    Side::Added => '+',
                };
                format!("{mark}{}\n", l.text)
            })
            .collect();
        assert_eq!(got, expect, "{old:?} -> {new:?}");
    }

    #[test]
    fn diffs_mark_each_line() {
        check("a\nb\nc\n", "a\nb\nc\n", " a\n b\n c\n");
        check("a\nb\nc\n", "a\nx\nc\n", " a\n-b\n+x\n c\n");
        check("", "new\n", "+new\n");
        check("gone\n", "", "-gone\n");
        check("a\nb", "a\nb\nc", " a\n-b\n+b\n+c\n");
    }
}
