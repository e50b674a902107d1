//! Minimal reproductions of bugs the fuzz targets found, one test each.
//!
//! A test here is `#[ignore]`d only while its bug is open in another crate, with the reason;
//! the fix removes the `#[ignore]`. The inputs the fuzzer itself found are in
//! `fuzz/regressions/<target>/` and replayed by `tests/it/replay.rs`.

use wsp_fuzz::SSE_CUT;

/// wsp-client's change-feed reader turned `\r\n` into `\n` one network chunk at a time, so a
/// stream whose blank line (`\r\n\r\n`) is cut between its last `\r` and `\n` showed no event:
/// the reader waited for a `\n\n` that never came. In one chunk the same stream yields the
/// error event (fixed: lines are split on bytes, a CR at a chunk's end waits for its LF).
#[test]
fn sse_crlf_cut_before_the_last_line_feed_loses_the_event() {
    let mut input =
        b"event: error\r\ndata: {\"error\":\"not_found\",\"message\":\"m\"}\r\n\r".to_vec();
    input.push(SSE_CUT);
    input.push(b'\n');
    wsp_fuzz::sse_chunks(&input);
}

/// wsp-client's change-feed reader decoded each network chunk as UTF-8 on its own, so a
/// character whose bytes arrived in two chunks (`é` is `C3 A9`) made it answer "the event
/// stream is not UTF-8" instead of the event (fixed: lines are decoded once complete).
#[test]
fn sse_utf8_character_cut_between_chunks_is_refused() {
    let mut input = b"event: error\ndata: {\"error\":\"not_found\",\"message\":\"caf\xC3".to_vec();
    input.push(SSE_CUT);
    input.extend_from_slice(b"\xA9\"}\n\n");
    wsp_fuzz::sse_chunks(&input);
}
