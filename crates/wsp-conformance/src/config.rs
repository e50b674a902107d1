//! What a run needs to know: where the host is, which keys to use, how strict to be.

use std::fmt;
use std::time::Duration;

use wsp_client::CaCerts;

use crate::expected::ExpectedFailures;

/// The configuration of one run. Build it with [`Config::new`] and set the fields you need.
#[derive(Clone)]
pub struct Config {
    /// Base URL of the host, e.g. `http://127.0.0.1:8080` (a path prefix is allowed).
    pub base_url: String,
    /// Bearer key of owner A (scopes `workspace:read` and `workspace:write`).
    pub key_a: Option<String>,
    /// Bearer key of owner B, another tenant than A (for WCT-1).
    pub key_b: Option<String>,
    /// Bearer key with scope `workspace:read` only (for the 403 scenarios).
    pub key_readonly: Option<String>,
    /// A secret the host redacts for owner A (for WSR-1).
    pub secret: Option<KnownSecret>,
    /// The agents owner A's workspace approved: A's whole inventory under `installScope:
    /// tenant`, none of them approved for owner B (RFC 0074).
    pub agents_a: Vec<String>,
    /// Text the host holds for an agent A can see and must never serve, such as its system
    /// prompt reference or a line of the prompt.
    pub prompt_marker: Option<String>,
    /// Bearer key acting as a private agent (WIRE §8), with `workspace:read` and
    /// `workspace:write`.
    pub key_private_agent: Option<String>,
    /// Bearer key acting as the shared agent [`Config::shared_agent`], in the private agent's
    /// tenant.
    pub key_shared_agent: Option<String>,
    /// The id of the shared agent that [`Config::key_shared_agent`] acts as: the publish target.
    pub shared_agent: Option<String>,
    /// The id of an agent that is not shared: a publish target the host must refuse.
    pub private_agent: Option<String>,
    /// Turn advertised-but-unobservable behaviour into failures.
    pub strict: bool,
    /// Run only scenarios whose id starts with one of these (all when empty).
    pub filters: Vec<String>,
    /// Failures to report as `xfail`.
    pub expected_failures: ExpectedFailures,
    /// Time limit for one HTTP exchange.
    pub request_timeout: Duration,
    /// Time limit for one scenario.
    pub scenario_timeout: Duration,
    /// CA certificates trusted for an https host besides the system's (a private CA).
    pub ca_certs: CaCerts,
}

/// A secret value the host knows for owner A, and the id it redacts it to
/// (`[REDACTED:<id>]`, RFC 0059 §E WSR-1).
#[derive(Clone, PartialEq, Eq)]
pub struct KnownSecret {
    /// The secret's id as it appears in `[REDACTED:<id>]`.
    pub id: String,
    /// The plaintext value (8 characters or more).
    pub value: String,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// No base URL was given by flag or environment.
    #[error("no base URL: pass --url or set WSP_CONFORMANCE_URL (or OPENWOP_BASE_URL)")]
    MissingUrl,
    /// The base URL does not parse or is not http(s).
    #[error("base URL {url:?} is not usable: {reason}")]
    BadUrl {
        /// What was given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// A `--secret` that is not `ID=VALUE` with a value of 8 or more characters.
    #[error("--secret must be ID=VALUE with a value of 8 or more characters")]
    BadSecret,
}

impl Config {
    /// A configuration for `base_url` with no keys, not strict, all scenarios, 10 s per request,
    /// 120 s per scenario, and only the system's CAs trusted for https.
    pub fn new(base_url: impl Into<String>) -> Self {
        Config {
            base_url: base_url.into(),
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
            filters: Vec::new(),
            expected_failures: ExpectedFailures::default(),
            request_timeout: Duration::from_secs(10),
            scenario_timeout: Duration::from_secs(120),
            ca_certs: CaCerts::default(),
        }
    }

