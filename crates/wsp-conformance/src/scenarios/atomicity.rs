//! RFC 0059 §C and WIRE §4: atomic writes, racing conditional writers, no lost write.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::{join, join_all};

use super::{create, expect_conflict};
use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};
use crate::transport::Reply;

/// Size of each body in the reader/writer race (capped by `maxFileBytes`).
const BODY_BYTES: usize = 256 * 1024;
/// Writes in the reader/writer race.
const WRITES: usize = 12;
/// Concurrent readers in the reader/writer race.
const READERS: usize = 4;
/// A reader stops after this many reads even if the writer is still going.
const MAX_READS_PER_READER: usize = 400;
/// Concurrent writers in the racing-writer scenarios.
const RACERS: usize = 8;
/// Rounds of the conditional race.
const ROUNDS: u64 = 3;

/// A body made of one letter per writer, marked at both ends: a mix of two is never equal to
/// any body.
fn body(i: usize, size: usize) -> String {
    let marker = format!("[{i:02}]");
    let fill = char::from(b'a' + (i % 26) as u8);
    let middle = size.saturating_sub(2 * marker.len());
    format!("{marker}{}{marker}", fill.to_string().repeat(middle))
}

/// WS-ATOM-001
pub(crate) async fn readers_see_whole_bodies(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let size = ctx.workspace_limit("maxFileBytes").map_or(BODY_BYTES, |m| {
        usize::try_from(m).unwrap_or(usize::MAX).min(BODY_BYTES)
    });
    if size < 16 {
        return Ok(Outcome::unobservable(format!(
            "maxFileBytes = {size} is too small for distinguishable bodies"
        )));
    }
    let bodies: Vec<String> = (0..=WRITES).map(|i| body(i, size)).collect();
    let path = ctx.path("atomic.md");
    create(&a, &path, &bodies[0]).await?;
    let done = AtomicBool::new(false);

    let writer = async {
        let result = async {
            for (i, b) in bodies.iter().enumerate().skip(1) {
                let reply = a.put(&path, b).send().await?;
                let file = reply.expect_file(&path)?;
                if file.version != i as u64 + 1 {
                    return Err(reply.fail(format!("write {i} gave version {}", file.version)));
                }
            }
            Ok(())
        }
        .await;
        done.store(true, Ordering::SeqCst);
        result
    };
    let reader = || async {
        let mut reads = 0usize;
        let mut seen = BTreeSet::new();
        loop {
            let finished = done.load(Ordering::SeqCst);
            let reply = a.get(&path).send().await?;
            let file = reply.expect_file(&path)?;
            let content = file.content.as_deref().unwrap_or_default();
            let Some(index) = bodies.iter().position(|b| b == content) else {
                return Err(reply.fail(format!(
                    "a reader saw a {}-byte body that is none of the bodies written (torn write)",
                    content.len()
                )));
            };
            if file.version != index as u64 + 1 {
                return Err(reply.fail(format!(
                    "a reader saw version {} with the content of version {}",
                    file.version,
                    index + 1
                )));
            }
            seen.insert(index);
            reads += 1;
            if finished || reads >= MAX_READS_PER_READER {
                return Ok::<_, Outcome>((reads, seen));
            }
        }
    };
    let (written, read) = join(writer, join_all((0..READERS).map(|_| reader()))).await;
    written?;
    let mut total = 0;
    let mut distinct = BTreeSet::new();
    for r in read {
        let (reads, seen) = r?;
        total += reads;
        distinct.extend(seen);
    }
    Ok(Outcome::pass(format!(
        "{total} concurrent reads during {WRITES} writes of {size} bytes saw {} distinct versions, each whole",
        distinct.len()
    )))
}

/// Splits racing replies into the one success and the conflicts; anything else fails.
fn one_winner<'r>(
    replies: &'r [Reply],
    path: &str,
    expected_version: u64,
) -> Result<&'r Reply, Outcome> {
    let winners: Vec<&Reply> = replies.iter().filter(|r| r.status == 200).collect();
    if winners.len() != 1 {
        let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
        let mut failure = Outcome::fail(format!(
            "{} of {} racing writers succeeded (statuses {statuses:?}); exactly one must",
            winners.len(),
            replies.len()
        ));
        // Show the winners, or when none won, what the writers got instead.
        let shown: Vec<&Reply> = if winners.is_empty() {
            replies.iter().collect()
        } else {
            winners
        };
        for reply in shown.into_iter().take(3) {
            failure = failure.with(reply.exchange());
        }
        return Err(failure);
    }
    let winner = winners[0];
    let file = winner.expect_file(path)?;
    if file.version != expected_version {
        return Err(winner.fail(format!(
            "the winner got version {}, expected {expected_version}",
            file.version
        )));
    }
    for loser in replies.iter().filter(|r| r.status != 200) {
        expect_conflict(loser, expected_version)?;
    }
    Ok(winner)
}

