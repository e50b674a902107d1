//! Integration tests of wsp-fuzz, one binary: every committed seed and once-found crash replayed
//! through its target (`replay`), and the minimal reproductions of bugs the targets found
//! (`regressions`).

mod regressions;
mod replay;
