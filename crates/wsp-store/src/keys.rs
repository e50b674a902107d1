//! API keys: the credential format, hashed records, and the registry contract.
//!
//! A key is `wsp_<id>_<secret>`: `id` (12 hex digits) finds the record, `secret` (64 hex digits,
//! 256 random bits) is checked against its SHA-256 in constant time. Only the hash is stored;
//! the plaintext exists once, when the key is created.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::RwLock;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use wsp_types::{Owner, Scopes, random_hex};

use crate::{StoreError, StoreFuture};

/// The plaintext of a newly created key. Shown once; its `Debug` hides the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    id: String,
    secret: String,
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("id", &self.id)
            .field("secret", &"<hidden>")
            .finish()
    }
}

impl ApiKey {
    /// A fresh random key.
    pub fn generate() -> Self {
        Self {
            id: random_hex(6),
            secret: random_hex(32),
        }
    }

    /// Splits a presented bearer token into a key; `None` when it is not shaped like one.
    ///
    /// ```
    /// use wsp_store::keys::ApiKey;
    /// let k = ApiKey::generate();
    /// assert_eq!(ApiKey::parse(&k.expose()), Some(k));
    /// assert_eq!(ApiKey::parse("wsp_nothex_zz"), None);
    /// ```
    pub fn parse(token: &str) -> Option<Self> {
        let rest = token.strip_prefix("wsp_")?;
        let (id, secret) = rest.split_once('_')?;
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        (hex(id, 12) && hex(secret, 64)).then(|| Self {
            id: id.to_ascii_lowercase(),
            secret: secret.to_ascii_lowercase(),
        })
    }

    /// The public key id (safe to log and list).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The full plaintext token, for showing to the user once.
    pub fn expose(&self) -> String {
        format!("wsp_{}_{}", self.id, self.secret)
    }

    /// The SHA-256 of the secret part, as stored.
    pub fn secret_hash(&self) -> [u8; 32] {
        Sha256::digest(self.secret.as_bytes()).into()
    }

    /// Whether this key's secret hashes to `stored`, compared in constant time.
    pub fn verify(&self, stored: &[u8; 32]) -> bool {
        self.secret_hash().ct_eq(stored).into()
    }
}

/// A stored key: who it acts for and what it may do. Holds the secret's hash, never the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    /// The public key id.
    pub id: String,
    /// SHA-256 of the secret.
    pub secret_hash: [u8; 32],
    /// The `{tenant, workspace}` the key acts in.
    pub owner: Owner,
    /// The acting principal (attribution).
    pub principal: String,
    /// What it may do.
    pub scopes: Scopes,
    /// The agent this key acts as, if any (agent principals).
    pub agent: Option<String>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<DateTime<Utc>>,
}

impl KeyRecord {
    /// A new record for `key`.
    pub fn new(key: &ApiKey, owner: Owner, principal: String, scopes: Scopes) -> Self {
        Self {
            id: key.id.clone(),
            secret_hash: key.secret_hash(),
            owner,
            principal,
            scopes,
            agent: None,
            created_at: Utc::now(),
            revoked_at: None,
        }
    }
}

/// Where key records live. Implementations must make a new key usable at once by every reader.
pub trait KeyRegistry: Send + Sync + 'static {
    /// Finds a record by key id (revoked ones included; the caller checks).
    fn lookup<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<KeyRecord>>;
    /// Stores a new record; an id already stored is refused.
    fn insert(&self, record: KeyRecord) -> StoreFuture<'_, ()>;
    /// Stores `record` only when the registry holds no record at all (revoked ones count),
    /// checking and inserting as one step: processes starting at once on an empty registry
    /// (replicas on one database) create one first key between them. True when it was stored.
    fn insert_first(&self, record: KeyRecord) -> StoreFuture<'_, bool>;
    /// All records, oldest first.
    fn list(&self) -> StoreFuture<'_, Vec<KeyRecord>>;
    /// Marks a key revoked; `NotFound` when there is no such id.
    fn revoke<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;
}

/// A [`KeyRegistry`] in process memory, for tests and embedded hosts.
#[derive(Debug, Default)]
pub struct MemoryKeyRegistry {
    records: RwLock<BTreeMap<String, KeyRecord>>,
}

impl KeyRegistry for MemoryKeyRegistry {
    fn lookup<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<KeyRecord>> {
        let found = self
            .records
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned();
        Box::pin(async move { Ok(found) })
    }

    fn insert(&self, record: KeyRecord) -> StoreFuture<'_, ()> {
        let mut records = self.records.write().unwrap_or_else(|e| e.into_inner());
        // As the SQL registries' primary keys do: an id is stored once.
        let result = match records.entry(record.id.clone()) {
            std::collections::btree_map::Entry::Occupied(_) => Err(StoreError::internal(
                "key registry: a key with this id exists",
            )),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(record);
                Ok(())
            }
        };
        Box::pin(async move { result })
    }

    fn insert_first(&self, record: KeyRecord) -> StoreFuture<'_, bool> {
        let mut records = self.records.write().unwrap_or_else(|e| e.into_inner());
        let empty = records.is_empty();
        if empty {
            records.insert(record.id.clone(), record);
        }
        Box::pin(async move { Ok(empty) })
    }

    fn list(&self) -> StoreFuture<'_, Vec<KeyRecord>> {
        let mut all: Vec<KeyRecord> = self
            .records
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Box::pin(async move { Ok(all) })
    }

    fn revoke<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let mut records = self.records.write().unwrap_or_else(|e| e.into_inner());
        let result = match records.get_mut(id) {
            Some(r) => {
                r.revoked_at.get_or_insert_with(Utc::now);
                Ok(())
            }
            None => Err(StoreError::NotFound),
        };
        Box::pin(async move { result })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_first_key_is_inserted_once() {
        crate::battery::registries::insert_first_contract(
            &[std::sync::Arc::new(MemoryKeyRegistry::default())],
            8,
        )
        .await;
    }

    #[test]
    fn keys_round_trip_and_verify() {
        let k = ApiKey::generate();
        let token = k.expose();
        assert!(token.starts_with("wsp_"));
        assert_eq!(token.len(), 4 + 12 + 1 + 64);
        let parsed = ApiKey::parse(&token).unwrap();
        assert!(parsed.verify(&k.secret_hash()));
        let other = ApiKey::generate();
        assert!(!other.verify(&k.secret_hash()));
        assert!(!format!("{k:?}").contains(&k.secret));
    }

    #[test]
    fn malformed_tokens_are_not_keys() {
        let k = ApiKey::generate().expose();
        for bad in [
            "",
            "wsp_",
            "Bearer x",
            &k[..k.len() - 1],
            &format!("{k}0"),
            &k.replace("wsp_", "wsq_"),
            "wsp_0123456789ab_zz",
        ] {
            assert_eq!(ApiKey::parse(bad), None, "{bad:?}");
        }
    }
}
