//! Authentication: a bearer credential becomes a [`Caller`] (owner, principal, scopes).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use wsp_store::StoreError;
use wsp_store::keys::{ApiKey, KeyRecord, KeyRegistry};
use wsp_types::{ErrorCode, Owner, Scope, Scopes};

use crate::error::WireError;
use crate::metrics::KeyCacheCounters;

/// Who is calling: derived from the credential only; nothing in the request can widen it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The `{tenant, workspace}` whose data the caller reaches.
    pub owner: Owner,
    /// Who acts (attribution and audit; never a storage boundary).
    pub principal: String,
    /// What the caller may do.
    pub scopes: Scopes,
    /// The agent the credential acts as, if any.
    pub agent: Option<String>,
}

impl Caller {
    /// Fails with 403 `forbidden` (`details.requiredScope`) unless the caller has `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), WireError> {
        if self.scopes.contains(scope) {
            Ok(())
        } else {
            Err(WireError::new(
                ErrorCode::Forbidden,
                format!("this credential lacks the {scope} scope"),
            )
            .with_detail("requiredScope", scope.as_str()))
        }
    }
}

/// The future an [`Authenticator`] returns.
pub type AuthFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<Caller>, StoreError>> + Send + 'a>>;

/// Turns a bearer token into a [`Caller`]. Host authors plug their own.
///
/// `Ok(None)` means "not a valid credential" (401); `Err` means the check itself failed (503/500).
pub trait Authenticator: Send + Sync + 'static {
    /// Checks a bearer token (the part after `Bearer `).
    fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a>;
}

/// The bearer token of a request, if it sent one in the `Authorization: Bearer <token>` form.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Authenticates a request or fails with 401 `unauthenticated`.
pub async fn authenticate(
    auth: &dyn Authenticator,
    headers: &HeaderMap,
) -> Result<Caller, WireError> {
    let unauthenticated = || {
        WireError::new(
            ErrorCode::Unauthenticated,
            "a valid bearer credential is required",
        )
    };
    let token = bearer_token(headers).ok_or_else(unauthenticated)?;
    match auth.authenticate(token).await {
        Ok(Some(caller)) => Ok(caller),
        Ok(None) => Err(unauthenticated()),
        Err(e) => Err(WireError::from_store(e, "")),
    }
}

/// How long a verified key record is reused before the registry is asked again.
///
/// New keys work at once (misses are never cached); a revocation takes effect within this time.
pub const KEY_CACHE_TTL: Duration = Duration::from_secs(2);

/// An [`Authenticator`] over a [`KeyRegistry`] of hashed `wsp_<id>_<secret>` keys.
///
/// The secret is compared by hash in constant time on every request, cached or not.
pub struct KeyAuthenticator {
    registry: Arc<dyn KeyRegistry>,
    cache: RwLock<HashMap<String, (KeyRecord, Instant)>>,
    lookups: KeyCacheCounters,
}

impl std::fmt::Debug for KeyAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyAuthenticator").finish_non_exhaustive()
    }
}

impl KeyAuthenticator {
    /// Authenticates against `registry`.
    pub fn new(registry: Arc<dyn KeyRegistry>) -> Self {
        Self {
            registry,
            cache: RwLock::default(),
            lookups: KeyCacheCounters::default(),
        }
    }

    /// The counters of this authenticator's cache lookups (shared, not copied).
    pub(crate) fn cache_counters(&self) -> KeyCacheCounters {
        self.lookups.clone()
    }

    fn cached(&self, id: &str) -> Option<KeyRecord> {
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        cache
            .get(id)
            .filter(|(_, at)| at.elapsed() < KEY_CACHE_TTL)
            .map(|(r, _)| r.clone())
    }

    fn remember(&self, record: KeyRecord) {
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        if cache.len() > 10_000 {
            cache.retain(|_, (_, at)| at.elapsed() < KEY_CACHE_TTL);
        }
        cache.insert(record.id.clone(), (record, Instant::now()));
    }
}

impl Authenticator for KeyAuthenticator {
    fn authenticate<'a>(&'a self, token: &'a str) -> AuthFuture<'a> {
        Box::pin(async move {
            let Some(key) = ApiKey::parse(token) else {
                return Ok(None);
            };
            let record = if let Some(r) = self.cached(key.id()) {
                self.lookups.hits.inc();
                r
            } else {
                self.lookups.misses.inc();
                let Some(r) = self.registry.lookup(key.id()).await? else {
                    return Ok(None);
                };
                self.remember(r.clone());
                r
            };
            if record.revoked_at.is_some() || !key.verify(&record.secret_hash) {
                return Ok(None);
            }
            Ok(Some(Caller {
                owner: record.owner,
                principal: record.principal,
                scopes: record.scopes,
                agent: record.agent,
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use wsp_store::keys::MemoryKeyRegistry;

    #[test]
    fn bearer_parsing() {
        let cases = [
            ("Bearer abc", Some("abc")),
            ("bearer abc", Some("abc")),
            ("BEARER  abc ", Some("abc")),
            ("Basic abc", None),
            ("Bearer", None),
            ("Bearer ", None),
            ("abc", None),
        ];
        for (value, expect) in cases {
            let mut h = HeaderMap::new();
            h.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            assert_eq!(bearer_token(&h), expect, "{value:?}");
        }
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[tokio::test]
    async fn keys_authenticate_until_revoked() {
        let registry = Arc::new(MemoryKeyRegistry::default());
        let key = ApiKey::generate();
        let owner = Owner::parse("t", "w").unwrap();
        registry
            .insert(KeyRecord::new(
                &key,
                owner.clone(),
                "alice".into(),
                Scopes::all(),
            ))
            .await
            .unwrap();
        let auth = KeyAuthenticator::new(registry.clone());
        let caller = auth.authenticate(&key.expose()).await.unwrap().unwrap();
        assert_eq!(caller.owner, owner);
        assert_eq!(caller.principal, "alice");
        // Right id, wrong secret: refused even though the record is cached.
        let forged = format!("wsp_{}_{}", key.id(), "0".repeat(64));
        assert_eq!(auth.authenticate(&forged).await.unwrap(), None);
        assert_eq!(auth.authenticate("garbage").await.unwrap(), None);
        registry.revoke(key.id()).await.unwrap();
        // A fresh authenticator (no cache) sees the revocation at once.
        let fresh = KeyAuthenticator::new(registry);
        assert_eq!(fresh.authenticate(&key.expose()).await.unwrap(), None);
    }
}
