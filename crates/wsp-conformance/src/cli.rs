//! The `wsp conformance` subcommand: flags and environment to a [`Config`], reports to files,
//! the verdict to an exit code.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::catalogue::CATALOGUE;
use crate::config::{Config, ConfigError, KnownSecret};
use crate::expected::ExpectedFailures;
use crate::report::Report;

/// Run the conformance suite against a host.
///
/// Every flag can also come from the environment. The base URL and keys fall back to the
/// OpenWOP suite's variable names (`OPENWOP_BASE_URL`, `OPENWOP_API_KEY`,
/// `OPENWOP_TEST_TENANT_B_API_KEY`), so one CI configuration serves both suites.
#[derive(Debug, Clone, clap::Args)]
pub struct ConformanceArgs {
    /// Base URL of the host under test [fallback env: OPENWOP_BASE_URL].
    #[arg(long, value_name = "URL", env = "WSP_CONFORMANCE_URL")]
    pub url: Option<String>,
    /// Bearer key of owner A, with workspace:read and workspace:write [fallback env: OPENWOP_API_KEY].
    #[arg(
        long,
        value_name = "KEY",
        env = "WSP_CONFORMANCE_KEY_A",
        hide_env_values = true
    )]
    pub key_a: Option<String>,
    /// Bearer key of owner B, another tenant than A [fallback env: OPENWOP_TEST_TENANT_B_API_KEY].
    #[arg(
        long,
        value_name = "KEY",
        env = "WSP_CONFORMANCE_KEY_B",
        hide_env_values = true
    )]
    pub key_b: Option<String>,
    /// Bearer key with scope workspace:read only.
    #[arg(
        long,
        value_name = "KEY",
        env = "WSP_CONFORMANCE_KEY_READONLY",
        hide_env_values = true
    )]
    pub key_readonly: Option<String>,
    /// A secret the host redacts for owner A, as ID=VALUE (for WSR-1).
    #[arg(
        long,
        value_name = "ID=VALUE",
        env = "WSP_CONFORMANCE_SECRET",
        hide_env_values = true
    )]
    pub secret: Option<String>,
    /// An agent owner A's workspace approved, none of them approved for owner B (repeatable,
    /// or comma-separated): A's whole inventory under installScope tenant.
    #[arg(
        long = "agent-a",
        value_name = "AGENT_ID",
        env = "WSP_CONFORMANCE_AGENTS_A",
        value_delimiter = ','
    )]
    pub agents_a: Vec<String>,
    /// Text the host holds for an agent A can see and must never serve (a system prompt
    /// reference, or a line of the prompt).
    #[arg(
        long,
        value_name = "TEXT",
        env = "WSP_CONFORMANCE_PROMPT_MARKER",
        hide_env_values = true
    )]
    pub prompt_marker: Option<String>,
    /// Bearer key acting as a private agent, with workspace:read and workspace:write (publish).
    #[arg(
        long,
        value_name = "KEY",
        env = "WSP_CONFORMANCE_KEY_PRIVATE_AGENT",
        hide_env_values = true
    )]
    pub key_private_agent: Option<String>,
    /// Bearer key acting as the shared agent --shared-agent, in the private agent's tenant.
    #[arg(
        long,
        value_name = "KEY",
        env = "WSP_CONFORMANCE_KEY_SHARED_AGENT",
        hide_env_values = true
    )]
    pub key_shared_agent: Option<String>,
    /// The id of the shared agent --key-shared-agent acts as (the publish target).
    #[arg(long, value_name = "AGENT_ID", env = "WSP_CONFORMANCE_SHARED_AGENT")]
    pub shared_agent: Option<String>,
    /// The id of an agent that is not shared (a publish target the host must refuse).
    #[arg(long, value_name = "AGENT_ID", env = "WSP_CONFORMANCE_PRIVATE_AGENT")]
    pub private_agent: Option<String>,
    /// Fail scenarios whose behaviour is advertised but cannot be observed.
    #[arg(long)]
    pub strict: bool,
    /// Write the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub report_json: Option<PathBuf>,
    /// Write the JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Run only scenarios whose id starts with ID-PREFIX (repeatable).
    #[arg(long, value_name = "ID-PREFIX")]
    pub filter: Vec<String>,
    /// Report failures of the scenarios listed in FILE as xfail.
    #[arg(long, value_name = "FILE", env = "WSP_CONFORMANCE_EXPECTED_FAILURES")]
    pub expected_failures: Option<PathBuf>,
    /// Time limit for one HTTP exchange, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
    /// PEM file of CA certificates to trust besides the system's, for an https host whose
    /// certificate a private CA signed.
    #[arg(long, value_name = "FILE", env = "WSP_CACERT")]
    pub cacert: Option<PathBuf>,
    /// Print the scenario catalogue (id, clause, gate, title) and exit.
    #[arg(long)]
    pub list: bool,
}

/// The default per-exchange time limit, in seconds.
const DEFAULT_TIMEOUT_SECS: u64 = 10;

