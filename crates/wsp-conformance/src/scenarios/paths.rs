//! WIRE §4 and the adversarial path vectors (`shared/vectors/paths.json`, group `http_path`):
//! raw and encoded paths, refused paths, decode-once, length bounds.

use super::{create, expect_absent, percent_decode};
use crate::outcome::Outcome;
use crate::scenario::{Ctx, Role, ScenarioResult};

/// Path segments a PUT by an authorized caller must refuse with 400, sent byte for byte as the
/// `{path}` of `/v1/host/workspace/files/{path}`. `None` stands for 257 `a`s.
pub(crate) const REFUSED: [Option<&str>; 15] = [
    Some("..%2Fetc%2Fpasswd"),
    Some("a%2F..%2F..%2Fb"),
    Some("a/../b"),
    Some("a/./b"),
    Some("%2Fetc%2Fpasswd"),
    Some("a//b"),
    Some("a/"),
    Some("%2e%2e%2Fx"),
    Some("a%5C..%5Cb"),
    Some("a%00.md"),
    Some("a%0Ab.md"),
    Some("~%2F.ssh"),
    Some("C:%5Cwindows"),
    Some("-rf"),
    None,
];

/// Legal names (placed under the scenario's prefix) and the earlier vector each must be the same
/// file as.
pub(crate) const ACCEPTED: [(&str, Option<&str>); 4] = [
    ("notes/plan.md", None),
    ("notes%2Fplan.md", Some("notes/plan.md")),
    ("report..final.md", None),
    ("a.b-c_d/E.md", None),
];

/// WS-PATH-001
pub(crate) async fn raw_and_encoded_are_one_file(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let raw = ctx.path("dir/file.md");
    let encoded = raw.replace('/', "%2F");
    let first = create(&a, &raw, "raw").await?;
    let reply = a.get(&encoded).send().await?;
    let read = reply.expect_file(&raw)?;
    if read.etag != first.etag || read.content.as_deref() != Some("raw") {
        return Err(reply.fail("the encoded path reads another file than the raw one"));
    }
    let reply = a.put(&encoded, "encoded").send().await?;
    let second = reply.expect_file(&raw)?;
    if second.version != 2 {
        return Err(reply.fail(format!(
            "a PUT through the encoded path gave version {}, expected 2",
            second.version
        )));
    }
    let reply = a.get(&raw).send().await?;
    let read = reply.expect_file(&raw)?;
    if read.content.as_deref() != Some("encoded") {
        return Err(reply.fail("the raw path does not see the write made through the encoded path"));
    }
    let half = format!("{}dir%2Ffile.md", ctx.prefix());
    let reply = a.get(&half).send().await?;
    reply.expect_file(&raw)?;
    a.delete(&encoded).send().await?.expect_status(204)?;
    expect_absent(&a, &raw, "DELETE through the encoded path").await?;
    Ok(Outcome::pass(
        "raw, fully and partly encoded paths name one file",
    ))
}

/// WS-PATH-002
pub(crate) async fn refused_vectors(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let long = "a".repeat(257);
    let mut unobservable = Vec::new();
    for vector in REFUSED {
        let segment = vector.unwrap_or(&long);
        let reply = match a.put(segment, "must not be stored").send().await {
            Ok(reply) => reply,
            Err(o) if o.unobservable => {
                unobservable.push(segment.to_string());
                continue;
            }
            Err(o) => return Err(o),
        };
        if reply.status < 300 {
            ctx.stray(Role::A, segment);
        }
        reply
            .expect_error(400, "validation_error")
            .map_err(|o| o.context(&format!("path {segment:?}")))?;
    }
    if !unobservable.is_empty() {
        return Ok(Outcome::unobservable(format!(
            "cannot send {unobservable:?} byte for byte; the other vectors answer 400"
        )));
    }
    Ok(Outcome::pass(format!(
        "all {} refused vectors answer 400 validation_error",
        REFUSED.len()
    )))
}

/// WS-PATH-003
pub(crate) async fn accepted_vectors(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let mut seen: Vec<(&str, crate::expect::FileView)> = Vec::new();
    for (vector, same_as) in ACCEPTED {
        let sent = ctx.path(vector);
        let decoded = percent_decode(&sent);
        let reply = a.put(&sent, vector).send().await?;
        let file = reply.expect_file(&decoded).map_err(|o| o.context(vector))?;
        if let Some(earlier) = same_as {
            let Some((_, before)) = seen.iter().find(|(v, _)| *v == earlier) else {
                continue;
            };
            if file.version != before.version + 1 {
                return Err(reply.fail(format!(
                    "{vector} should be the same file as {earlier} (version {} -> {}), got version {}",
                    before.version,
                    before.version + 1,
                    file.version
                )));
            }
        } else if file.version != 1 {
            return Err(reply.fail(format!(
                "{vector} is a new file but got version {}",
                file.version
            )));
        }
        seen.push((vector, file));
    }
    Ok(Outcome::pass(format!(
        "all {} legal vectors accepted; %2F names the raw file",
        ACCEPTED.len()
    )))
}

/// WS-PATH-004
pub(crate) async fn length_bounds(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let prefix = ctx.prefix();
    if prefix.len() >= 250 {
        return Ok(Outcome::unobservable(
            "the run prefix is too long to build a 256-character path",
        ));
    }
    let longest = format!("{prefix}{}", "a".repeat(256 - prefix.len()));
    let too_long = format!("{longest}b");
    create(&a, &longest, "256 characters").await?;
    let reply = a.put(&too_long, "257 characters").send().await?;
    if reply.status < 300 {
        ctx.stray(Role::A, &too_long);
    }
    reply
        .expect_error(400, "validation_error")
        .map_err(|o| o.context("257 characters"))?;
    Ok(Outcome::pass("256 characters accepted, 257 refused"))
}

/// WS-PATH-005
pub(crate) async fn decoded_once(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    // `%252F` decodes once to `%2F`, which is not a legal path character; decoding twice would
    // make it `/` and a legal path.
    let twice = format!("{}x%252Fy.md", ctx.prefix());
    let reply = a.put(&twice, "decoded twice?").send().await?;
    if reply.status < 300 {
        ctx.stray(Role::A, &twice);
    }
    reply
        .expect_error(400, "validation_error")
        .map_err(|o| o.context("x%252Fy.md"))?;
    expect_absent(&a, &ctx.path("x/y.md"), "a PUT of x%252Fy.md").await?;
    Ok(Outcome::pass(
        "%252F is decoded once (to an illegal %2F) and refused",
    ))
}
