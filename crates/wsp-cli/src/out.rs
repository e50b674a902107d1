//! Everything `wsp` prints goes through here: standard output with [`outln!`], [`out!`] and
//! [`raw`], standard error with [`errln!`] (and [`crate::failure::Failure::report`]).
//!
//! Two rules hold for every command, so no command has to remember them:
//!
//! - **A closed standard output ends the command quietly.** `wsp files ls | head -1` closes the
//!   pipe after one line; the next write fails with `EPIPE` (Rust ignores `SIGPIPE`), which
//!   becomes [`Failure::closed_pipe`]: no message, exit status 0, as `head` asked for no more.
//! - **Control characters never reach a terminal from data.** Text that came from a host or a
//!   file (paths, messages, snippets) could hold escape sequences that set the clipboard, change
//!   the title or clear the screen. Standard error is always written escaped; standard output
//!   is escaped when it is a terminal, except [`raw`], the exact bytes of a file the user asked
//!   for (`wsp files get`), which a pipe or a terminal gets unchanged, like `cat`.
//!
//! `clippy::print_stdout` and `clippy::print_stderr` are denied in this crate, so a `println!`
//! that would bypass both rules does not compile.

use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::sync::OnceLock;

use crate::failure::Failure;

/// Whether standard output is a terminal (asked once).
pub fn stdout_is_terminal() -> bool {
    static TERMINAL: OnceLock<bool> = OnceLock::new();
    *TERMINAL.get_or_init(|| std::io::stdout().is_terminal())
}

/// Whether standard input is a terminal (asked once): a person who can answer a question.
pub fn stdin_is_terminal() -> bool {
    static TERMINAL: OnceLock<bool> = OnceLock::new();
    *TERMINAL.get_or_init(|| std::io::stdin().is_terminal())
}

/// Whether `c` is a control character a terminal may act on: C0 (but tab), DEL and C1 (which
/// holds the one-character CSI, U+009B).
fn is_control(c: char) -> bool {
    c != '\t' && (c.is_control())
}

/// `text` with every control character but tab (and, with `keep_newlines`, line feed) spelt as
/// a visible escape, `\x1b` or `\u{9b}`; borrowed when there is none.
pub fn escape_controls(text: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| is_control(c) && !(keep_newlines && c == '\n');
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !escaped(c) {
            out.push(c);
        } else if c == '\n' {
            out.push_str("\\n");
        } else if c == '\r' {
            out.push_str("\\r");
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Writes `bytes` to standard output and flushes; a closed pipe is [`Failure::closed_pipe`].
fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::closed_pipe()),
        Err(e) => Err(Failure::from(crate::CliError(format!(
            "cannot write to standard output: {e}"
        )))),
    }
}

/// Prints `text` on standard output as it is when that is a pipe or a file, escaped (line
/// feeds kept) when it is a terminal. Use [`outln!`] and [`out!`].
pub fn text(text: &str) -> Result<(), Failure> {
    if stdout_is_terminal() {
        write_stdout(escape_controls(text, true).as_bytes())
    } else {
        write_stdout(text.as_bytes())
    }
}

/// Prints one line on standard output; data in it is escaped at a terminal, line feeds
/// included (a line stays a line). Use [`outln!`].
pub fn line(args: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    let mut text = args.to_string();
    if stdout_is_terminal() {
        text = escape_controls(&text, false).into_owned();
    }
    text.push('\n');
    write_stdout(text.as_bytes())
}

/// Writes the exact `bytes` of a file the user asked for on standard output, unescaped
/// whatever it is (the `cat` rule).
pub fn raw(bytes: &[u8]) -> Result<(), Failure> {
    write_stdout(bytes)
}

/// `text`, JSON, with DEL and the C1 controls written `\u00XX`: JSON escapes the C0 controls
/// itself but leaves these as they are, and they can only stand inside strings, where the
/// escape means the same character. Valid JSON holding no control character.
pub fn json_safe(text: String) -> String {
    if !text.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// Prints `value` as pretty JSON and a line feed, with no control character in it
/// ([`json_safe`]).
pub fn json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let mut text = json_safe(serde_json::to_string_pretty(value)?);
    text.push('\n');
    write_stdout(text.as_bytes())
}

/// Writes one line on standard error, every control character escaped (line feeds inside it
/// too). A standard error that cannot be written to is ignored: there is nowhere left to say so.
pub fn err_line(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    let mut line = escape_controls(&text, false).into_owned();
    line.push('\n');
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(line.as_bytes()).and_then(|()| err.flush());
}

/// Writes `text` on standard error, escaped, without adding a line feed (a question).
pub fn err_text(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(escape_controls(text, false).as_bytes())
        .and_then(|()| err.flush());
}

/// `println!` for `wsp`: one line on standard output, a `Result` to `?` (see the module).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

/// `print!` for `wsp`: text (which may hold line feeds) on standard output, a `Result`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::text(&format!($($arg)*))
    };
}

/// `eprintln!` for `wsp`: one line on standard error, escaped.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::err_line(format_args!($($arg)*))
    };
}

pub(crate) use {errln, out, outln};

#[cfg(test)]
mod tests {
    use super::{escape_controls, json_safe};

    #[test]
    fn json_carries_no_control_character() {
        let value = serde_json::json!({ "m": "a\u{1b}b\u{7f}c\u{9b}d é" });
        let text = json_safe(serde_json::to_string(&value).unwrap());
        assert_eq!(text, r#"{"m":"a\u001bb\u007fc\u009bd é"}"#);
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn control_characters_are_spelt_out() {
        assert_eq!(escape_controls("plain\ttext é", false), "plain\ttext é");
        assert_eq!(
            escape_controls("\u{1b}]52;c;aGk=\u{7}x", false),
            "\\x1b]52;c;aGk=\\x07x"
        );
        assert_eq!(escape_controls("a\u{9b}2J\u{7f}", false), "a\\u{9b}2J\\x7f");
        assert_eq!(escape_controls("a\r\nb", false), "a\\r\\nb");
        assert_eq!(escape_controls("a\r\nb\n", true), "a\\r\nb\n");
    }
}