impl Default for ConformanceArgs {
    /// No URL, no keys, not strict, no reports, the default timeout.
    fn default() -> Self {
        ConformanceArgs {
            url: None,
            key_a: None,
            key_b: None,
            key_readonly: None,
            secret: None,
            agents_a: Vec::new(),
            prompt_marker: None,
            key_private_agent: None,
            key_shared_agent: None,
            shared_agent: None,
            private_agent: None,
            strict: false,
            report_json: None,
            junit: None,
            filter: Vec::new(),
            expected_failures: None,
            timeout: DEFAULT_TIMEOUT_SECS,
            cacert: None,
            list: false,
        }
    }
}

/// Why the arguments cannot make a run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArgsError {
    /// A configuration problem.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The expected-failures file is unreadable or malformed.
    #[error("expected failures: {0}")]
    ExpectedFailures(#[from] crate::expected::ExpectedFailuresError),
    /// `--timeout 0`.
    #[error("--timeout must be at least 1 second")]
    ZeroTimeout,
    /// The `--cacert` file is unreadable or holds no usable certificate.
    #[error("--cacert: {0}")]
    CaCert(wsp_client::Error),
}

impl ConformanceArgs {
    /// Builds the run's configuration, reading the OpenWOP fallbacks from the process
    /// environment.
    pub fn to_config(&self) -> Result<Config, ArgsError> {
        self.to_config_with(|name| std::env::var(name).ok())
    }

