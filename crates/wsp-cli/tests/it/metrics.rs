//! `GET /metrics` of a real `wsp serve`: behind a key holding `metrics:read` on the main
//! listener, without a key on `--metrics-addr`; every scrape parsed by an OpenMetrics parser,
//! the counters moved by exactly the requests made, and nothing in it that names a key, a
//! tenant, a workspace or a path.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use openmetrics_parser::{OpenMetricsType, OpenMetricsValue, openmetrics::parse_openmetrics};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support;
use crate::support::{create_key, drop_schema, unique_schema};

/// The route template of a file, as the metrics label it.
const FILE_ROUTE: &str = "/v1/host/workspace/files/{path}";

/// One parsed scrape: every sample as (family, labels) -> value.
struct Scrape {
    text: String,
    samples: Vec<(String, BTreeMap<String, String>, OpenMetricsValue)>,
}

impl Scrape {
    /// Parses `text` with the OpenMetrics parser; panics when it is not a valid exposition.
    fn parse(text: String) -> Self {
        let exposition = parse_openmetrics(&text)
            .unwrap_or_else(|e| panic!("the scrape does not parse: {e:?}\n{text}"));
        let mut samples = Vec::new();
        for (name, family) in &exposition.families {
            assert!(!family.help.is_empty(), "{name} has HELP text");
            assert!(
                family.family_type != OpenMetricsType::Unknown,
                "{name} has a TYPE"
            );
            let names = family.get_label_names().to_vec();
            for sample in family.iter_samples() {
                let set = sample.get_labelset().unwrap();
                let labels = names
                    .iter()
                    .map(|n| (n.clone(), set.get_label_value(n).unwrap().to_owned()))
                    .collect();
                samples.push((name.clone(), labels, sample.value.clone()));
            }
        }
        Self { text, samples }
    }

    fn find(&self, family: &str, labels: &[(&str, &str)]) -> Option<&OpenMetricsValue> {
        self.samples
            .iter()
            .find(|(name, have, _)| {
                name == family
                    && labels
                        .iter()
                        .all(|(k, v)| have.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, _, value)| value)
    }

    /// A counter's value (0 when the series does not exist yet).
    fn counter(&self, family: &str, labels: &[(&str, &str)]) -> f64 {
        match self.find(family, labels) {
            None => 0.0,
            Some(OpenMetricsValue::Counter(c)) => c.value.as_f64(),
            Some(other) => panic!("{family} {labels:?} is not a counter: {other:?}"),
        }
    }

    /// A gauge's value; panics when the series is missing.
    fn gauge(&self, family: &str, labels: &[(&str, &str)]) -> f64 {
        match self.find(family, labels) {
            Some(OpenMetricsValue::Gauge(g)) => g.as_f64(),
            other => panic!("{family} {labels:?} is not a gauge: {other:?}"),
        }
    }

    /// A histogram's observation count (0 when the series does not exist yet) and, when it
    /// exists, its buckets (upper bound, cumulative count).
    fn histogram(&self, family: &str, labels: &[(&str, &str)]) -> (u64, Vec<(f64, f64)>) {
        match self.find(family, labels) {
            None => (0, Vec::new()),
            Some(OpenMetricsValue::Histogram(h)) => (
                h.count.unwrap_or_default(),
                h.buckets
                    .iter()
                    .map(|b| (b.upper_bound, b.count.as_f64()))
                    .collect(),
            ),
            Some(other) => panic!("{family} {labels:?} is not a histogram: {other:?}"),
        }
    }
}

/// `GET url` with `key` (if any).
async fn get(http: &reqwest::Client, url: &str, key: Option<&str>) -> reqwest::Response {
    let mut req = http.get(url);
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    req.send().await.unwrap()
}

/// A scrape that must succeed, parsed.
async fn scrape(http: &reqwest::Client, url: &str, key: Option<&str>) -> Scrape {
    let resp = get(http, url, key).await;
    assert_eq!(resp.status(), StatusCode::OK, "{url}");
    let media = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        media.starts_with("application/openmetrics-text; version=1.0.0"),
        "{media}"
    );
    Scrape::parse(resp.text().await.unwrap())
}

/// Scrapes `url` until `done` holds (at most 10 s; a stream's end reaches the server when its
/// connection closes, not at once).
async fn scrape_until(http: &reqwest::Client, url: &str, done: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = scrape(http, url, None).await;
        if done(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "never reached:\n{}", now.text);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts that nothing secret or unbounded appears anywhere in a scrape.
fn names_nothing(scrape: &Scrape, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !scrape.text.contains(secret),
            "the scrape shows {secret:?}:\n{}",
            scrape.text
        );
    }
}

