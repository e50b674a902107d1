//! What the `load` program does, apart from the network: its options, the request each
//! connection sends next, and the latencies it records.

use std::time::Duration;

use bytes::Bytes;

/// The command line of `load`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `HOST:PORT` of each target; connections are spread over them in turn.
    pub targets: Vec<String>,
    /// Concurrent connections.
    pub connections: usize,
    /// How long latencies are recorded.
    pub duration: Duration,
    /// How long the connections run before recording starts.
    pub warmup: Duration,
    /// `Bearer KEY`, sent on every request, when given.
    pub bearer: Option<String>,
    /// The path every read requests.
    pub get: Option<String>,
    /// The prefix of the paths writes go to.
    pub put: Option<String>,
    /// Of every 100 requests, how many are writes (100 without `--get`).
    pub put_percent: u64,
    /// The size of a write's content, in bytes.
    pub body_bytes: usize,
    /// Writes send `{"content": ...}` (wsp's PUT) rather than the raw bytes (WebDAV).
    pub json: bool,
}

/// What one connection sends.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `HOST:PORT` it connects to.
    pub authority: String,
    /// The `Authorization` value, when any.
    pub bearer: Option<String>,
    /// The `Content-Type` of its writes.
    pub content_type: &'static str,
    connection: usize,
    get: Option<String>,
    put: Option<String>,
    put_percent: u64,
    body: Bytes,
}

impl Options {
    /// Parses the arguments after the program name.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut o = Options {
            targets: Vec::new(),
            connections: 1,
            duration: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
            bearer: None,
            get: None,
            put: None,
            put_percent: 0,
            body_bytes: 1024,
            json: false,
        };
        let mut args = args.into_iter();
        let seconds = |v: String| {
            v.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| format!("not a number of seconds: {v:?}"))
        };
        while let Some(flag) = args.next() {
            if flag == "--json" {
                o.json = true;
                continue;
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| format!("{flag}: not a whole number: {v:?}"))
            };
            match flag.as_str() {
                "--target" => {
                    let authority = value
                        .strip_prefix("http://")
                        .ok_or_else(|| format!("--target must be http://HOST:PORT: {value:?}"))?;
                    o.targets.push(authority.trim_end_matches('/').to_owned());
                }
                "--connections" => o.connections = number(&value)? as usize,
                "--seconds" => o.duration = seconds(value)?,
                "--warmup" => o.warmup = seconds(value)?,
                "--bearer" => o.bearer = Some(format!("Bearer {value}")),
                "--get" => o.get = Some(value),
                "--put" => o.put = Some(value),
                "--put-percent" => o.put_percent = number(&value)?,
                "--body" => o.body_bytes = number(&value)? as usize,
                _ => return Err(format!("unknown option {flag}")),
            }
        }
        if o.targets.is_empty() || o.connections == 0 {
            return Err("give at least one --target and --connections of 1 or more".into());
        }
        match (&o.get, &o.put) {
            (None, None) => return Err("give --get PATH, --put PREFIX, or both".into()),
            (None, Some(_)) => o.put_percent = 100,
            (Some(_), None) => o.put_percent = 0,
            (Some(_), Some(_)) if o.put_percent > 100 => {
                return Err("--put-percent is at most 100".into());
            }
            _ => {}
        }
        Ok(o)
    }

    /// What connection `connection` sends.
    pub fn plan(&self, connection: usize) -> Plan {
        let content = "x".repeat(self.body_bytes);
        let body = if self.json {
            format!("{{\"content\":\"{content}\"}}")
        } else {
            content
        };
        Plan {
            authority: self.targets[connection % self.targets.len()].clone(),
            bearer: self.bearer.clone(),
            content_type: if self.json {
                "application/json"
            } else {
                "application/octet-stream"
            },
            connection,
            get: self.get.clone(),
            put: self.put.clone(),
            put_percent: self.put_percent,
            body: Bytes::from(body),
        }
    }
}

impl Plan {
    /// The method, path and body of the connection's request number `i`: writes are spread
    /// evenly (request `i` writes when `i % 100` falls among the first `put_percent` of each
    /// hundred, interleaved), each connection cycling over 100 names of its own.
    pub fn request(&self, i: u64) -> (&'static str, String, Option<Bytes>) {
        let writes = (i * self.put_percent) / 100 != ((i + 1) * self.put_percent) / 100;
        match (&self.put, &self.get) {
            (_, Some(path)) if !writes => ("GET", path.clone(), None),
            (Some(prefix), _) => (
                "PUT",
                format!("{prefix}{}-{}.md", self.connection, i % 100),
                Some(self.body.clone()),
            ),
            (None, _) => unreachable!("a plan with no --put never writes"),
        }
    }
}

