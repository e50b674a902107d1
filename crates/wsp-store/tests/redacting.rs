//! The WSR-1 store layer as a writer sees it: every write method redacts or refuses before the
//! store beneath is touched, in every normalization form of a secret, and the rest of the
//! contract passes through.

use std::collections::HashMap;
use std::sync::Arc;

use wsp_store::shared::{Publication, PublishError, PublishPrefix, shared_workspace};
use wsp_store::{
    FileWrite, MemoryStore, Precondition, RedactingStore, Redactor, Secret, SnapshotLabel,
    SnapshotQuota, StoreError, StoreFeatures, TenantSecrets, WorkspaceStore,
};
use wsp_types::{Owner, OwnerId, WorkspacePath, WorkspacePrefix};

const SECRET: &str = "sk-live-1234567890";
/// Configured in NFC.
const ACCENTED: &str = "p\u{e4}ssw\u{f6}rd-geheim-\u{e9}";

struct Fixture {
    /// The backend, to see what really got stored.
    backend: Arc<MemoryStore>,
    /// The layer every writer is given.
    store: RedactingStore<MemoryStore>,
    owner: Owner,
}

fn fixture() -> Fixture {
    let secrets = vec![
        Secret {
            id: "openai".into(),
            value: SECRET.into(),
        },
        Secret {
            id: "accented".into(),
            value: ACCENTED.into(),
        },
    ];
    let secrets = TenantSecrets::new(HashMap::from([(
        OwnerId::parse("t").unwrap(),
        Redactor::new(secrets).unwrap(),
    )]));
    let backend = Arc::new(MemoryStore::default());
    Fixture {
        store: RedactingStore::new(backend.clone(), Arc::new(secrets)),
        backend,
        owner: Owner::parse("t", "user-u1").unwrap(),
    }
}

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

async fn everything_stored(f: &Fixture, owner: &Owner) -> String {
    let mut all = String::new();
    for meta in f
        .backend
        .list(owner, &WorkspacePrefix::all())
        .await
        .unwrap()
    {
        let file = f.backend.get(owner, &meta.path, None).await.unwrap();
        all.push_str(&format!(
            "{} {} {:?} {}\n",
            meta.path.as_str(),
            meta.content_type,
            meta.author,
            file.content
        ));
    }
    all
}

#[tokio::test]
async fn put_redacts_content_and_author() {
    let f = fixture();
    let write = FileWrite::text(
        format!("key={SECRET}\n"),
        wsp_types::MediaType::from_static("text/plain"),
    )
    .by(format!("agent-{SECRET}"));
    let stored = f
        .store
        .put(&f.owner, &p("MEMORY.md"), write, Precondition::None)
        .await
        .unwrap();
    assert_eq!(stored.content, "key=[REDACTED:openai]\n");
    assert_eq!(
        stored.meta.author.as_deref(),
        Some("agent-[REDACTED:openai]")
    );
    let all = everything_stored(&f, &f.owner).await;
    assert!(!all.contains(SECRET), "{all}");
    assert!(all.contains("key=[REDACTED:openai]"), "{all}");
}

/// Bytes cannot be redacted without corrupting the file, so a binary body holding a secret (in
/// any normal form, inside bytes that are not UTF-8) is refused and nothing is stored; bytes
/// without one are stored exactly.
#[tokio::test]
async fn a_binary_body_with_a_secret_is_refused() {
    let f = fixture();
    let png = wsp_types::MediaType::from_static("image/png");
    let framed = |secret: &str| {
        let mut bytes = vec![0x89, b'P', b'N', b'G', 0x00, 0xff];
        bytes.extend_from_slice(secret.as_bytes());
        bytes.extend_from_slice(&[0xfe, 0x00]);
        bytes
    };
    let nfd = "pa\u{308}sswo\u{308}rd-geheim-e\u{301}";
    for (i, secret) in [SECRET, ACCENTED, nfd].into_iter().enumerate() {
        let write = FileWrite::bytes(&framed(secret), png.clone());
        let err = f
            .store
            .put(
                &f.owner,
                &p(&format!("img/{i}.png")),
                write,
                Precondition::None,
            )
            .await
            .unwrap_err();
        assert_eq!(err, StoreError::ContainsSecret { field: "content" }, "{i}");
    }
    // Valid UTF-8 sent as base64 is searched as text, in every normal form too.
    let write = FileWrite::bytes(format!("x {nfd} y").as_bytes(), png.clone());
    let err = f
        .store
        .put(&f.owner, &p("img/text.png"), write, Precondition::None)
        .await
        .unwrap_err();
    assert_eq!(err, StoreError::ContainsSecret { field: "content" });
    assert!(
        f.backend
            .list(&f.owner, &WorkspacePrefix::all())
            .await
            .unwrap()
            .is_empty()
    );
    let clean = framed("nothing to see");
    let stored = f
        .store
        .put(
            &f.owner,
            &p("img/ok.png"),
            FileWrite::bytes(&clean, png),
            Precondition::None,
        )
        .await
        .unwrap();
    assert_eq!(stored.content, wsp_types::base64_encode(&clean));
}

