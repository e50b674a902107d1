//! Where WSR-1 gets the secret values it must redact for an owner.

use std::collections::HashMap;
use std::sync::Arc;

use wsp_store::Redactor;
use wsp_types::{Owner, OwnerId};

/// Supplies, per owner, the secrets whose values must never reach storage.
///
/// A host with a vault implements this over the vault; [`TenantSecrets`] is a fixed list.
pub trait SecretSource: Send + Sync + 'static {
    /// The redactor for `owner` (`None`: nothing to redact).
    fn redactor(&self, owner: &Owner) -> Option<Arc<Redactor>>;
}

/// Secrets configured per tenant.
#[derive(Debug, Default, Clone)]
pub struct TenantSecrets {
    by_tenant: HashMap<OwnerId, Arc<Redactor>>,
}

impl TenantSecrets {
    /// Secrets for each tenant.
    pub fn new(by_tenant: HashMap<OwnerId, Redactor>) -> Self {
        Self {
            by_tenant: by_tenant
                .into_iter()
                .map(|(t, r)| (t, Arc::new(r)))
                .collect(),
        }
    }
}

impl SecretSource for TenantSecrets {
    fn redactor(&self, owner: &Owner) -> Option<Arc<Redactor>> {
        self.by_tenant
            .get(&owner.tenant)
            .filter(|r| !r.is_empty())
            .cloned()
    }
}
