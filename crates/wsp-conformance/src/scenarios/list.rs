//! RFC 0059 §C and WIRE §4: the file list.

use super::create;
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

/// WS-LIST-001
pub(crate) async fn entries_without_content(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let paths = [ctx.path("one.md"), ctx.path("two.md")];
    for p in &paths {
        create(&a, p, "body that must not be listed").await?;
    }
    let reply = a.list(Some(&ctx.prefix())).send().await?;
    let files = reply.expect_list()?;
    for p in &paths {
        if !files.iter().any(|f| &f.path == p) {
            return Err(reply.fail(format!("{p} is missing from the list")));
        }
    }
    if reply.text().contains("body that must not be listed") {
        return Err(reply.fail("the list carries file bodies"));
    }
    Ok(Outcome::pass(format!(
        "{} entries, metadata only",
        files.len()
    )))
}

/// WS-LIST-002
pub(crate) async fn prefix_filter(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let names = ["p/a.md", "p/ab.md", "p/b/c.md", "pq.md", "q.md"];
    for n in names {
        create(&a, &ctx.path(n), n).await?;
    }
    let cases: [(&str, &[&str]); 5] = [
        ("p/a", &["p/a.md", "p/ab.md"]),
        ("p/", &["p/a.md", "p/ab.md", "p/b/c.md"]),
        ("p", &["p/a.md", "p/ab.md", "p/b/c.md", "pq.md"]),
        ("", &names),
        ("zz", &[]),
    ];
    for (prefix, expect) in cases {
        let full = ctx.path(prefix);
        let reply = a.list(Some(&full)).send().await?;
        let mut got: Vec<String> = reply.expect_list()?.into_iter().map(|f| f.path).collect();
        got.sort();
        let mut want: Vec<String> = expect.iter().map(|n| ctx.path(n)).collect();
        want.sort();
        if got != want {
            return Err(reply.fail(format!("prefix {full:?} listed {got:?}, expected {want:?}")));
        }
    }
    Ok(Outcome::pass(
        "prefix is a plain string prefix; no match lists nothing",
    ))
}

/// WS-LIST-003
pub(crate) async fn sorted_by_bytes(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    // Byte order: '-' < '.' < '/' < '0' < 'B' < 'Z' < '_' < 'a'. Case-insensitive, natural or
    // directory-first orders all differ from it on these names.
    let written = [
        "a.md", "B.md", "a_b.md", "a/b.md", "Z9.md", "a-b.md", "a0.md", "_x.md", "a10.md", "a9.md",
    ];
    for n in written {
        create(&a, &ctx.path(n), n).await?;
    }
    let reply = a.list(Some(&ctx.prefix())).send().await?;
    let got: Vec<String> = reply.expect_list()?.into_iter().map(|f| f.path).collect();
    let mut want: Vec<String> = written.iter().map(|n| ctx.path(n)).collect();
    want.sort_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
    if got != want {
        return Err(reply.fail(format!(
            "listed in the order {got:?}, byte order is {want:?}"
        )));
    }
    Ok(Outcome::pass("sorted by path in byte order"))
}

/// WS-LIST-004
pub(crate) async fn entries_agree_with_get(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("agree.txt");
    create(&a, &path, "v1").await?;
    a.put_json(
        &path,
        &serde_json::json!({"content": "v2", "contentType": "text/plain"}),
    )
    .send()
    .await?
    .expect_file(&path)?;
    let get = a.get(&path).send().await?;
    let file = get.expect_file(&path)?;
    let reply = a.list(Some(&path)).send().await?;
    let files = reply.expect_list()?;
    let Some(entry) = files.iter().find(|f| f.path == path) else {
        return Err(reply.fail(format!("{path} is missing from the list")));
    };
    if entry.version != file.version
        || entry.etag != file.etag
        || entry.content_type != file.content_type
        || entry.updated_at != file.updated_at
    {
        return Err(
            Outcome::fail(format!("list entry {entry:?} disagrees with GET {file:?}"))
                .with(reply.exchange())
                .with(get.exchange()),
        );
    }
    Ok(Outcome::pass(
        "version, etag, contentType and updatedAt agree",
    ))
}

/// WS-LIST-005
pub(crate) async fn live_files_only(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let gone = ctx.path("gone.md");
    let kept = ctx.path("kept.md");
    create(&a, &gone, "x").await?;
    create(&a, &kept, "x").await?;
    a.delete(&gone).send().await?.expect_status(204)?;
    let reply = a.list(Some(&ctx.prefix())).send().await?;
    let got: Vec<String> = reply.expect_list()?.into_iter().map(|f| f.path).collect();
    if got != [kept.clone()] {
        return Err(reply.fail(format!(
            "after deleting {gone}, the list is {got:?}, expected [{kept:?}]"
        )));
    }
    Ok(Outcome::pass("a deleted file leaves the list"))
}
