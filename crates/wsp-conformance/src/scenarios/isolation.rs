//! RFC 0059 §E WCT-1 (and WIRE §2/§3): owner B never sees owner A's files, and every answer
//! about one of them is exactly the answer about a path that never existed.

use super::{create, expect_absent, expect_conflict, expect_same_answer, expect_unchanged};
use crate::expect::FileView;
use crate::outcome::Outcome;
use crate::scenario::{Caller, Ctx, ScenarioResult};

struct Setup<'c> {
    a: Caller<'c>,
    b: Caller<'c>,
    /// A's file.
    owned: String,
    file: FileView,
    /// A path nobody wrote.
    missing: String,
}

async fn setup(ctx: &Ctx) -> Result<Setup<'_>, Outcome> {
    let b = ctx.as_b()?;
    let a = ctx.as_a()?;
    let owned = ctx.path("private.md");
    let file = create(&a, &owned, "owner A's private notes").await?;
    Ok(Setup {
        a,
        b,
        owned,
        file,
        missing: ctx.path("missing.md"),
    })
}

/// WS-WCT-001
pub(crate) async fn read_like_missing(ctx: &Ctx) -> ScenarioResult {
    let s = setup(ctx).await?;
    let theirs = s.b.get(&s.owned).send().await?;
    let missing = s.b.get(&s.missing).send().await?;
    theirs.expect_error(404, "not_found")?;
    expect_same_answer(&theirs, &s.owned, &missing, &s.missing)?;
    Ok(Outcome::pass(
        "B's GET of A's file: the same 404 as for a missing path",
    ))
}

/// WS-WCT-002
pub(crate) async fn version_like_missing(ctx: &Ctx) -> ScenarioResult {
    let s = setup(ctx).await?;
    let theirs = s.b.get_version(&s.owned, 1).send().await?;
    let missing = s.b.get_version(&s.missing, 1).send().await?;
    theirs.expect_error(404, "not_found")?;
    expect_same_answer(&theirs, &s.owned, &missing, &s.missing)?;
    Ok(Outcome::pass(
        "B's ?version=1 of A's file: the same 404 as for a missing path",
    ))
}

/// WS-WCT-003
pub(crate) async fn history_like_missing(ctx: &Ctx) -> ScenarioResult {
    let s = setup(ctx).await?;
    // The history endpoint is our extension: a host that does not serve it for A's own file
    // does not have it.
    let own = s.a.history(&s.owned).send().await?;
    if own.status != 200 {
        return Err(Outcome::inapplicable(format!(
            "GET /v1/host/workspace/history/{{path}} (extension) answers {} for the owner's own file",
            own.status
        )));
    }
    let theirs = s.b.history(&s.owned).send().await?;
    let missing = s.b.history(&s.missing).send().await?;
    theirs.expect_error(404, "not_found")?;
    expect_same_answer(&theirs, &s.owned, &missing, &s.missing)?;
    Ok(Outcome::pass(
        "B's history of A's file: the same 404 as for a missing path",
    ))
}

/// WS-WCT-004
pub(crate) async fn list_never_shows(ctx: &Ctx) -> ScenarioResult {
    let s = setup(ctx).await?;
    let scoped = s.b.list(Some(&ctx.prefix())).send().await?;
    let files = scoped.expect_list()?;
    if !files.is_empty() {
        return Err(scoped.fail(format!(
            "B's list under A's prefix shows {:?}",
            files.iter().map(|f| &f.path).collect::<Vec<_>>()
        )));
    }
    let unused = s.b.list(Some(&ctx.path("never-used/"))).send().await?;
    unused.expect_list()?;
    expect_same_answer(&scoped, "", &unused, "")?;
    let everything = s.b.list(None).send().await?;
    if everything.expect_list()?.iter().any(|f| f.path == s.owned) {
        return Err(everything.fail("B's unfiltered list shows A's file"));
    }
    if everything.text().contains(&s.file.etag) {
        return Err(everything.fail("B's list carries the etag of A's file"));
    }
    Ok(Outcome::pass(
        "B's lists (scoped and unfiltered) never show A's file",
    ))
}

/// WS-WCT-005
pub(crate) async fn writes_stay_separate(ctx: &Ctx) -> ScenarioResult {
    let s = setup(ctx).await?;
    let reply = s.b.put(&s.owned, "owner B's own file").send().await?;
    let theirs = reply.expect_file(&s.owned)?;
    if theirs.version != 1 {
        return Err(reply.fail(format!(
            "B's first write of the path is version {}: it continued A's file",
            theirs.version
        )));
    }
    expect_unchanged(&s.a, &s.owned, &s.file, "B's write of the same path").await?;
    let reply = s.b.get(&s.owned).send().await?;
    let read = reply.expect_file(&s.owned)?;
    if read.content.as_deref() != Some("owner B's own file") {
        return Err(reply.fail("B reads something other than B's own write"));
    }
    s.b.delete(&s.owned).send().await?.expect_status(204)?;
    expect_unchanged(
        &s.a,
        &s.owned,
        &s.file,
        "B's delete of its own file at the same path",
    )
    .await?;
    expect_absent(&s.b, &s.owned, "B's delete").await?;
    Ok(Outcome::pass(
        "B's write and delete of the same path touch only B's file",
    ))
}

/// WS-WCT-006
pub(crate) async fn delete_like_missing(ctx: &Ctx) -> ScenarioResult {
    let s = setup(ctx).await?;
    let theirs = s.b.delete(&s.owned).send().await?;
    let missing = s.b.delete(&s.missing).send().await?;
    theirs.expect_error(404, "not_found")?;
    expect_same_answer(&theirs, &s.owned, &missing, &s.missing)?;
    expect_unchanged(&s.a, &s.owned, &s.file, "B's DELETE").await?;
    Ok(Outcome::pass(
        "B's DELETE of A's file: the same 404 as for a missing path; the file stays",
    ))
}

/// WS-WCT-007
pub(crate) async fn if_match_like_missing(ctx: &Ctx) -> ScenarioResult {
    let s = setup(ctx).await?;
    let theirs =
        s.b.put(&s.owned, "hijack")
            .header("If-Match", s.file.etag.clone())
            .send()
            .await?;
    let missing =
        s.b.put(&s.missing, "hijack")
            .header("If-Match", s.file.etag.clone())
            .send()
            .await?;
    expect_conflict(&theirs, 0)?;
    expect_same_answer(&theirs, &s.owned, &missing, &s.missing)?;
    expect_unchanged(
        &s.a,
        &s.owned,
        &s.file,
        "B's conditional write with A's etag",
    )
    .await?;
    expect_absent(&s.b, &s.owned, "B's refused conditional write").await?;
    Ok(Outcome::pass(
        "A's etag in B's If-Match: 409 currentVersion 0, as for a missing path",
    ))
}
