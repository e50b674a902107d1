//! Verdicts and the outcome a scenario ends with.

use std::fmt;

use serde::Serialize;

use crate::exchange::Exchange;

/// The verdict of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Verdict {
    /// The host did what the clause requires.
    Pass,
    /// The host did not; the outcome's evidence shows the exchange that proved it.
    Fail,
    /// A failure listed in the expected-failures file: reported, but not counted as a failure.
    Xfail,
    /// The host does not advertise what the scenario's gate needs (or the behaviour cannot be
    /// observed and `--strict` is off).
    Inapplicable,
    /// The runner lacks what it needs to run the scenario: a key, a secret, the discovery
    /// document.
    Blocked,
}

impl Verdict {
    /// The lowercase word used in every report.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Xfail => "xfail",
            Verdict::Inapplicable => "inapplicable",
            Verdict::Blocked => "blocked",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a scenario ended: a verdict, a reason a person can act on, and the exchanges that
/// showed it (kept for failures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub reason: String,
    /// The request/response pairs that showed a failure (empty for other verdicts unless a
    /// scenario chose to keep some).
    pub evidence: Vec<Exchange>,
    /// Set by [`Outcome::unobservable`]: the host advertises the behaviour but the runner could
    /// not observe it; `--strict` turns this into a failure.
    pub unobservable: bool,
}

impl Outcome {
    fn new(verdict: Verdict, reason: impl Into<String>) -> Self {
        Outcome {
            verdict,
            reason: reason.into(),
            evidence: Vec::new(),
            unobservable: false,
        }
    }

    /// The host conforms.
    pub fn pass(reason: impl Into<String>) -> Self {
        Self::new(Verdict::Pass, reason)
    }

    /// The host does not conform.
    pub fn fail(reason: impl Into<String>) -> Self {
        Self::new(Verdict::Fail, reason)
    }

    /// The scenario does not apply to this host.
    pub fn inapplicable(reason: impl Into<String>) -> Self {
        Self::new(Verdict::Inapplicable, reason)
    }

    /// The runner lacks a key, a secret or another input to run the scenario.
    pub fn blocked(reason: impl Into<String>) -> Self {
        Self::new(Verdict::Blocked, reason)
    }

    /// The host advertises the behaviour but the runner cannot observe it (a limit too large
    /// to exercise, a transport that cannot send the bytes): inapplicable, or a failure under
    /// `--strict`.
    pub fn unobservable(reason: impl Into<String>) -> Self {
        let mut outcome = Self::new(Verdict::Inapplicable, reason);
        outcome.unobservable = true;
        outcome
    }

    /// Adds an exchange as evidence.
    pub fn with(mut self, exchange: Exchange) -> Self {
        self.evidence.push(exchange);
        self
    }

    /// Prefixes the reason with what was being checked (`"delete: expected status 404, ..."`).
    pub fn context(mut self, what: &str) -> Self {
        self.reason = format!("{what}: {}", self.reason);
        self
    }

    /// Applies `--strict`: an unobservable outcome becomes a failure.
    pub fn under_strict(self, strict: bool) -> Self {
        if strict && self.unobservable {
            Outcome {
                verdict: Verdict::Fail,
                reason: format!("strict: advertised but not observable: {}", self.reason),
                ..self
            }
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_turns_only_unobservable_into_fail() {
        let cases = [
            (
                Outcome::unobservable("limit too big"),
                false,
                Verdict::Inapplicable,
            ),
            (Outcome::unobservable("limit too big"), true, Verdict::Fail),
            (
                Outcome::inapplicable("not advertised"),
                true,
                Verdict::Inapplicable,
            ),
            (Outcome::blocked("no key"), true, Verdict::Blocked),
            (Outcome::pass("ok"), true, Verdict::Pass),
        ];
        for (outcome, strict, expect) in cases {
            assert_eq!(
                outcome.clone().under_strict(strict).verdict,
                expect,
                "{outcome:?}"
            );
        }
        let strict = Outcome::unobservable("limit too big").under_strict(true);
        assert!(strict.reason.contains("limit too big"));
    }

    #[test]
    fn verdict_words_are_lowercase() {
        assert_eq!(Verdict::Inapplicable.to_string(), "inapplicable");
        assert_eq!(serde_json::to_string(&Verdict::Xfail).unwrap(), "\"xfail\"");
    }
}
