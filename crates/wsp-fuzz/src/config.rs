//! The `config_file` target: `wsp.toml`, read the way `wsp serve --config` reads it.

use wsp_server::ConfigAgentRegistry;
use wsp_server::config_file::{ConfigFile, SecretConfig};
use wsp_types::OwnerId;

/// Parses the input (lossily decoded as UTF-8) as a [`ConfigFile`] and, when it parses, builds
/// what `wsp serve` builds from it: the agent registry of `[agents]`
/// ([`ConfigAgentRegistry::from_config`]) and the redactor of each tenant of `[[secrets]]`
/// ([`ConfigFile::redactors`], in an environment where every variable holds its own name).
/// Every refusal must be an error, never a panic, and each secret value on its own must redact
/// to its marker.
///
/// ```
/// wsp_fuzz::config_file(b"[[secrets]]\ntenant = \"acme\"\nid = \"k\"\nvalue = \"0123456789\"\n");
/// wsp_fuzz::config_file(b"[agents]\ninstall_scope = 7\n");
/// ```
pub fn config_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(file) = toml::from_str::<ConfigFile>(&text) else {
        return;
    };
    if let Some(agents) = &file.agents {
        let _ = ConfigAgentRegistry::from_config(agents);
    }
    let Ok(redactors) = file.redactors(|var| Some(var.to_owned())) else {
        return;
    };
    /// The value a loaded secret has in that environment.
    fn value(s: &SecretConfig) -> Option<&str> {
        s.value.as_deref().or(s.value_env.as_deref())
    }
    // A secret alone is redacted whole, to the marker of a secret of its tenant with that value.
    for s in &file.secrets {
        let tenant = OwnerId::parse(&s.tenant).expect("a loaded tenant parses");
        let out = redactors[&tenant].redact(value(s).expect("a loaded secret has a value"));
        assert!(
            file.secrets.iter().any(|t| t.tenant == s.tenant
                && value(t) == value(s)
                && out == format!("[REDACTED:{}]", t.id)),
            "secret {:?} alone redacts to {out:?}",
            s.id
        );
    }
}
