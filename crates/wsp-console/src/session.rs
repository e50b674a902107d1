//! Server-side sessions: a random id in an HttpOnly cookie maps to the person's key, held in
//! this process's memory only, until sign-out or the idle timeout.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "wsp_console";

/// Most sessions kept at once; past it the least recently used one ends.
const MAX_SESSIONS: usize = 10_000;

/// One signed-in person.
#[derive(Clone)]
pub(crate) struct Session {
    /// The API key the person typed; sent only to the API router, never to the page.
    pub(crate) key: String,
    /// The token every state-changing form carries.
    pub(crate) csrf: String,
    /// Whether the key may write files (probed at sign-in; the API decides every write).
    pub(crate) can_write: bool,
    last_seen: Instant,
}

impl Session {
    /// Whether `presented` is this session's CSRF token (compared in constant time).
    pub(crate) fn csrf_matches(&self, presented: &str) -> bool {
        presented.as_bytes().ct_eq(self.csrf.as_bytes()).into()
    }
}

/// What a cookie found.
pub(crate) enum Lookup {
    /// A live session (its idle clock restarted).
    Live(Session),
    /// A session that existed but sat idle too long (now gone).
    Expired,
    /// No cookie, or one naming no session.
    Absent,
}

/// The sessions of this process, keyed by the SHA-256 of their id: the map never holds an id
/// a cookie could be made from, and a lookup compares digests, not the secret.
pub(crate) struct Sessions {
    idle: Duration,
    by_digest: Mutex<HashMap<[u8; 32], Session>>,
}

fn digest(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

impl Sessions {
    pub(crate) fn new(idle: Duration) -> Self {
        Self {
            idle,
            by_digest: Mutex::new(HashMap::new()),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Session>> {
        // A panic while holding the lock leaves a consistent map: keep using it.
        self.by_digest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts a session for `key` and answers its id (256 random bits, hex).
    pub(crate) fn start(&self, key: String, can_write: bool) -> String {
        let id = wsp_types::random_hex(32);
        let now = Instant::now();
        let mut map = self.map();
        map.retain(|_, s| now.duration_since(s.last_seen) <= self.idle);
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map.iter().min_by_key(|(_, s)| s.last_seen).map(|(d, _)| *d)
        {
            map.remove(&oldest);
        }
        map.insert(
            digest(&id),
            Session {
                key,
                csrf: wsp_types::random_hex(32),
                can_write,
                last_seen: now,
            },
        );
        id
    }

    /// The session of `id`, its idle clock restarted; an idle one is ended here.
    pub(crate) fn get(&self, id: &str) -> Lookup {
        let now = Instant::now();
        let d = digest(id);
        let mut map = self.map();
        match map.get_mut(&d) {
            None => Lookup::Absent,
            Some(s) if now.duration_since(s.last_seen) > self.idle => {
                map.remove(&d);
                Lookup::Expired
            }
            Some(s) => {
                s.last_seen = now;
                Lookup::Live(s.clone())
            }
        }
    }

    /// Ends the session of `id` (sign-out, or a key the API no longer accepts).
    pub(crate) fn end(&self, id: &str) {
        self.map().remove(&digest(id));
    }
}

/// The session id in a `Cookie` header, if any.
pub(crate) fn cookie_id(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
        .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The `Set-Cookie` value that holds `id`.
pub(crate) fn set_cookie(id: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict{secure}")
}

/// The `Set-Cookie` value that removes the cookie.
pub(crate) fn clear_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_lives_until_idle_or_ended() {
        let sessions = Sessions::new(Duration::from_millis(50));
        let id = sessions.start("k".into(), true);
        assert_eq!(id.len(), 64);
        assert!(matches!(sessions.get(&id), Lookup::Live(s) if s.key == "k"));
        std::thread::sleep(Duration::from_millis(80));
        assert!(matches!(sessions.get(&id), Lookup::Expired));
        assert!(matches!(sessions.get(&id), Lookup::Absent));
        let id = sessions.start("k".into(), false);
        sessions.end(&id);
        assert!(matches!(sessions.get(&id), Lookup::Absent));
    }

    #[test]
    fn the_cookie_is_read_only_when_well_formed() {
        let id = "a".repeat(64);
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::COOKIE,
            format!("x=1; {COOKIE}={id}").parse().unwrap(),
        );
        assert_eq!(cookie_id(&h), Some(id));
        h.insert(
            http::header::COOKIE,
            format!("{COOKIE}=zz").parse().unwrap(),
        );
        assert_eq!(cookie_id(&h), None);
    }

    #[test]
    fn csrf_tokens_compare_whole() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let id = sessions.start("k".into(), true);
        let Lookup::Live(s) = sessions.get(&id) else {
            panic!("live")
        };
        assert!(s.csrf_matches(&s.csrf.clone()));
        assert!(!s.csrf_matches(&s.csrf[..10]));
        assert!(!s.csrf_matches(""));
    }
}
