//! Counting tokens: the chars/4 estimate, or any tokenizer behind [`TokenCounter`].

/// Counts the tokens a text costs in the model's context.
///
/// The assembler relies on two properties, which every real tokenizer has: the empty text costs
/// 0, and a prefix never costs more than the whole (`count(a) <= count(a + b)`). It does *not*
/// rely on counts adding up: the rendered text is counted as a whole before it is returned, and
/// cut further until it fits.
///
/// ```
/// use wsp_context::{CharEstimate, TokenCounter};
/// assert_eq!(CharEstimate.count(""), 0);
/// assert_eq!(CharEstimate.count("abcd"), 1);
/// assert_eq!(CharEstimate.count("abcde"), 2);
/// ```
pub trait TokenCounter: Send + Sync {
    /// The tokens `text` costs.
    fn count(&self, text: &str) -> usize;

    /// A short name for reports (`chars/4`, `cl100k`, ...).
    fn name(&self) -> &str;
}

/// The default estimate: one token per four characters (Unicode scalar values), rounded up.
///
/// Rounding up makes it subadditive (`count(a + b) <= count(a) + count(b)`), so the sum of the
/// parts' counts bounds the whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CharEstimate;

impl TokenCounter for CharEstimate {
    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }

    fn name(&self) -> &str {
        "chars/4"
    }
}
