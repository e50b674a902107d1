//! Change notices across replicas: every committed write or delete runs `pg_notify` on
//! [`CHANNEL`] in its transaction (PostgreSQL delivers it at commit, in commit order), and each
//! store keeps one extra connection that `LISTEN`s and passes notices of its schema on to the
//! store's subscribers.
//!
//! The payload is `<schema> <replica> <seq> <tenant> <workspace>` (none of these holds a
//! space). A store tells its own subscribers of its own commits directly, so the listener skips
//! notices carrying its replica id. A notice is a wake-up call, never data: when the listening
//! connection breaks, the listener reconnects and then sends one notice per owner with its
//! current sequence number, so readers that may have missed one re-read the feed.

use std::future::poll_fn;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Config, Notification};
use wsp_store::ChangeNotice;
use wsp_types::Owner;

use crate::schema::SchemaName;

/// The notification channel of every wsp store in a database.
pub(crate) const CHANNEL: &str = "wsp_changes";

/// Pause before reconnecting, doubled after each failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Every owner's newest sequence number, for the catch-up after a reconnect. The one
/// statement that reads across owners: it reads sequence numbers only, to wake feed readers.
const HEADS: &str = "SELECT tenant, workspace, seq FROM {s}.wsp_owners WHERE seq > 0";

/// The listening task of one store; dropping it stops the task and closes its connection.
#[derive(Debug)]
pub(crate) struct Listener {
    task: JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the listener needs to know.
pub(crate) struct Settings {
    /// How to connect (the store's own configuration).
    pub(crate) config: Config,
    /// TLS as the store's own connections use it.
    pub(crate) tls: crate::tls::MakeTls,
    /// Whose notices to pass on.
    pub(crate) schema: SchemaName,
    /// This store's replica id (its own notices are skipped).
    pub(crate) replica: String,
    /// How often an idle listening connection is checked, and how long the check may take.
    pub(crate) ping: Duration,
}

/// Starts listening in the background (within the current Tokio runtime). The receiver
/// completes once the first session is listening: from then on no commit of another replica
/// goes unheard (a store waits for it before it is handed out).
pub(crate) fn spawn(
    settings: Settings,
    notices: broadcast::Sender<ChangeNotice>,
) -> (Listener, oneshot::Receiver<()>) {
    let (listening, first) = oneshot::channel();
    let task = tokio::spawn(run(settings, notices, listening));
    (Listener { task }, first)
}

async fn run(
    settings: Settings,
    notices: broadcast::Sender<ChangeNotice>,
    listening: oneshot::Sender<()>,
) {
    let heads = settings.schema.render(HEADS);
    let mut backoff = FIRST_BACKOFF;
    let mut reconnect = false;
    let mut listening = Some(listening);
    loop {
        if let Ok(true) = session(&settings, &heads, &notices, reconnect, &mut listening).await {
            backoff = FIRST_BACKOFF;
        }
        reconnect = true;
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One listening connection, until it breaks. `Ok(true)` when it got as far as listening;
/// `listening` is told the first time that happens.
async fn session(
    settings: &Settings,
    heads: &str,
    notices: &broadcast::Sender<ChangeNotice>,
    catch_up: bool,
    listening: &mut Option<oneshot::Sender<()>>,
) -> Result<bool, tokio_postgres::Error> {
    let connect =
        tokio::time::timeout(settings.ping, settings.config.connect(settings.tls.clone()));
    let Ok(connected) = connect.await else {
        return Ok(false);
    };
    let (client, mut connection) = connected?;
    let (found, mut received) = mpsc::unbounded_channel::<Notification>();
    // The connection must be polled for the client to work; notifications come out of it.
    let _driver = AbortOnDrop(tokio::spawn(async move {
        while let Some(Ok(message)) = poll_fn(|cx| connection.poll_message(cx)).await {
            if let AsyncMessage::Notification(n) = message
                && found.send(n).is_err()
            {
                return;
            }
        }
    }));
    let Ok(listening_now) = tokio::time::timeout(
        settings.ping,
        client.batch_execute(&format!("LISTEN {CHANNEL}")),
    )
    .await
    else {
        return Ok(false);
    };
    listening_now?;
    if let Some(tell) = listening.take() {
        let _ = tell.send(());
    }
    if catch_up {
        let Ok(rows) = tokio::time::timeout(settings.ping, client.query(heads, &[])).await else {
            return Ok(true);
        };
        for row in rows? {
            let (tenant, workspace): (&str, &str) = (row.try_get(0)?, row.try_get(1)?);
            let seq: i64 = row.try_get(2)?;
            if let Ok(owner) = Owner::parse(tenant, workspace) {
                let _ = notices.send(ChangeNotice {
                    owner,
                    seq: seq as u64,
                });
            }
        }
    }
    let mut ticks = tokio::time::interval(settings.ping);
    ticks.tick().await;
    loop {
        tokio::select! {
            notification = received.recv() => match notification {
                Some(n) => {
                    if let Some(notice) = parse(&n, &settings.schema, &settings.replica) {
                        let _ = notices.send(notice);
                    }
                }
                // The connection ended.
                None => return Ok(true),
            },
            _ = ticks.tick() => {
                // An idle connection may be dead without knowing it (a black-holed network).
                match tokio::time::timeout(settings.ping, client.simple_query("")).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(e),
                    Err(_) => return Ok(true),
                }
            }
        }
    }
}

/// The notice in a notification of `schema` from another replica than `replica`.
fn parse(n: &Notification, schema: &SchemaName, replica: &str) -> Option<ChangeNotice> {
    if n.channel() != CHANNEL {
        return None;
    }
    let mut parts = n.payload().split(' ');
    let (from_schema, from_replica) = (parts.next()?, parts.next()?);
    if from_schema != schema.as_str() || from_replica == replica {
        return None;
    }
    let seq = parts.next()?.parse().ok()?;
    let owner = Owner::parse(parts.next()?, parts.next()?).ok()?;
    parts
        .next()
        .is_none()
        .then_some(ChangeNotice { owner, seq })
}

/// The SQL expression (for a statement's select list) that notifies of change `$seq` of owner
/// `$1`, `$2` from `replica`, in a store of `schema`.
pub(crate) fn notify_expression(schema: &SchemaName, replica: &str, seq: &str) -> String {
    format!(
        "pg_notify('{CHANNEL}', '{} {replica} ' || {seq}::text || ' ' || $1 || ' ' || $2)",
        schema.as_str()
    )
}
