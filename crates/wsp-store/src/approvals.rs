//! Pack approvals: which `{tenant, workspace}` approved which agent pack (RFC 0074).
//!
//! A host scoped per tenant (`installScope: tenant`) lists to a caller only the agents whose
//! pack the caller's `{tenant, workspace}` approved. Approvals come from the host's
//! configuration and, for approvals made while it runs, from an [`ApprovalRegistry`]: the
//! server reads the registry on every inventory request, so an approval (or a revocation) made
//! by another process counts at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::RwLock;

use chrono::{DateTime, Utc};
use wsp_types::Owner;

use crate::StoreFuture;

/// One stored approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The `{tenant, workspace}` that approved the pack.
    pub owner: Owner,
    /// The approved pack's name.
    pub pack: String,
    /// When it was approved.
    pub approved_at: DateTime<Utc>,
}

/// Where approvals made while the host runs are kept. Implementations make a change visible
/// to every reader at once.
pub trait ApprovalRegistry: Send + Sync + 'static {
    /// The packs `owner` approved.
    fn packs<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, BTreeSet<String>>;
    /// Approves `pack` for `owner`; `false` when it already was.
    fn approve<'a>(&'a self, owner: &'a Owner, pack: &'a str) -> StoreFuture<'a, bool>;
    /// Withdraws the approval of `pack` by `owner`; `false` when there was none.
    fn revoke<'a>(&'a self, owner: &'a Owner, pack: &'a str) -> StoreFuture<'a, bool>;
    /// Every approval, sorted by tenant, workspace and pack.
    fn list(&self) -> StoreFuture<'_, Vec<Approval>>;
}

/// An [`ApprovalRegistry`] in process memory, for tests and embedded hosts.
#[derive(Debug, Default)]
pub struct MemoryApprovals {
    by_owner: RwLock<BTreeMap<Owner, BTreeMap<String, DateTime<Utc>>>>,
}

impl ApprovalRegistry for MemoryApprovals {
    fn packs<'a>(&'a self, owner: &'a Owner) -> StoreFuture<'a, BTreeSet<String>> {
        let packs = self
            .by_owner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(owner)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        Box::pin(async move { Ok(packs) })
    }

    fn approve<'a>(&'a self, owner: &'a Owner, pack: &'a str) -> StoreFuture<'a, bool> {
        let mut all = self.by_owner.write().unwrap_or_else(|e| e.into_inner());
        let packs = all.entry(owner.clone()).or_default();
        let added = !packs.contains_key(pack);
        if added {
            packs.insert(pack.to_owned(), Utc::now());
        }
        Box::pin(async move { Ok(added) })
    }

    fn revoke<'a>(&'a self, owner: &'a Owner, pack: &'a str) -> StoreFuture<'a, bool> {
        let mut all = self.by_owner.write().unwrap_or_else(|e| e.into_inner());
        let removed = all
            .get_mut(owner)
            .is_some_and(|packs| packs.remove(pack).is_some());
        all.retain(|_, packs| !packs.is_empty());
        Box::pin(async move { Ok(removed) })
    }

    fn list(&self) -> StoreFuture<'_, Vec<Approval>> {
        let all: Vec<Approval> = self
            .by_owner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .flat_map(|(owner, packs)| {
                packs.iter().map(|(pack, at)| Approval {
                    owner: owner.clone(),
                    pack: pack.clone(),
                    approved_at: *at,
                })
            })
            .collect();
        Box::pin(async move { Ok(all) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn approvals_are_per_owner_and_revocable() {
        let reg = MemoryApprovals::default();
        let a = Owner::parse("t", "a").unwrap();
        let b = Owner::parse("t", "b").unwrap();
        assert!(reg.approve(&a, "acme.reviewer").await.unwrap());
        assert!(!reg.approve(&a, "acme.reviewer").await.unwrap());
        assert!(reg.approve(&a, "acme.cook").await.unwrap());
        let packs: Vec<String> = reg.packs(&a).await.unwrap().into_iter().collect();
        assert_eq!(packs, ["acme.cook", "acme.reviewer"]);
        assert!(reg.packs(&b).await.unwrap().is_empty());
        let listed: Vec<(String, String)> = reg
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|x| (x.owner.to_string(), x.pack))
            .collect();
        assert_eq!(
            listed,
            [
                ("t/a".to_owned(), "acme.cook".to_owned()),
                ("t/a".to_owned(), "acme.reviewer".to_owned())
            ]
        );
        assert!(reg.revoke(&a, "acme.cook").await.unwrap());
        assert!(!reg.revoke(&a, "acme.cook").await.unwrap());
        assert!(!reg.revoke(&b, "acme.reviewer").await.unwrap());
        assert_eq!(reg.packs(&a).await.unwrap().len(), 1);
    }
}