/// The id part of a `wsp_<id>_<secret>` key.
fn key_id(key: &str) -> &str {
    key.split('_').nth(1).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_and_are_served_both_ways() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    let server = support::serve(data.path(), &["--metrics-addr", "127.0.0.1:0"]);
    let admin = server.key().to_owned();
    let open_url = server
        .metrics_url
        .clone()
        .expect("--metrics-addr is announced");
    let main_url = format!("{}/metrics", server.url);
    // A tenant's key: every scope of its workspace by default, but not metrics:read.
    let tenant_key = create_key(&[
        "--data",
        dir,
        "--tenant",
        "zetacorp",
        "--workspace",
        "vault9",
    ]);
    let metrics_key = create_key(&[
        "--data",
        dir,
        "--tenant",
        "opsteam",
        "--workspace",
        "monitor",
        "--scopes",
        "metrics:read",
    ]);
    let http = reqwest::Client::new();

    // On the main listener: no key 401, a key without the scope 403, the scope 200.
    let resp = get(&http, &main_url, None).await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "unauthenticated", "{body}");
    let resp = get(&http, &main_url, Some(&tenant_key)).await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "forbidden", "{body}");
    assert_eq!(body["details"]["requiredScope"], "metrics:read", "{body}");
    let before = scrape(&http, &main_url, Some(&metrics_key)).await;
    // The metrics key reaches no workspace: the scope widens nothing else.
    let files = format!("{}/v1/host/workspace/files", server.url);
    assert_eq!(
        get(&http, &files, Some(&metrics_key)).await.status(),
        StatusCode::FORBIDDEN
    );
    // The admin key of a first start holds every scope, metrics:read too.
    scrape(&http, &main_url, Some(&admin)).await;

    // The requests to count, by the tenant's key.
    let file = format!("{}/v1/host/workspace/files/hushdir%2Fplan.md", server.url);
    let resp = http
        .put(&file)
        .bearer_auth(&tenant_key)
        .json(&json!({"content": "# Plan"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        get(&http, &file, Some(&tenant_key)).await.status(),
        StatusCode::OK
    );
    let missing = format!("{}/v1/host/workspace/files/hushdir%2Fnone.md", server.url);
    assert_eq!(
        get(&http, &missing, Some(&tenant_key)).await.status(),
        StatusCode::NOT_FOUND
    );
    let nowhere = format!("{}/hushdir/nowhere", server.url);
    assert_eq!(
        get(&http, &nowhere, None).await.status(),
        StatusCode::NOT_FOUND
    );
    let stream = http
        .get(format!("{}/v1/host/workspace/events", server.url))
        .bearer_auth(&tenant_key)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let run: Value = http
        .post(format!("{}/v1/runs", server.url))
        .bearer_auth(&tenant_key)
        .json(&json!({"workflowId": "hushflow"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run_id = run["runId"].as_str().expect("a run id").to_owned();

    // On --metrics-addr without a key: exactly the requests above, and the stream and run open.
    let after = scrape(&http, &open_url, None).await;
    let requests = |s: &Scrape, method: &str, route: &str, status: &str| {
        s.counter(
            "wsp_http_requests",
            &[("method", method), ("route", route), ("status", status)],
        )
    };
    for (method, route, status, made) in [
        ("PUT", FILE_ROUTE, "200", 1.0),
        ("GET", FILE_ROUTE, "200", 1.0),
        ("GET", FILE_ROUTE, "404", 1.0),
        ("GET", "unmatched", "404", 1.0),
        ("GET", "/v1/host/workspace/events", "200", 1.0),
        ("POST", "/v1/runs", "201", 1.0),
        ("GET", "/v1/host/workspace/files", "403", 1.0),
        ("GET", "/metrics", "200", 2.0),
    ] {
        assert_eq!(
            requests(&after, method, route, status) - requests(&before, method, route, status),
            made,
            "{method} {route} {status}"
        );
    }
    let (puts, buckets) = after.histogram(
        "wsp_http_request_duration_seconds",
        &[("method", "PUT"), ("route", FILE_ROUTE)],
    );
    assert_eq!(puts, 1);
    assert!(buckets.len() > 5, "{buckets:?}");
    assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, 1.0));
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "cumulative");
    let store_puts = |s: &Scrape| {
        s.histogram("wsp_store_operation_duration_seconds", &[("op", "put")])
            .0
    };
    assert_eq!(store_puts(&after) - store_puts(&before), 1);
    let commits = |s: &Scrape| s.histogram("wsp_sqlite_commit_duration_seconds", &[]).0;
    assert_eq!(commits(&after) - commits(&before), 1);
    let (batches, sizes) = after.histogram("wsp_write_batch_size", &[]);
    assert_eq!(batches - before.histogram("wsp_write_batch_size", &[]).0, 1);
    assert_eq!(sizes[0], (1.0, batches as f64), "one change per commit");
    assert_eq!(after.gauge("wsp_sse_subscribers", &[]), 1.0);
    assert_eq!(after.gauge("wsp_runs_open", &[]), 1.0);
    let lookups = |s: &Scrape| {
        s.counter("wsp_key_cache_lookups", &[("result", "hit")])
            + s.counter("wsp_key_cache_lookups", &[("result", "miss")])
    };
    assert!(
        lookups(&after) - lookups(&before) >= 6.0,
        "every keyed request looks its key up"
    );
    assert!(after.counter("wsp_key_cache_lookups", &[("result", "hit")]) >= 1.0);
    assert!(after.counter("wsp_key_cache_lookups", &[("result", "miss")]) >= 1.0);

    // The stream closed and the run ended: both gauges fall back to 0.
    drop(stream);
    let resp = http
        .post(format!("{}/v1/runs/{run_id}/cancel", server.url))
        .bearer_auth(&tenant_key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let last = scrape_until(&http, &open_url, |s| {
        s.gauge("wsp_sse_subscribers", &[]) == 0.0
    })
    .await;
    assert_eq!(last.gauge("wsp_runs_open", &[]), 0.0);
    // The metrics listener serves nothing else, and its scrapes are not counted.
    let other = open_url.replace("/metrics", "/v1/host/workspace/files");
    assert_eq!(
        get(&http, &other, Some(&tenant_key)).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        requests(&last, "GET", "/metrics", "200"),
        requests(&after, "GET", "/metrics", "200")
    );

    for s in [&before, &after, &last] {
        names_nothing(
            s,
            &[
                &admin,
                &tenant_key,
                &metrics_key,
                key_id(&admin),
                key_id(&tenant_key),
                key_id(&metrics_key),
                "zetacorp",
                "vault9",
                "opsteam",
                "hushdir",
                "plan.md",
                "hushflow",
                &run_id,
                dir,
            ],
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_metrics_show_the_pool() {
    let db = wsp_pgtest::database_url().to_owned();
    let schema = unique_schema("wsp_metrics");
    let at = ["--store", &db, "--pg-schema", &schema];
    let tenant_key =
        create_key(&[&at[..], &["--tenant", "zetacorp", "--workspace", "vault9"]].concat());
    let metrics_key = create_key(
        &[
            &at[..],
            &[
                "--tenant",
                "ops",
                "--workspace",
                "monitor",
                "--scopes",
                "metrics:read",
            ],
        ]
        .concat(),
    );
    let data = tempfile::tempdir().unwrap();
    let server = support::serve(
        data.path(),
        &[&at[..], &["--pg-max-connections", "5"]].concat(),
    );
    let main_url = format!("{}/metrics", server.url);
    let http = reqwest::Client::new();

    let resp = http
        .put(format!(
            "{}/v1/host/workspace/files/hushdir%2Fplan.md",
            server.url
        ))
        .bearer_auth(&tenant_key)
        .json(&json!({"content": "# Plan"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let now = scrape(&http, &main_url, Some(&metrics_key)).await;
    assert_eq!(now.gauge("wsp_pg_pool_max_connections", &[]), 5.0);
    let in_use = now.gauge("wsp_pg_pool_connections", &[("state", "in_use")]);
    let idle = now.gauge("wsp_pg_pool_connections", &[("state", "idle")]);
    assert!(
        in_use + idle >= 1.0 && in_use + idle <= 5.0,
        "in use {in_use}, idle {idle}"
    );
    assert_eq!(now.gauge("wsp_pg_pool_waiting", &[]), 0.0);
    assert_eq!(
        now.histogram("wsp_store_operation_duration_seconds", &[("op", "put")])
            .0,
        1
    );
    assert_eq!(now.gauge("wsp_runs_open", &[]), 0.0);
    // SQLite's commits are not PostgreSQL's: that histogram stays empty.
    assert_eq!(
        now.histogram("wsp_sqlite_commit_duration_seconds", &[]).0,
        0
    );
    names_nothing(
        &now,
        &[
            &tenant_key,
            &metrics_key,
            key_id(&tenant_key),
            key_id(&metrics_key),
            "zetacorp",
            "vault9",
            "hushdir",
            &schema,
            &db,
        ],
    );
    drop(server);
    drop_schema(&db, &schema).await;
}
