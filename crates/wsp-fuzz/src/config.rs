//! The `config_file` target: `wsp.toml`, read the way `wsp serve --config` reads it.

use std::collections::HashMap;

use wsp_server::ConfigAgentRegistry;
use wsp_server::config_file::ConfigFile;
use wsp_store::{Redactor, Secret};
use wsp_types::OwnerId;

/// Parses the input (lossily decoded as UTF-8) as a [`ConfigFile`] and, when it parses, builds
/// what `wsp serve` builds from it: the agent registry of `[agents]`
/// ([`ConfigAgentRegistry::from_config`]) and one [`Redactor`] per tenant of `[[secrets]]`
/// (inline values only: the environment is not the fuzzer's). Every refusal must be an error,
/// never a panic, and each secret value on its own must redact to its marker.
///
/// `wsp-cli` is a binary, so this follows its `FileConfig::load` step by step with the same
/// public functions.
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
    let mut by_tenant: HashMap<OwnerId, Vec<Secret>> = HashMap::new();
    for s in &file.secrets {
        let (Ok(tenant), Some(value)) = (OwnerId::parse(&s.tenant), &s.value) else {
            continue;
        };
        by_tenant.entry(tenant).or_default().push(Secret {
            id: s.id.clone(),
            value: value.clone(),
        });
    }
    for secrets in by_tenant.into_values() {
        let Ok(redactor) = Redactor::new(secrets.clone()) else {
            continue;
        };
        // A secret alone is redacted whole, to the marker of a secret with that value.
        for s in &secrets {
            let out = redactor.redact(&s.value);
            assert!(
                secrets
                    .iter()
                    .any(|t| t.value == s.value && out == format!("[REDACTED:{}]", t.id)),
                "secret {:?} alone redacts to {out:?}",
                s.id
            );
        }
    }
}
