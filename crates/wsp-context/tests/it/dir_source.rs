//! The directory source: links, special files and listings on a real disk.
#![cfg(unix)]

use std::os::unix::fs::symlink;
use std::path::Path;

use wsp_context::{ContextSource, DirectorySource, ReadOutcome, Refusal};
use wsp_types::WorkspacePrefix;

use crate::support::path;

fn write(root: &Path, rel: &str, content: &[u8]) {
    let full = root.join(rel);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, content).unwrap();
}

async fn read(source: &DirectorySource, rel: &str) -> ReadOutcome {
    source.read(&path(rel)).await.unwrap()
}

/// A workspace directory beside an `outside` directory holding a secret.
fn layout() -> (tempfile::TempDir, std::path::PathBuf) {
    let top = tempfile::tempdir().unwrap();
    let ws = top.path().join("ws");
    write(top.path(), "outside/secret.md", b"secret\n");
    write(&ws, "AGENTS.md", b"agents\n");
    write(&ws, "knowledge/KNOWLEDGE.md", b"knowledge\n");
    write(&ws, "knowledge/deep/a.md", b"a\n");
    (top, ws)
}

#[tokio::test]
async fn links_are_refused_with_the_reason() {
    let (top, ws) = layout();
    let outside = top.path().join("outside");
    symlink(outside.join("secret.md"), ws.join("abs.md")).unwrap();
    symlink("../outside/secret.md", ws.join("rel.md")).unwrap();
    symlink("AGENTS.md", ws.join("inside.md")).unwrap();
    symlink("nowhere.md", ws.join("broken.md")).unwrap();
    symlink(&outside, ws.join("linked-dir")).unwrap();
    symlink("knowledge", ws.join("inside-dir")).unwrap();

    let source = DirectorySource::open(&ws).unwrap();
    let cases = [
        ("AGENTS.md", ReadOutcome::Found("agents\n".into())),
        ("abs.md", ReadOutcome::Refused(Refusal::SymlinkOutside)),
        ("rel.md", ReadOutcome::Refused(Refusal::SymlinkOutside)),
        (
            "linked-dir/secret.md",
            ReadOutcome::Refused(Refusal::SymlinkOutside),
        ),
        (
            "inside.md",
            ReadOutcome::Refused(Refusal::SymlinkNotFollowed),
        ),
        (
            "inside-dir/KNOWLEDGE.md",
            ReadOutcome::Refused(Refusal::SymlinkNotFollowed),
        ),
        ("broken.md", ReadOutcome::Refused(Refusal::SymlinkBroken)),
        ("absent.md", ReadOutcome::Missing),
        ("AGENTS.md/below", ReadOutcome::Missing),
        ("knowledge", ReadOutcome::Refused(Refusal::NotRegularFile)),
    ];
    for (rel, expect) in &cases {
        assert_eq!(&read(&source, rel).await, expect, "{rel}");
    }

    // Following links inside: those resolve, links outside are still refused.
    let following = DirectorySource::open(&ws)
        .unwrap()
        .follow_links_inside(true);
    assert_eq!(
        read(&following, "inside.md").await,
        ReadOutcome::Found("agents\n".into())
    );
    assert_eq!(
        read(&following, "inside-dir/KNOWLEDGE.md").await,
        ReadOutcome::Found("knowledge\n".into())
    );
    for rel in ["abs.md", "rel.md", "linked-dir/secret.md"] {
        assert_eq!(
            read(&following, rel).await,
            ReadOutcome::Refused(Refusal::SymlinkOutside),
            "{rel}"
        );
    }
    assert_eq!(
        read(&following, "broken.md").await,
        ReadOutcome::Refused(Refusal::SymlinkBroken)
    );
}

#[tokio::test]
async fn hard_links_special_files_size_and_encoding() {
    let (top, ws) = layout();
    std::fs::hard_link(top.path().join("outside/secret.md"), ws.join("hard.md")).unwrap();
    write(&ws, "latin1.md", b"caf\xe9\n");
    write(&ws, "big.md", &[b'x'; 64]);
    let fifo = std::process::Command::new("mkfifo")
        .arg(ws.join("fifo.md"))
        .status()
        .unwrap();
    assert!(fifo.success());

    let source = DirectorySource::open(&ws).unwrap().max_file_bytes(63);
    let cases = [
        ("hard.md", ReadOutcome::Refused(Refusal::HardLinked)),
        ("latin1.md", ReadOutcome::Refused(Refusal::NotUtf8)),
        (
            "big.md",
            ReadOutcome::Refused(Refusal::TooLarge { max_bytes: 63 }),
        ),
        ("fifo.md", ReadOutcome::Refused(Refusal::NotRegularFile)),
    ];
    for (rel, expect) in &cases {
        assert_eq!(&read(&source, rel).await, expect, "{rel}");
    }
    let allowing = DirectorySource::open(&ws).unwrap().allow_hard_links(true);
    assert_eq!(
        read(&allowing, "hard.md").await,
        ReadOutcome::Found("secret\n".into())
    );
}

#[tokio::test]
async fn listings_walk_below_the_prefix_without_following_links() {
    let (top, ws) = layout();
    symlink(top.path().join("outside"), ws.join("knowledge/linked")).unwrap();
    symlink(
        top.path().join("outside/secret.md"),
        ws.join("knowledge/secret.md"),
    )
    .unwrap();
    write(&ws, "knowledge/bad name.md", b"unaddressable\n");
    write(&ws, "knowledgebase.md", b"x\n");
    let source = DirectorySource::open(&ws).unwrap();
    let list = |raw: &'static str| {
        let source = source.clone();
        async move {
            source
                .list(&WorkspacePrefix::parse(raw).unwrap())
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.path.to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        list("knowledge/").await,
        [
            "knowledge/KNOWLEDGE.md",
            "knowledge/deep/a.md",
            "knowledge/linked",
            "knowledge/secret.md"
        ]
    );
    assert_eq!(list("knowledge").await.len(), 5);
    assert_eq!(list("knowledge/d").await, ["knowledge/deep/a.md"]);
    assert_eq!(list("knowledge/linked/").await, Vec::<String>::new());
    assert_eq!(list("nothing/").await, Vec::<String>::new());
    assert_eq!(list("").await.len(), 6);
}
