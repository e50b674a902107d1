//! The filesystem map for the system prompt: deterministic, snapshot-tested.

use wsp_vfs::{AccessScope, MountConfig, Vfs};

use crate::support::{Disk, vfs_with};

#[test]
fn the_filesystem_map_reads_well() {
    let disk = Disk::new();
    let entries = [
        (
            "/project/scratch",
            AccessScope::ReadWrite,
            MountConfig::virtual_namespace("scratch"),
        ),
        (
            "/outbox",
            AccessScope::WriteOnly,
            MountConfig::virtual_namespace("outbox"),
        ),
        (
            "/project",
            AccessScope::ReadOnly,
            MountConfig::physical(disk.root()),
        ),
        (
            "/sandbox",
            AccessScope::ReadWrite,
            MountConfig::overlay("sandbox", disk.root()),
        ),
    ];
    let (vfs, _) = vfs_with(&entries);
    let map = vfs.filesystem_map();
    assert!(
        !map.contains(disk.tmp.path().to_string_lossy().as_ref()),
        "no host path in the map"
    );
    insta::assert_snapshot!("filesystem_map", map);
    // Same table, same text, whatever the entry order.
    let mut reversed = entries.to_vec();
    reversed.reverse();
    let (again, _) = vfs_with(&reversed);
    assert_eq!(again.filesystem_map(), map);
}

#[test]
fn the_empty_map_says_there_is_no_access() {
    insta::assert_snapshot!("filesystem_map_empty", Vfs::empty().filesystem_map());
}

#[test]
fn the_tool_catalogues_read_well() {
    let all = wsp_vfs::catalogue(&[AccessScope::ReadWrite]);
    insta::assert_snapshot!(
        "files_catalogue",
        serde_json::to_string_pretty(&all).unwrap()
    );
    let items: Vec<_> = wsp_vfs::ItemToolName::ALL
        .into_iter()
        .map(wsp_vfs::ItemToolName::definition)
        .collect();
    insta::assert_snapshot!(
        "items_catalogue",
        serde_json::to_string_pretty(&items).unwrap()
    );
}