/// The latencies of answered requests and the count of failures.
#[derive(Debug, Default)]
pub struct Tally {
    /// Latencies of the answers recorded, in microseconds.
    pub latencies_us: Vec<u32>,
    /// Answers outside 2xx, unreadable answers and failed connections.
    pub errors: u64,
}

impl Tally {
    /// Records one answer that took `took`; `ok` when it was a 2xx read in full.
    pub fn record(&mut self, took: Duration, ok: bool) {
        self.latencies_us
            .push(u32::try_from(took.as_micros()).unwrap_or(u32::MAX));
        if !ok {
            self.errors += 1;
        }
    }

    /// Adds another connection's outcome.
    pub fn merge(&mut self, other: Tally) {
        self.latencies_us.extend(other.latencies_us);
        self.errors += other.errors;
    }

    /// The JSON line `load` prints: requests over `duration`, and the percentiles.
    pub fn report(mut self, duration: Duration) -> String {
        self.latencies_us.sort_unstable();
        let n = self.latencies_us.len();
        let at = |q: f64| {
            if n == 0 {
                return 0.0;
            }
            let i = ((n - 1) as f64 * q).round() as usize;
            f64::from(self.latencies_us[i]) / 1000.0
        };
        format!(
            "{{\"requests\":{n},\"errors\":{},\"seconds\":{:.3},\"rps\":{:.1},\"p50_ms\":{:.3},\"p99_ms\":{:.3}}}",
            self.errors,
            duration.as_secs_f64(),
            n as f64 / duration.as_secs_f64(),
            at(0.50),
            at(0.99),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<Options, String> {
        Options::parse(args.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn options_are_checked() {
        let o =
            parse("--target http://127.0.0.1:80/ --connections 8 --get /a --seconds 2.5").unwrap();
        assert_eq!(o.targets, ["127.0.0.1:80"]);
        assert_eq!((o.connections, o.put_percent), (8, 0));
        assert_eq!(o.duration, Duration::from_millis(2500));
        assert_eq!(
            parse("--target http://h:1 --put /p/").unwrap().put_percent,
            100
        );
        for bad in [
            "--get /a",
            "--target h:1 --get /a",
            "--target http://h:1",
            "--target http://h:1 --get /a --put /p --put-percent 101",
            "--target http://h:1 --get /a --seconds x",
            "--target http://h:1 --get /a --connections 0",
            "--target http://h:1 --get",
            "--target http://h:1 --get /a --frobnicate 1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn writes_are_spread_evenly_over_each_hundred_names() {
        let o = parse("--target http://a:1 --target http://b:2 --get /g --put /p/ --put-percent 20 --body 3 --json")
            .unwrap();
        let plan = o.plan(3);
        assert_eq!(plan.authority, "b:2");
        let requests: Vec<_> = (0..200).map(|i| plan.request(i)).collect();
        let puts: Vec<&String> = requests
            .iter()
            .filter(|(m, _, _)| *m == "PUT")
            .map(|(_, p, _)| p)
            .collect();
        assert_eq!(puts.len(), 40);
        assert!(requests[..5].iter().filter(|r| r.0 == "PUT").count() == 1);
        assert!(puts.iter().all(|p| p.starts_with("/p/3-")));
        let body = requests.iter().find_map(|r| r.2.clone()).unwrap();
        assert_eq!(&body[..], br#"{"content":"xxx"}"#);
        let raw = parse("--target http://a:1 --put /dav/ --body 2")
            .unwrap()
            .plan(0);
        assert_eq!(
            raw.request(7),
            ("PUT", "/dav/0-7.md".into(), Some(Bytes::from("xx")))
        );
    }

    #[test]
    fn the_report_has_the_percentiles() {
        let mut o = Tally::default();
        for ms in 1..=100 {
            o.record(Duration::from_millis(ms), ms != 100);
        }
        let report: serde_json::Value =
            serde_json::from_str(&o.report(Duration::from_secs(2))).unwrap();
        assert_eq!(report["requests"], 100);
        assert_eq!(report["errors"], 1);
        assert_eq!(report["rps"], 50.0);
        assert_eq!(report["p50_ms"], 51.0);
        assert_eq!(report["p99_ms"], 99.0);
    }
}