    /// Checks the base URL: it must parse, be `http` or `https`, and carry no query or fragment.
    pub fn validate(&self) -> Result<reqwest::Url, ConfigError> {
        let bad = |reason: &str| ConfigError::BadUrl {
            url: self.base_url.clone(),
            reason: reason.to_string(),
        };
        let url = reqwest::Url::parse(&self.base_url).map_err(|e| bad(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("the scheme must be http or https"));
        }
        if url.host_str().is_none() {
            return Err(bad("no host"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("no query or fragment allowed"));
        }
        Ok(url)
    }

    /// True when `id` is selected by the filters.
    pub fn selects(&self, id: &str) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| id.starts_with(f.as_str()))
    }
}

impl KnownSecret {
    /// Parses `ID=VALUE`.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let (id, value) = text.split_once('=').ok_or(ConfigError::BadSecret)?;
        if id.is_empty() || value.chars().count() < 8 {
            return Err(ConfigError::BadSecret);
        }
        Ok(KnownSecret {
            id: id.to_string(),
            value: value.to_string(),
        })
    }
}

fn presence(key: &Option<String>) -> &'static str {
    if key.is_some() { "set" } else { "unset" }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Keys and the secret never reach a log line: only whether they are set.
        f.debug_struct("Config")
            .field("base_url", &self.base_url)
            .field("key_a", &presence(&self.key_a))
            .field("key_b", &presence(&self.key_b))
            .field("key_readonly", &presence(&self.key_readonly))
            .field("secret", &self.secret)
            .field("agents_a", &self.agents_a)
            .field(
                "prompt_marker",
                &self.prompt_marker.as_ref().map(|_| "[redacted]"),
            )
            .field("key_private_agent", &presence(&self.key_private_agent))
            .field("key_shared_agent", &presence(&self.key_shared_agent))
            .field("shared_agent", &self.shared_agent)
            .field("private_agent", &self.private_agent)
            .field("strict", &self.strict)
            .field("filters", &self.filters)
            .field("expected_failures", &self.expected_failures)
            .field("request_timeout", &self.request_timeout)
            .field("scenario_timeout", &self.scenario_timeout)
            .field("ca_certs", &self.ca_certs)
            .finish()
    }
}

impl fmt::Debug for KnownSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KnownSecret")
            .field("id", &self.id)
            .field("value", &"[redacted]")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        let ok = [
            "http://127.0.0.1:8080",
            "http://host/prefix/",
            "http://[::1]:9",
            "https://host.example",
        ];
        for url in ok {
            assert!(Config::new(url).validate().is_ok(), "{url}");
        }
        let bad = [
            "",
            "127.0.0.1:8080",
            "ftp://host",
            "http://host/?x=1",
            "http://host/#frag",
            "not a url",
        ];
        for url in bad {
            assert!(
                matches!(Config::new(url).validate(), Err(ConfigError::BadUrl { .. })),
                "{url}"
            );
        }
    }

    #[test]
    fn filters_select_by_prefix() {
        let mut config = Config::new("http://h");
        assert!(config.selects("WS-PUT-001"));
        config.filters = vec!["WS-ETAG".into(), "WS-PUT-002".into()];
        assert!(config.selects("WS-ETAG-004"));
        assert!(config.selects("WS-PUT-002"));
        assert!(!config.selects("WS-PUT-001"));
    }

    #[test]
    fn secrets_parse_and_never_print() {
        let secret = KnownSecret::parse("vault-1=sk-abcdefgh=tail").unwrap();
        assert_eq!(secret.id, "vault-1");
        assert_eq!(secret.value, "sk-abcdefgh=tail");
        for bad in ["novalue", "=12345678", "id=short"] {
            assert_eq!(
                KnownSecret::parse(bad),
                Err(ConfigError::BadSecret),
                "{bad}"
            );
        }
        let mut config = Config::new("http://h");
        config.key_a = Some("key-a-plaintext".into());
        config.secret = Some(secret);
        let debug = format!("{config:?}");
        assert!(!debug.contains("key-a-plaintext"));
        assert!(!debug.contains("sk-abcdefgh"));
        assert!(debug.contains("key_a: \"set\""));
    }
}
