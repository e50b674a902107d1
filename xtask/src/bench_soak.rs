//! `cargo xtask bench soak`: whether the resident set of `wsp serve` levels off under hours of
//! mixed load, as a figure.
//!
//! One release `wsp serve` on a fresh SQLite data directory (default settings), driven by the
//! `soak` program of `wsp-bench` for `--minutes` (30): keep-alive connections reading and
//! writing files, change-feed subscribers that come and go, runs started, read through and
//! cancelled. Every `--sample` seconds (30) it reads the server's resident set (`VmRSS` of
//! `/proc/<pid>/status`) and prints it; at the end it prints a table by minute, the resident
//! set at the start and every 10 minutes, the peak (`VmHWM`), and the slope of a
//! least-squares line over the last two thirds of the samples in MiB per 10 minutes: near 0
//! means it levelled off. A benchmark: it never fails on a number.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Result;
use crate::bench_http::{Workdir, start_wsp};

const USAGE: &str = "usage: cargo xtask bench soak [--minutes M] [--sample S] [--connections N] \
                     [--subscribers N] [--runs N]

  --minutes M       how long the load runs (default 30, from 1 to 1440)
  --sample S        seconds between two readings of the resident set (default 30, 1 to 600)
  --connections N   keep-alive connections reading and writing files (default 16)
  --subscribers N   change-feed subscribers, each reconnecting every 2 to 20 s (default 8)
  --runs N          loops starting, reading and cancelling runs (default 2)";

/// What `cargo xtask bench soak` was asked for.
#[derive(Debug, Clone, PartialEq)]
struct Args {
    minutes: u64,
    sample_secs: u64,
    connections: usize,
    subscribers: usize,
    runs: usize,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            minutes: 30,
            sample_secs: 30,
            connections: 16,
            subscribers: 8,
            runs: 2,
        }
    }
}

fn parse_args(args: &[String]) -> Result<Args> {
    let mut parsed = Args::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value: u64 = it.next().and_then(|v| v.parse().ok()).ok_or(USAGE)?;
        let within = |lo: u64, hi: u64| (lo..=hi).contains(&value).then_some(value).ok_or(USAGE);
        match flag.as_str() {
            "--minutes" => parsed.minutes = within(1, 1440)?,
            "--sample" => parsed.sample_secs = within(1, 600)?,
            "--connections" => parsed.connections = within(1, 200)? as usize,
            // The change feed allows 32 streams per key.
            "--subscribers" => parsed.subscribers = within(0, 32)? as usize,
            "--runs" => parsed.runs = within(0, 32)? as usize,
            _ => return Err(USAGE.into()),
        }
    }
    Ok(parsed)
}

/// One reading: seconds since the load started, resident set in MiB.
type Sample = (f64, f64);