#[tokio::test]
async fn every_normalization_form_is_redacted() {
    let f = fixture();
    let forms = [
        ("nfc", ACCENTED.to_owned()),
        ("nfd", "pa\u{308}sswo\u{308}rd-geheim-e\u{301}".to_owned()),
        // NFKC and NFKD of a full-width spelling are the NFC and NFD secret.
        (
            "wide",
            "\u{ff50}\u{e4}\u{ff53}\u{ff53}\u{ff57}\u{f6}\u{ff52}\u{ff44}-geheim-\u{e9}".to_owned(),
        ),
        (
            "wide-nfd",
            "\u{ff50}a\u{308}\u{ff53}\u{ff53}\u{ff57}o\u{308}\u{ff52}\u{ff44}-geheim-e\u{301}"
                .to_owned(),
        ),
        // A mark the text adds after the last letter reorders into it in NFKD.
        ("extra-mark", format!("{ACCENTED}\u{323}")),
        // The ASCII secret spelled in full-width letters.
        (
            "wide-ascii",
            SECRET
                .chars()
                .map(|c| char::from_u32(c as u32 - 0x21 + 0xff01).unwrap())
                .collect(),
        ),
    ];
    for (name, form) in forms {
        let stored = f
            .store
            .put(
                &f.owner,
                &p(&format!("{name}.md")),
                FileWrite::markdown(format!("a {form} b")),
                Precondition::None,
            )
            .await
            .unwrap();
        let marker = if name == "wide-ascii" {
            "[REDACTED:openai]"
        } else {
            "[REDACTED:accented]"
        };
        assert_eq!(stored.content, format!("a {marker} b"), "{name}");
    }
}

