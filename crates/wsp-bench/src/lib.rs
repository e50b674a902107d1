//! Shared helpers of the wsp benchmarks (`cargo xtask bench ...`).
//!
//! **Invariant:** benchmarks print measurements and ratios against a baseline measured in the
//! same run; nothing here asserts on time.

use std::time::Duration;

pub mod load;

/// Percentiles of a set of durations, in microseconds.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Operations per second at the median.
    pub ops_per_sec: f64,
}

/// Summarizes samples (at least one).
pub fn summarize(samples: &mut [Duration]) -> Summary {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    let p50 = at(0.5);
    Summary {
        p50,
        p99: at(0.99),
        ops_per_sec: if p50 > 0.0 { 1e6 / p50 } else { f64::INFINITY },
    }
}