/// Runs `cargo xtask bench soak ARGS`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let args = parse_args(args)?;
    let built = crate::bench::release_programs(&[("wsp-cli", "wsp"), ("wsp-bench", "soak")])?;
    let [wsp, soak]: [std::path::PathBuf; 2] = built
        .try_into()
        .map_err(|_| "cargo build gave the wrong number of programs")?;
    let work = Workdir::new("soak")?;
    let target = start_wsp(&wsp, &work.0.join("sqlite"), &[], 1, "wsp serve (SQLite)")?;
    let pid = target.processes[0].id();
    let seconds = args.minutes * 60;
    println!(
        "soak: {} min of {} connections (80% GET, 20% PUT of 1 KiB), {} change-feed \
         subscribers, {} run loops against wsp serve (SQLite), pid {pid}; resident set every {} s",
        args.minutes, args.connections, args.subscribers, args.runs, args.sample_secs
    );
    let mut load = Command::new(&soak)
        .args(["--target", &target.urls[0]])
        .args(["--bearer", target.key.as_deref().unwrap_or_default()])
        .args(["--seconds", &seconds.to_string()])
        .args(["--connections", &args.connections.to_string()])
        .args(["--subscribers", &args.subscribers.to_string()])
        .args(["--runs", &args.runs.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start soak: {e}"))?;
    let started = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    let mut next = Duration::ZERO;
    loop {
        let at = started.elapsed();
        if at >= next {
            let Some(rss) = status_mib(pid, "VmRSS:") else {
                let _ = load.kill();
                return Err("wsp serve is gone (no /proc/<pid>/status)".into());
            };
            let t = at.as_secs_f64();
            samples.push((t, rss));
            println!("  {:>7.1} min  {rss:>8.1} MiB", t / 60.0);
            next += Duration::from_secs(args.sample_secs);
        }
        if load.try_wait()?.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if let Some(rss) = status_mib(pid, "VmRSS:") {
        samples.push((started.elapsed().as_secs_f64(), rss));
    }
    let peak = status_mib(pid, "VmHWM:");
    let out = load.wait_with_output()?;
    let totals: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    report(&samples, peak, &totals, seconds);
    Ok(())
}

/// A field of `/proc/<pid>/status` given in kB, in MiB.
fn status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The sample nearest to `t` seconds.
fn at(samples: &[Sample], t: f64) -> Option<Sample> {
    samples
        .iter()
        .copied()
        .min_by(|a, b| (a.0 - t).abs().total_cmp(&(b.0 - t).abs()))
}

/// The slope of the least-squares line through the samples of the last two thirds of the run,
/// in MiB per 10 minutes; `None` with fewer than 3 samples there.
fn slope_mib_per_10_min(samples: &[Sample]) -> Option<f64> {
    let end = samples.last()?.0;
    let tail: Vec<Sample> = samples
        .iter()
        .copied()
        .filter(|(t, _)| *t >= end / 3.0)
        .collect();
    if tail.len() < 3 {
        return None;
    }
    let n = tail.len() as f64;
    let mean_t = tail.iter().map(|s| s.0).sum::<f64>() / n;
    let mean_m = tail.iter().map(|s| s.1).sum::<f64>() / n;
    let cov: f64 = tail.iter().map(|(t, m)| (t - mean_t) * (m - mean_m)).sum();
    let var: f64 = tail.iter().map(|(t, _)| (t - mean_t).powi(2)).sum();
    (var > 0.0).then(|| cov / var * 600.0)
}

fn report(samples: &[Sample], peak: Option<f64>, totals: &Value, seconds: u64) {
    println!("\n== resident set of wsp serve (SQLite) under mixed load\n");
    println!("| minute | RSS MiB |");
    println!("|---:|---:|");
    let minutes = seconds / 60;
    for m in 0..=minutes {
        if let Some((_, mib)) = at(samples, m as f64 * 60.0) {
            println!("| {m} | {mib:.1} |");
        }
    }
    println!();
    let marks: Vec<String> = (0..=minutes)
        .step_by(10)
        .chain((!minutes.is_multiple_of(10)).then_some(minutes))
        .filter_map(|m| at(samples, m as f64 * 60.0).map(|(_, mib)| format!("{m} min {mib:.1}")))
        .collect();
    println!("RSS (MiB): {}", marks.join(", "));
    match peak {
        Some(p) => println!("peak RSS (VmHWM): {p:.1} MiB"),
        None => println!("peak RSS: unknown"),
    }
    match slope_mib_per_10_min(samples) {
        Some(s) => println!("slope over the last two thirds: {s:+.2} MiB per 10 min"),
        None => println!("slope: too few samples"),
    }
    println!("load: {totals}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_bounded() {
        let args = |a: &str| a.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(parse_args(&[]).unwrap(), Args::default());
        let parsed = parse_args(&args("--minutes 5 --sample 10 --subscribers 0")).unwrap();
        assert_eq!(
            (parsed.minutes, parsed.sample_secs, parsed.subscribers),
            (5, 10, 0)
        );
        for bad in [
            "--minutes 0",
            "--sample 0",
            "--subscribers 33",
            "--minutes",
            "--fast 1",
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_slope_reads_the_last_two_thirds() {
        // Grows 10 MiB in the first third, then flat: levelled off.
        let mut samples: Vec<Sample> = (0..=10)
            .map(|i| (i as f64 * 60.0, 100.0 + i as f64))
            .collect();
        samples.extend((11..=30).map(|i| (i as f64 * 60.0, 110.0)));
        let flat = slope_mib_per_10_min(&samples).unwrap();
        assert!(flat.abs() < 1e-9, "{flat}");
        // 1 MiB a minute throughout: 10 MiB per 10 minutes.
        let growing: Vec<Sample> = (0..=30)
            .map(|i| (i as f64 * 60.0, 100.0 + i as f64))
            .collect();
        let slope = slope_mib_per_10_min(&growing).unwrap();
        assert!((slope - 10.0).abs() < 1e-9, "{slope}");
        assert_eq!(slope_mib_per_10_min(&growing[..2]), None);
        assert_eq!(at(&growing, 605.0), Some((600.0, 110.0)));
    }
}
