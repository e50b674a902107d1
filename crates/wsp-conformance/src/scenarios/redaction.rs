//! RFC 0059 §E WSR-1: a secret value the host knows is stored as `[REDACTED:<secretId>]`.

use crate::outcome::Outcome;
use crate::scenario::{Ctx, ScenarioResult};

/// WS-WSR-001
pub(crate) async fn secret_is_redacted(ctx: &Ctx) -> ScenarioResult {
    let secret = ctx.secret()?;
    // The evidence must not carry the secret into reports.
    let scrub = |mut outcome: Outcome| {
        outcome.reason = outcome
            .reason
            .replace(&secret.value, crate::exchange::REDACTED);
        for exchange in &mut outcome.evidence {
            exchange.scrub(&secret.value);
        }
        outcome
    };
    check(ctx).await.map(scrub).map_err(scrub)
}

async fn check(ctx: &Ctx) -> ScenarioResult {
    let secret = ctx.secret()?;
    let a = ctx.as_a()?;
    let path = ctx.path("leaky.md");
    let content = format!("token: {}\nagain:{}.\n", secret.value, secret.value);
    let marker = format!("[REDACTED:{}]", secret.id);
    let expected = format!("token: {marker}\nagain:{marker}.\n");
    let put = a.put(&path, &content).send().await?;
    let mut replies = vec![("PUT answer", put)];
    replies.push(("GET", a.get(&path).send().await?));
    if ctx.versioned() {
        replies.push(("?version=1", a.get_version(&path, 1).send().await?));
    }
    for (what, reply) in &replies {
        if reply.text().contains(&secret.value) {
            return Err(reply.fail(format!("{what} carries the secret in plaintext")));
        }
        let file = reply.expect_file(&path).map_err(|o| o.context(what))?;
        if file.content.as_deref() != Some(expected.as_str()) {
            return Err(reply.fail(format!(
                "{what}: stored content is {:?}, expected both occurrences replaced by {marker}",
                file.content
            )));
        }
    }
    Ok(Outcome::pass(format!(
        "both occurrences stored as {marker}"
    )))
}