/// WS-ATOM-002
pub(crate) async fn racing_if_match(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("race.md");
    let mut live = create(&a, &path, "round 0").await?;
    let mut last_content = "round 0".to_string();
    for round in 1..=ROUNDS {
        let contents: Vec<String> = (0..RACERS)
            .map(|i| format!("round {round} writer {i}"))
            .collect();
        let sends = contents
            .iter()
            .map(|c| a.put(&path, c).header("If-Match", live.etag.clone()).send());
        let replies = join_all(sends)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let winner = one_winner(&replies, &path, live.version + 1)
            .map_err(|o| o.context(&format!("round {round}")))?;
        live = winner.expect_file(&path)?;
        last_content = live.content.clone().unwrap_or_default();
    }
    let reply = a.get(&path).send().await?;
    let now = reply.expect_file(&path)?;
    if now.version != 1 + ROUNDS || now.content.as_deref() != Some(last_content.as_str()) {
        return Err(reply.fail(format!(
            "after {ROUNDS} rounds the file is version {} with {:?}; expected version {} with the last winner's content",
            now.version,
            now.content,
            1 + ROUNDS
        )));
    }
    if ctx.versioned() {
        let keep = ctx.workspace_limit("maxVersions").unwrap_or(u64::MAX);
        for v in 1..=now.version {
            if now.version - v >= keep {
                continue;
            }
            a.get_version(&path, v)
                .send()
                .await?
                .expect_file(&path)
                .map_err(|o| o.context(&format!("?version={v} (versions must be gap-free)")))?;
        }
    }
    Ok(Outcome::pass(format!(
        "{ROUNDS} rounds of {RACERS} writers with one If-Match: one 200 and {} x 409 each, versions 2..{}",
        RACERS - 1,
        1 + ROUNDS
    )))
}

/// WS-ATOM-003
pub(crate) async fn racing_unconditional(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("pileup.md");
    let base = create(&a, &path, "base").await?;
    let contents: Vec<String> = (0..RACERS).map(|i| format!("writer {i}")).collect();
    let replies = join_all(contents.iter().map(|c| a.put(&path, c).send()))
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let mut by_version = Vec::new();
    for (reply, content) in replies.iter().zip(&contents) {
        let file = reply
            .expect_file(&path)
            .map_err(|o| o.context("an unconditional racing write"))?;
        by_version.push((file.version, content.clone()));
    }
    by_version.sort();
    let versions: Vec<u64> = by_version.iter().map(|(v, _)| *v).collect();
    let expected: Vec<u64> = (base.version + 1..=base.version + RACERS as u64).collect();
    if versions != expected {
        let mut failure = Outcome::fail(format!(
            "{RACERS} acknowledged writes got versions {versions:?}, expected {expected:?}"
        ));
        for reply in &replies {
            failure = failure.with(reply.exchange());
        }
        return Err(failure);
    }
    let reply = a.get(&path).send().await?;
    let now = reply.expect_file(&path)?;
    let (last_version, last_content) = by_version.last().cloned().unwrap_or_default();
    if now.version != last_version || now.content.as_deref() != Some(last_content.as_str()) {
        return Err(reply.fail(format!(
            "the live file is version {} {:?}, but version {last_version} was acknowledged with {last_content:?}",
            now.version, now.content
        )));
    }
    if ctx.versioned() {
        let keep = ctx.workspace_limit("maxVersions").unwrap_or(u64::MAX);
        for (version, content) in &by_version {
            if last_version - version >= keep {
                continue;
            }
            let reply = a.get_version(&path, version).send().await?;
            let file = reply.expect_file(&path)?;
            if file.content.as_deref() != Some(content.as_str()) {
                return Err(reply.fail(format!(
                    "version {version} was acknowledged for {content:?} but serves {:?}",
                    file.content
                )));
            }
        }
    }
    Ok(Outcome::pass(format!(
        "{RACERS} concurrent writes acknowledged as versions {}..{}, none lost",
        base.version + 1,
        last_version
    )))
}

/// WS-ATOM-004
pub(crate) async fn racing_create_only(ctx: &Ctx) -> ScenarioResult {
    let a = ctx.as_a()?;
    let path = ctx.path("first-wins.md");
    let contents: Vec<String> = (0..RACERS).map(|i| format!("creator {i}")).collect();
    let replies = join_all(
        contents
            .iter()
            .map(|c| a.put(&path, c).header("If-None-Match", "*").send()),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    let winner = one_winner(&replies, &path, 1)?;
    let created = winner.expect_file(&path)?;
    super::expect_unchanged(&a, &path, &created, "the race").await?;
    Ok(Outcome::pass(format!(
        "{RACERS} racing If-None-Match: * creators: one 200 at version 1, {} x 409",
        RACERS - 1
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_distinct_sized_and_marked() {
        let a = body(1, 64);
        let b = body(2, 64);
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(a.starts_with("[01]") && a.ends_with("[01]"));
        // Half of one and half of the other is neither.
        let torn = format!("{}{}", &a[..32], &b[32..]);
        assert!(torn != a && torn != b);
    }
}
