//! WIRE §4 and the adversarial path vectors (`conformance/vectors/paths.json`, group `http_path`):
//! raw and encoded paths, refused paths, decode-once, length bounds.

use super::{create, expect_absent, percent_decode};
use crate::outcome::Outcome;
use crate::scenario::{Ctx, Role, ScenarioResult};

/// The adversarial path vectors, `conformance/vectors/paths.json` of the repository
/// (`vectors/paths.json` here is a link to it, packaged as a copy): the one list every test
/// suite of wsp reads.
const VECTORS: &str = include_str!("../../vectors/paths.json");

/// One case of the `http_path` group: the `{path}` segment exactly as sent, the status a PUT
/// by an authorized caller gets, and the earlier vector it must be the same file as.
#[derive(serde::Deserialize)]
struct HttpPathVector {
    path: String,
    expect: u16,
    same_as: Option<String>,
}

/// The `http_path` group. `LONG_257_CHARS` stands for 257 `a`s, as the file says.
fn http_path_vectors() -> Vec<HttpPathVector> {
    #[derive(serde::Deserialize)]
    struct File {
        http_path: Vec<HttpPathVector>,
    }
    let file: File = serde_json::from_str(VECTORS).expect("the packaged vectors are valid JSON");
    file.http_path
        .into_iter()
        .map(|mut v| {
            if v.path == "LONG_257_CHARS" {
                v.path = "a".repeat(257);
            }
            v
        })
        .collect()
}

/// Path segments a PUT by an authorized caller must refuse with 400, sent byte for byte as the
/// `{path}` of `/v1/host/workspace/files/{path}`.
pub(crate) fn refused() -> Vec<String> {
    http_path_vectors()
        .into_iter()
        .filter(|v| v.expect == 400)
        .map(|v| v.path)
        .collect()
}

/// Legal names (placed under the scenario's prefix) and the earlier vector each must be the same
/// file as.
pub(crate) fn accepted() -> Vec<(String, Option<String>)> {
    http_path_vectors()
        .into_iter()
        .filter(|v| v.expect == 200)
        .map(|v| (v.path, v.same_as))
        .collect()
}

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
    let refused = refused();
    let mut unobservable = Vec::new();
    for segment in &refused {
        let segment = segment.as_str();
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
        refused.len()
    )))
}

/// WS-PATH-003
pub(crate) async fn accepted_vectors(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let accepted = accepted();
    let mut seen: Vec<(&str, crate::expect::FileView)> = Vec::new();
    for (vector, same_as) in &accepted {
        let (vector, same_as) = (vector.as_str(), same_as.as_deref());
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
        accepted.len()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_packaged_vectors_read_as_the_scenarios_use_them() {
        let refused = refused();
        let accepted = accepted();
        assert_eq!(
            refused.len() + accepted.len(),
            http_path_vectors().len(),
            "every vector is either refused or accepted"
        );
        assert!(
            refused.contains(&"a".repeat(257)),
            "the long name is spelled out"
        );
        assert!(refused.iter().any(|v| v == "a/../b"));
        assert!(accepted.contains(&(
            "notes%2Fplan.md".to_owned(),
            Some("notes/plan.md".to_owned())
        )));
        for (_, same_as) in &accepted {
            if let Some(earlier) = same_as {
                assert!(
                    accepted.iter().any(|(v, _)| v == earlier),
                    "{earlier} is a vector"
                );
            }
        }
    }
}