    /// [`Self::to_config`] with an explicit environment lookup (for tests).
    pub fn to_config_with(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ArgsError> {
        let pick = |given: &Option<String>, fallback: &str| {
            given
                .clone()
                .filter(|v| !v.is_empty())
                .or_else(|| env(fallback).filter(|v| !v.is_empty()))
        };
        let url = pick(&self.url, "OPENWOP_BASE_URL").ok_or(ConfigError::MissingUrl)?;
        if self.timeout == 0 {
            return Err(ArgsError::ZeroTimeout);
        }
        let mut config = Config::new(url);
        config.key_a = pick(&self.key_a, "OPENWOP_API_KEY");
        config.key_b = pick(&self.key_b, "OPENWOP_TEST_TENANT_B_API_KEY");
        config.key_readonly = self.key_readonly.clone().filter(|v| !v.is_empty());
        config.secret = match self.secret.as_deref().filter(|v| !v.is_empty()) {
            Some(text) => Some(KnownSecret::parse(text)?),
            None => None,
        };
        let given = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
        config.agents_a = self
            .agents_a
            .iter()
            .filter(|a| !a.is_empty())
            .cloned()
            .collect();
        config.prompt_marker = given(&self.prompt_marker);
        config.key_private_agent = given(&self.key_private_agent);
        config.key_shared_agent = given(&self.key_shared_agent);
        config.shared_agent = given(&self.shared_agent);
        config.private_agent = given(&self.private_agent);
        config.strict = self.strict;
        config.filters = self.filter.clone();
        config.request_timeout = Duration::from_secs(self.timeout);
        config.scenario_timeout = Duration::from_secs(self.timeout.saturating_mul(12).max(60));
        if let Some(path) = &self.expected_failures {
            config.expected_failures = ExpectedFailures::load(path)?;
        }
        if let Some(file) = &self.cacert {
            config.ca_certs =
                wsp_client::CaCerts::from_pem_file(file).map_err(ArgsError::CaCert)?;
        }
        config.validate()?;
        Ok(config)
    }
}

/// The catalogue as a table: `id  clause  gate  title`, one line each.
pub fn catalogue_text() -> String {
    CATALOGUE
        .iter()
        .map(|s| {
            format!(
                "{:<13} {:<34} {:<60} {}\n",
                s.id,
                s.clause,
                s.gate.describe(),
                s.title
            )
        })
        .collect()
}

/// Runs the subcommand: prints the summary, writes the requested reports, and returns success
/// only when no scenario failed. Exit code 2 means the run could not be made (bad arguments,
/// unwritable report).
pub async fn run_cli(args: ConformanceArgs) -> ExitCode {
    if args.list {
        print!("{}", catalogue_text());
        return ExitCode::SUCCESS;
    }
    let config = match args.to_config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("wsp conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let report = crate::run(&config).await;
    print!("{}", report.summary_text());
    match write_reports(&args, &report) {
        Ok(()) if report.success() => ExitCode::SUCCESS,
        Ok(()) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("wsp conformance: {e}");
            ExitCode::from(2)
        }
    }
}

/// Writes `--report-json` and `--junit` when given (creating parent directories).
pub fn write_reports(args: &ConformanceArgs, report: &Report) -> Result<(), String> {
    let outputs = [
        (&args.report_json, report.to_json()),
        (&args.junit, report.to_junit()),
    ];
    for (path, text) in outputs {
        let Some(path) = path else { continue };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ConformanceArgs,
    }

    fn parse(argv: &[&str]) -> ConformanceArgs {
        Cli::try_parse_from(std::iter::once("wsp").chain(argv.iter().copied()))
            .unwrap()
            .args
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn flags_win_over_openwop_fallbacks() {
        let args = parse(&[
            "--url",
            "http://127.0.0.1:1",
            "--key-a",
            "ka",
            "--strict",
            "--filter",
            "WS-ETAG",
            "--filter",
            "WS-PUT",
        ]);
        let config = args
            .to_config_with(env(&[
                ("OPENWOP_BASE_URL", "http://other:2"),
                ("OPENWOP_API_KEY", "kx"),
                ("OPENWOP_TEST_TENANT_B_API_KEY", "kb"),
            ]))
            .unwrap();
        assert_eq!(config.base_url, "http://127.0.0.1:1");
        assert_eq!(config.key_a.as_deref(), Some("ka"));
        assert_eq!(config.key_b.as_deref(), Some("kb"));
        assert_eq!(config.key_readonly, None);
        assert!(config.strict);
        assert_eq!(config.filters, ["WS-ETAG", "WS-PUT"]);
        assert_eq!(config.request_timeout, Duration::from_secs(10));
    }

    #[test]
    fn openwop_names_fill_in_when_flags_are_absent() {
        let args = ConformanceArgs::default();
        let config = args
            .to_config_with(env(&[
                ("OPENWOP_BASE_URL", "http://h:8"),
                ("OPENWOP_API_KEY", "ka"),
                ("OPENWOP_TEST_TENANT_B_API_KEY", "kb"),
            ]))
            .unwrap();
        assert_eq!(config.base_url, "http://h:8");
        assert_eq!(config.key_a.as_deref(), Some("ka"));
        assert_eq!(config.key_b.as_deref(), Some("kb"));
    }

    #[test]
    fn bad_arguments_are_errors() {
        let none = ConformanceArgs::default().to_config_with(env(&[]));
        assert!(matches!(
            none,
            Err(ArgsError::Config(ConfigError::MissingUrl))
        ));
        let empty = ConformanceArgs::default().to_config_with(env(&[("OPENWOP_BASE_URL", "")]));
        assert!(matches!(
            empty,
            Err(ArgsError::Config(ConfigError::MissingUrl))
        ));
        let bad_url = parse(&["--url", "nope"]).to_config_with(env(&[]));
        assert!(matches!(
            bad_url,
            Err(ArgsError::Config(ConfigError::BadUrl { .. }))
        ));
        let zero = parse(&["--url", "http://h", "--timeout", "0"]).to_config_with(env(&[]));
        assert!(matches!(zero, Err(ArgsError::ZeroTimeout)));
        let secret = parse(&["--url", "http://h", "--secret", "short"]).to_config_with(env(&[]));
        assert!(matches!(
            secret,
            Err(ArgsError::Config(ConfigError::BadSecret))
        ));
        let xf = parse(&[
            "--url",
            "http://h",
            "--expected-failures",
            "/nonexistent/xf",
        ])
        .to_config_with(env(&[]));
        assert!(matches!(xf, Err(ArgsError::ExpectedFailures(_))));
        let ca = parse(&["--url", "https://h", "--cacert", "/nonexistent/ca.pem"])
            .to_config_with(env(&[]));
        let Err(ArgsError::CaCert(e)) = ca else {
            panic!("{ca:?}")
        };
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }

    #[test]
    fn expected_failures_file_is_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("xf");
        std::fs::write(&file, "WS-ETAG-003 not yet\n").unwrap();
        let args = parse(&[
            "--url",
            "http://h",
            "--expected-failures",
            file.to_str().unwrap(),
        ]);
        let config = args.to_config_with(env(&[])).unwrap();
        assert_eq!(
            config.expected_failures.reason("WS-ETAG-003"),
            Some("not yet")
        );
    }

    #[test]
    fn agent_inputs_come_from_flags() {
        let args = parse(&[
            "--url",
            "http://h",
            "--agent-a",
            "acme.reviewer,acme.cook",
            "--agent-a",
            "acme.third",
            "--prompt-marker",
            "prompts/x.md",
            "--key-private-agent",
            "kp",
            "--key-shared-agent",
            "ks",
            "--shared-agent",
            "acme.cook",
            "--private-agent",
            "",
        ]);
        let config = args.to_config_with(env(&[])).unwrap();
        assert_eq!(
            config.agents_a,
            ["acme.reviewer", "acme.cook", "acme.third"]
        );
        assert_eq!(config.prompt_marker.as_deref(), Some("prompts/x.md"));
        assert_eq!(config.key_private_agent.as_deref(), Some("kp"));
        assert_eq!(config.key_shared_agent.as_deref(), Some("ks"));
        assert_eq!(config.shared_agent.as_deref(), Some("acme.cook"));
        assert_eq!(config.private_agent, None, "an empty value is no value");
        let debug = format!("{config:?}");
        assert!(
            !debug.contains("kp\"") && !debug.contains("prompts/x.md"),
            "{debug}"
        );
    }

    #[test]
    fn catalogue_text_has_a_line_per_scenario() {
        let text = catalogue_text();
        assert_eq!(text.lines().count(), CATALOGUE.len());
        assert!(text.lines().next().unwrap().starts_with("WS-DISC-001"));
    }
}
