//! Access lines (target `wsp::access`, one per request) reach standard error in batches: each is
//! appended to a buffer (one short lock), and a thread writes the buffer out every
//! [`FLUSH_EVERY`]. A write per line was about a tenth of the CPU of a small `GET`. Every other
//! line (start-up, warnings, errors) is written at once, after the access lines before it.
//!
//! Lines keep their order. An access line waits at most [`FLUSH_EVERY`] (a person tailing the
//! log sees no difference); past [`MAX_BUFFERED`] bytes the logging thread writes the batch
//! itself, so memory stays bounded. [`flush`] writes what waits: `main` calls it before the
//! process ends, and the panic hook before the panic message. A process killed with SIGKILL
//! loses at most the last [`FLUSH_EVERY`] of access lines.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// How long a line may wait in the buffer.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// Bytes buffered before the logging thread writes them itself.
const MAX_BUFFERED: usize = 64 * 1024;

/// The shared buffer and the lock that keeps batches in order.
struct Batches {
    lines: Mutex<Vec<u8>>,
    /// Held while a batch is taken and written, so two batches never cross.
    out: Mutex<()>,
}

static BATCHES: OnceLock<Batches> = OnceLock::new();

fn batches() -> &'static Batches {
    BATCHES.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("wsp-log".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(FLUSH_EVERY);
                    flush();
                }
            });
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            flush();
            previous(info);
        }));
        Batches {
            lines: Mutex::new(Vec::with_capacity(MAX_BUFFERED)),
            out: Mutex::new(()),
        }
    })
}

/// Writes every buffered line to standard error now.
pub fn flush() {
    write_after_batch(&[]);
}

/// Writes the buffered lines, then `line`, to standard error, in that order.
fn write_after_batch(line: &[u8]) {
    let Some(b) = BATCHES.get() else {
        if !line.is_empty() {
            let _ = std::io::stderr().lock().write_all(line);
        }
        return;
    };
    let _order = b.out.lock().unwrap_or_else(|e| e.into_inner());
    let batch = std::mem::take(&mut *b.lines.lock().unwrap_or_else(|e| e.into_inner()));
    if batch.is_empty() && line.is_empty() {
        return;
    }
    let mut err = std::io::stderr().lock();
    // Nowhere to report a failed write of the log itself.
    let _ = err.write_all(&batch);
    let _ = err.write_all(line);
    let _ = err.flush();
}

/// The `MakeWriter` of the subscriber: one [`Line`] per event, batched for access lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct Buffered;

impl<'a> MakeWriter<'a> for Buffered {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            bytes: Vec::with_capacity(256),
            batched: false,
        }
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Line {
        Line {
            bytes: Vec::with_capacity(256),
            batched: meta.target() == wsp_server::ACCESS_LOG,
        }
    }
}

/// One event's bytes, written out (or appended to the batch) when the event is done.
#[derive(Debug)]
pub struct Line {
    bytes: Vec<u8>,
    batched: bool,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.bytes.is_empty() {
            return;
        }
        if !self.batched {
            write_after_batch(&self.bytes);
            return;
        }
        let b = batches();
        let full = {
            let mut lines = b.lines.lock().unwrap_or_else(|e| e.into_inner());
            lines.extend_from_slice(&self.bytes);
            lines.len() >= MAX_BUFFERED
        };
        if full {
            flush();
        }
    }
}