#[tokio::test]
async fn a_path_or_media_type_with_a_secret_is_refused_and_nothing_is_stored() {
    let f = fixture();
    let cases = [
        (
            format!("notes/{SECRET}.md"),
            "text/markdown".to_owned(),
            "path",
        ),
        (SECRET.to_owned(), "text/markdown".to_owned(), "path"),
        (
            "a.md".to_owned(),
            format!("text/plain; key={SECRET}"),
            "contentType",
        ),
    ];
    for (path, content_type, field) in cases {
        let write = FileWrite::text(
            "harmless",
            wsp_types::MediaType::parse(&content_type).unwrap(),
        );
        let err = f
            .store
            .put(&f.owner, &p(&path), write, Precondition::None)
            .await
            .unwrap_err();
        assert_eq!(err, StoreError::ContainsSecret { field }, "{path}");
        assert!(!err.to_string().contains(SECRET));
    }
    assert!(
        f.backend
            .list(&f.owner, &WorkspacePrefix::all())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.backend.changes(&f.owner, 0, 10).await.unwrap().head, 0);
    // Another tenant has no secrets: the same path is stored.
    let other = Owner::parse("u", "w").unwrap();
    f.store
        .put(
            &other,
            &p(&format!("notes/{SECRET}.md")),
            FileWrite::markdown(SECRET),
            Precondition::None,
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn snapshot_labels_and_outcomes_with_a_secret_are_refused() {
    let f = fixture();
    let run = wsp_store::RunMeta::new(SECRET, "alice", std::time::Duration::from_secs(60));
    for label in [
        SnapshotLabel::text(format!("about {SECRET}")),
        SnapshotLabel::Run(run),
    ] {
        assert_eq!(
            f.store.snapshot(&f.owner, &label).await.unwrap_err(),
            StoreError::ContainsSecret { field: "label" }
        );
        assert_eq!(
            f.store
                .snapshot_within(&f.owner, &label, SnapshotQuota::UNBOUNDED)
                .await
                .unwrap_err(),
            StoreError::ContainsSecret { field: "label" }
        );
    }
    let info = f.store.snapshot(&f.owner, &"run".into()).await.unwrap();
    assert_eq!(
        f.store
            .release_snapshot(&f.owner, &info.id, SECRET)
            .await
            .unwrap_err(),
        StoreError::ContainsSecret { field: "outcome" }
    );
    assert!(
        f.backend
            .open_snapshots_before(chrono::Utc::now(), 10)
            .await
            .unwrap()
            .iter()
            .all(|(_, s)| s.label == SnapshotLabel::text("run"))
    );
    f.store
        .release_snapshot(&f.owner, &info.id, "completed")
        .await
        .unwrap();
}

#[tokio::test]
async fn a_publication_through_the_layer_is_redacted() {
    let f = fixture();
    // Stored before the secret was configured: plaintext in the backend.
    f.backend
        .put(
            &f.owner,
            &p("list.md"),
            FileWrite::markdown(format!("eggs {SECRET}")),
            Precondition::None,
        )
        .await
        .unwrap();
    let cook = Owner::new(f.owner.tenant.clone(), shared_workspace("cook").unwrap());
    let publication = Publication {
        source: f.owner.clone(),
        source_is_shared: false,
        path: p("list.md"),
        target: Some(cook.clone()),
        target_path: Some(p("inbox/list.md")),
        prefix: PublishPrefix::default(),
        author: Some("main".into()),
    };
    let copy = publication.run(&f.store).await.unwrap();
    assert_eq!(copy.content, "eggs [REDACTED:openai]");
    let named = Publication {
        target_path: Some(p(&format!("inbox/{SECRET}"))),
        ..publication
    };
    assert_eq!(
        named.run(&f.store).await.unwrap_err(),
        PublishError::Target {
            path: p(&format!("inbox/{SECRET}")),
            error: StoreError::ContainsSecret { field: "path" }
        }
    );
    assert_eq!(
        everything_stored(&f, &cook).await,
        "inbox/list.md text/markdown Some(\"main\") eggs [REDACTED:openai]\n"
    );
}

#[tokio::test]
async fn reads_and_deletes_pass_through_so_old_plaintext_can_be_removed() {
    let f = fixture();
    let leaked = p(&format!("old/{SECRET}"));
    f.backend
        .put(
            &f.owner,
            &leaked,
            FileWrite::markdown("old"),
            Precondition::None,
        )
        .await
        .unwrap();
    assert_eq!(
        f.store.get(&f.owner, &leaked, None).await.unwrap().content,
        "old"
    );
    f.store
        .delete(&f.owner, &leaked, Precondition::None)
        .await
        .unwrap();
    assert!(f.backend.get(&f.owner, &leaked, None).await.is_err());
}

#[tokio::test]
async fn the_layer_offers_what_the_store_beneath_offers() {
    let f = fixture();
    assert_eq!(f.store.features(), StoreFeatures::ALL);
    assert_eq!(f.store.limits(), f.backend.limits());
    assert!(f.store.subscribe().is_some());
    // Held as the trait object a host passes around.
    let dynamic: Arc<dyn WorkspaceStore> = Arc::new(RedactingStore::new(
        f.backend.clone() as Arc<dyn WorkspaceStore>,
        f.store.secrets().clone(),
    ));
    let stored = dynamic
        .put(
            &f.owner,
            &p("x.md"),
            FileWrite::markdown(SECRET),
            Precondition::None,
        )
        .await
        .unwrap();
    assert_eq!(stored.content, "[REDACTED:openai]");
}
