//! The items profile (seed 001): keyed items, `created_by` and previews, one-way publish.

use std::sync::Arc;

use serde_json::json;
use wsp_store::MemoryStore;
use wsp_types::OwnerId;
use wsp_vfs::{
    AgentIdentity, ItemsProfile, PublishArgs, SharedAgentList, VfsErrorCode, publish_item,
};

fn id(s: &str) -> OwnerId {
    OwnerId::parse(s).unwrap()
}

struct World {
    store: Arc<MemoryStore>,
    shared: Arc<SharedAgentList>,
}

impl World {
    fn new() -> Self {
        Self {
            store: Arc::new(MemoryStore::default()),
            shared: Arc::new(SharedAgentList::new(id("t")).with(id("cook"))),
        }
    }

    fn private(&self, agent: &str, user: &str) -> ItemsProfile {
        ItemsProfile::new(
            self.store.clone(),
            AgentIdentity::private(id("t"), id(agent), id(user)).unwrap(),
            self.shared.clone(),
        )
    }

    fn shared_agent(&self, agent: &str) -> ItemsProfile {
        ItemsProfile::new(
            self.store.clone(),
            AgentIdentity::shared(id("t"), id(agent)).unwrap(),
            self.shared.clone(),
        )
    }
}

fn names(p: &ItemsProfile) -> Vec<String> {
    p.tools().into_iter().map(|t| t.name).collect()
}

#[tokio::test]
async fn items_round_trip_with_created_by_and_preview() {
    let w = World::new();
    let main = w.private("main", "u1");
    main.call(
        "workspace_write",
        json!({"key": "shopping", "value": "milk\neggs\nbread"}),
    )
    .await
    .unwrap();
    main.call(
        "workspace_write",
        json!({"key": "plan.json", "value": "{\"day\": \"monday\"}"}),
    )
    .await
    .unwrap();
    let list = main.list().await.unwrap();
    let keys: Vec<(&str, &str, Option<&str>)> = list
        .items
        .iter()
        .map(|i| (i.key.as_str(), i.preview.as_str(), i.created_by.as_deref()))
        .collect();
    assert_eq!(
        keys,
        [
            ("plan.json", "{\"day\": \"monday\"}", Some("main")),
            ("shopping", "milk eggs bread", Some("main"))
        ]
    );
    assert_eq!(
        main.read("shopping").await.unwrap().value,
        "milk\neggs\nbread"
    );
    // Another private agent of the same user shares the workspace and is recorded as writer.
    let helper = w.private("helper", "u1");
    assert_eq!(
        helper.read("shopping").await.unwrap().created_by.as_deref(),
        Some("main")
    );
    helper.write("shopping", "milk".into()).await.unwrap();
    assert_eq!(
        main.read("shopping").await.unwrap().created_by.as_deref(),
        Some("helper")
    );
    // Another user's agent sees nothing of it.
    let other = w.private("main", "u2");
    assert!(other.list().await.unwrap().items.is_empty());
    assert_eq!(
        other.read("shopping").await.unwrap_err().code,
        VfsErrorCode::NotFound
    );
    let out = main
        .call("workspace_delete", json!({"key": "shopping"}))
        .await
        .unwrap();
    assert_eq!(out.text, "deleted item shopping\n");
    assert_eq!(
        main.read("shopping").await.unwrap_err().code,
        VfsErrorCode::NotFound
    );
    assert_eq!(
        main.call("workspace_read", json!({"key": "../x"}))
            .await
            .unwrap_err()
            .code,
        VfsErrorCode::InvalidPath
    );
    assert_eq!(
        main.call("workspace_read", json!({}))
            .await
            .unwrap_err()
            .code,
        VfsErrorCode::InvalidArgument
    );
}

#[tokio::test]
async fn publish_goes_one_way_into_a_shared_agent() {
    let w = World::new();
    let main = w.private("main", "u1");
    let cook = w.shared_agent("cook");
    assert_eq!(
        names(&main),
        [
            "workspace_list",
            "workspace_read",
            "workspace_write",
            "workspace_delete",
            "workspace_publish"
        ]
    );
    assert_eq!(
        names(&cook),
        [
            "workspace_list",
            "workspace_read",
            "workspace_write",
            "workspace_delete"
        ]
    );

    main.write("shopping", "milk, eggs".into()).await.unwrap();
    main.write("diary", "private thoughts".into())
        .await
        .unwrap();
    let out = main
        .call(
            "workspace_publish",
            json!({"key": "shopping", "target_agent_id": "cook"}),
        )
        .await
        .unwrap();
    assert_eq!(
        out.text,
        "published shopping to shared agent cook as inbox/shopping\n"
    );
    main.call(
        "workspace_publish",
        json!({"key": "shopping", "target_agent_id": "cook", "target_key": "inbox/lists/week"}),
    )
    .await
    .unwrap();

    let seen = cook.list().await.unwrap();
    let keys: Vec<&str> = seen.items.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(
        keys,
        ["inbox/lists/week", "inbox/shopping"],
        "only what was published, never the diary"
    );
    assert_eq!(seen.items[0].created_by.as_deref(), Some("main"));
    // The shared agent cannot publish back, neither through its tools nor the function.
    let err = cook
        .call(
            "workspace_publish",
            json!({"key": "shopping", "target_agent_id": "cook"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::InvalidArgument);
    let args = PublishArgs {
        key: "shopping".into(),
        target_agent_id: "cook".into(),
        target_key: None,
    };
    let err = publish_item(w.store.as_ref(), cook.agent(), w.shared.as_ref(), &args)
        .await
        .unwrap_err();
    assert_eq!(err.code, VfsErrorCode::PermissionDenied);
    // Unknown targets and private agents are not publish targets; a missing item is not found.
    for (target, key, code) in [
        ("nobody", "shopping", VfsErrorCode::NotFound),
        ("main", "shopping", VfsErrorCode::NotFound),
        ("cook", "missing", VfsErrorCode::NotFound),
    ] {
        let err = main
            .call(
                "workspace_publish",
                json!({"key": key, "target_agent_id": target}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, code, "{target} {key}");
    }
    // Changing the published copy does not touch the original.
    cook.write("inbox/shopping", "milk, eggs, flour".into())
        .await
        .unwrap();
    assert_eq!(main.read("shopping").await.unwrap().value, "milk, eggs");
}

#[test]
fn publish_is_offered_only_when_a_shared_agent_exists() {
    let store = Arc::new(MemoryStore::default());
    let nobody = Arc::new(SharedAgentList::new(id("t")));
    let main = ItemsProfile::new(
        store,
        AgentIdentity::private(id("t"), id("main"), id("u1")).unwrap(),
        nobody,
    );
    assert_eq!(
        names(&main),
        [
            "workspace_list",
            "workspace_read",
            "workspace_write",
            "workspace_delete"
        ]
    );
}
