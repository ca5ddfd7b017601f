//! Webhook hooks: named entry points that third parties call.
//!
//! `POST /agents/{id}/hooks/{name}` is called by other services, which hold
//! the hook's own secret rather than the API token: each hook can be
//! revoked alone and a leaked hook secret gives no access to the workspace.
//! An unknown hook is refused exactly as a wrong credential is (after the
//! same work), so callers learn nothing about which hooks exist.
//!
//! Two ways to call, chosen per hook:
//! - **secret** (the default): the caller sends the secret itself in
//!   `x-hook-secret`; only its SHA-256 is stored, compared in constant time.
//! - **signed** (`signed: true`): the caller never sends the secret. It
//!   sends `x-stead-timestamp: <ms>` and `x-stead-signature: sha256=<hex
//!   HMAC-SHA256(secret, "<timestamp>.<body>")>` (the scheme of the agent's
//!   own outgoing webhooks). The timestamp must be within the hook's
//!   `replay_window_ms` of now, and each signature is accepted once within
//!   that window: a captured call cannot be replayed. The secret is kept,
//!   since checking a signature needs it.
//!
//! Either way a caller may send an `Idempotency-Key`: a second call with
//! the same key within the window runs nothing and is answered with the
//! first call's job ([`Hooks::delivered`], [`Hooks::remember`]).

use serde::Serialize;
use serde_json::Value;
use stead_sql::{params, Row, Sql};
use subtle::ConstantTimeEq;

use crate::signing::sha256;
use crate::{Result, SchedError};

/// Shortest accepted secret.
pub const MIN_SECRET_LEN: usize = 16;

/// Default and longest replay window.
pub const DEFAULT_REPLAY_WINDOW_MS: i64 = 5 * 60_000;
pub const MAX_REPLAY_WINDOW_MS: i64 = 24 * 3_600_000;

/// Longest `Idempotency-Key`.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

/// A hook record (a secret-called hook's secret is never kept).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hook {
    pub name: String,
    /// The exec request run on each call; the call's body becomes stdin.
    pub exec: Value,
    /// Whether calls are signed (see the module docs) rather than carry
    /// the secret.
    pub signed: bool,
    /// How long a signed call's timestamp is good, and how long signatures
    /// and idempotency keys are remembered.
    pub replay_window_ms: i64,
    pub created_ms: i64,
    pub calls: i64,
    pub last_call_ms: Option<i64>,
}

/// How a hook is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookOptions {
    pub signed: bool,
    pub replay_window_ms: i64,
}

impl Default for HookOptions {
    fn default() -> Self {
        HookOptions {
            signed: false,
            replay_window_ms: DEFAULT_REPLAY_WINDOW_MS,
        }
    }
}

/// What a call presents.
#[derive(Debug, Clone, Copy)]
pub enum Credential<'a> {
    /// `x-hook-secret`.
    Secret(&'a str),
    /// `x-stead-timestamp` and `x-stead-signature`, over `body`.
    Signed {
        timestamp: &'a str,
        signature: &'a str,
        body: &'a [u8],
    },
    None,
}

fn hook_from_row(row: &Row) -> Result<Hook> {
    Ok(Hook {
        name: row.text(0)?.to_string(),
        exec: serde_json::from_str(row.text(1)?)
            .map_err(|e| SchedError::Corrupt(format!("hook exec: {e}")))?,
        created_ms: row.int(2)?,
        calls: row.int(3)?,
        last_call_ms: row.opt_int(4)?,
        signed: row.opt_text(5)?.is_some(),
        replay_window_ms: row.int(6)?,
    })
}

const COLUMNS: &str =
    "name, exec, created_ms, calls, last_call_ms, signing_secret, replay_window_ms";

/// Whether `name` is a valid hook name: 1-64 of `[A-Za-z0-9._-]`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The hooks of one workspace.
pub struct Hooks<'a, S: Sql> {
    db: &'a S,
}

impl<'a, S: Sql> Hooks<'a, S> {
    pub fn new(db: &'a S) -> Self {
        Hooks { db }
    }

    /// Creates or replaces hook `name`, bound to `exec`, with `secret`.
    pub fn put(
        &self,
        name: &str,
        secret: &str,
        exec: &Value,
        options: HookOptions,
        now_ms: i64,
    ) -> Result<Hook> {
        if !valid_name(name) {
            return Err(SchedError::InvalidHook(format!(
                "name {name:?}: use 1-64 characters of A-Z a-z 0-9 . _ -"
            )));
        }
        if secret.len() < MIN_SECRET_LEN {
            return Err(SchedError::InvalidHook(format!(
                "the secret must be at least {MIN_SECRET_LEN} bytes"
            )));
        }
        if !exec.get("command").is_some_and(Value::is_string) {
            return Err(SchedError::InvalidHook(
                "exec must be an exec request with a command".into(),
            ));
        }
        if !(1_000..=MAX_REPLAY_WINDOW_MS).contains(&options.replay_window_ms) {
            return Err(SchedError::InvalidHook(format!(
                "replay_window_ms must be between 1000 and {MAX_REPLAY_WINDOW_MS}"
            )));
        }
        let digest = sha256(secret.as_bytes());
        let signing_secret = options.signed.then_some(secret);
        let row = self.db.query_row(
            &format!(
                "INSERT INTO hooks (name, secret_sha256, exec, created_ms, signing_secret, \
                 replay_window_ms) VALUES (?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (name) DO UPDATE SET secret_sha256 = excluded.secret_sha256, \
                 exec = excluded.exec, signing_secret = excluded.signing_secret, \
                 replay_window_ms = excluded.replay_window_ms RETURNING {COLUMNS}"
            ),
            params![
                name,
                &digest[..],
                &exec.to_string(),
                now_ms,
                signing_secret,
                options.replay_window_ms
            ],
        )?;
        hook_from_row(&row.ok_or_else(|| SchedError::Corrupt("upsert returned no row".into()))?)
    }

    pub fn get(&self, name: &str) -> Result<Hook> {
        let row = self.db.query_row(
            &format!("SELECT {COLUMNS} FROM hooks WHERE name = ?"),
            params![name],
        )?;
        row.map(|r| hook_from_row(&r))
            .unwrap_or_else(|| Err(SchedError::HookNotFound { name: name.into() }))
    }

    pub fn list(&self) -> Result<Vec<Hook>> {
        let rows = self.db.query(
            &format!("SELECT {COLUMNS} FROM hooks ORDER BY name"),
            params![],
        )?;
        rows.iter().map(hook_from_row).collect()
    }

    pub fn delete(&self, name: &str) -> Result<()> {
        self.db.transaction(|| {
            let gone = self.db.query_row(
                "DELETE FROM hooks WHERE name = ? RETURNING name",
                params![name],
            )?;
            self.db
                .execute("DELETE FROM hook_deliveries WHERE hook = ?", params![name])?;
            gone.map(drop)
                .ok_or_else(|| SchedError::HookNotFound { name: name.into() })
        })
    }

    /// Checks a call's credential against hook `name` and counts the call.
    /// An unknown hook, a wrong secret, a bad or stale signature and a
    /// credential of the other kind are all [`SchedError::HookRefused`]; a
    /// signature already accepted within the window is
    /// [`SchedError::HookReplayed`].
    pub fn authenticate(
        &self,
        name: &str,
        credential: Credential<'_>,
        now_ms: i64,
    ) -> Result<Hook> {
        let stored = self.db.query_row(
            "SELECT secret_sha256, signing_secret, replay_window_ms FROM hooks WHERE name = ?",
            params![name],
        )?;
        let (expected, signing_secret, window) = match &stored {
            Some(row) => (
                match row.0.first() {
                    Some(stead_sql::Value::Blob(b)) => b.clone(),
                    _ => vec![0u8; 32],
                },
                row.opt_text(1)?.map(str::to_string),
                row.int(2)?,
            ),
            // Compare against something anyway, so all refusals cost alike.
            None => (vec![0u8; 32], None, DEFAULT_REPLAY_WINDOW_MS),
        };
        let accepted = match (credential, &signing_secret) {
            (Credential::Secret(presented), None) => {
                // Compared in constant time (the length is not secret).
                bool::from(sha256(presented.as_bytes())[..].ct_eq(&expected[..]))
            }
            (
                Credential::Signed {
                    timestamp,
                    signature,
                    body,
                },
                Some(secret),
            ) => {
                let fresh = timestamp
                    .parse::<i64>()
                    .is_ok_and(|at| (now_ms - at).abs() <= window);
                let at = timestamp.parse::<i64>().unwrap_or(0);
                let expected = crate::signing::signature(secret, at, body);
                // Compared in constant time (the length is not secret).
                let genuine = bool::from(signature.as_bytes().ct_eq(expected.as_bytes()));
                if fresh && genuine {
                    if self
                        .delivered(name, &format!("sig:{signature}"), now_ms)?
                        .is_some()
                    {
                        return Err(SchedError::HookReplayed);
                    }
                    // Kept for as long as the timestamp stays fresh: a
                    // window past the later of receipt and the timestamp,
                    // which may lie ahead of now (clock skew), so a call
                    // dated in the future cannot be replayed once a record
                    // dated at receipt would have aged out.
                    self.remember(name, &format!("sig:{signature}"), None, now_ms.max(at))?;
                }
                fresh && genuine
            }
            _ => false,
        };
        if !accepted || stored.is_none() {
            return Err(SchedError::HookRefused);
        }
        self.db.execute(
            "UPDATE hooks SET calls = calls + 1, last_call_ms = ? WHERE name = ?",
            params![now_ms, name],
        )?;
        self.get(name)
    }

    /// Whether a delivery with `key` reached hook `name` within its window:
    /// `Some(job)` with the job it started (if it started one).
    pub fn delivered(&self, name: &str, key: &str, now_ms: i64) -> Result<Option<Option<i64>>> {
        let row = self.db.query_row(
            "SELECT d.job_id FROM hook_deliveries d JOIN hooks h ON h.name = d.hook \
             WHERE d.hook = ? AND d.key = ? AND d.at_ms >= ? - h.replay_window_ms",
            params![name, key, now_ms],
        )?;
        Ok(row.map(|row| row.opt_int(0)).transpose()?)
    }

    /// Remembers a delivery with `key` (and the job it started) for the
    /// hook's window, dropping deliveries older than any window.
    pub fn remember(&self, name: &str, key: &str, job: Option<i64>, now_ms: i64) -> Result<()> {
        if key.len() > MAX_IDEMPOTENCY_KEY + 4 {
            return Err(SchedError::InvalidHook(format!(
                "an Idempotency-Key is at most {MAX_IDEMPOTENCY_KEY} bytes"
            )));
        }
        self.db.execute(
            "DELETE FROM hook_deliveries WHERE at_ms < ?",
            params![now_ms - MAX_REPLAY_WINDOW_MS],
        )?;
        self.db.execute(
            "INSERT INTO hook_deliveries (hook, key, job_id, at_ms) VALUES (?, ?, ?, ?) \
             ON CONFLICT (hook, key) DO UPDATE SET job_id = COALESCE(excluded.job_id, job_id), \
             at_ms = excluded.at_ms",
            params![name, key, job, now_ms],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_db;
    use serde_json::json;

    const SECRET: &str = "0123456789abcdef-secret";

    #[test]
    fn put_authenticate_and_count_calls() {
        let db = test_db();
        let hooks = Hooks::new(&db);
        let exec = json!({ "command": "cat > /in.json" });
        let hook = hooks
            .put("github", SECRET, &exec, HookOptions::default(), 5)
            .unwrap();
        assert_eq!((hook.calls, hook.exec.clone()), (0, exec));
        let called = hooks
            .authenticate("github", Credential::Secret(SECRET), 9)
            .unwrap();
        assert_eq!((called.calls, called.last_call_ms), (1, Some(9)));
        assert_eq!(hooks.list().unwrap().len(), 1);
    }

    #[test]
    fn wrong_secret_and_unknown_hook_are_refused_alike() {
        let db = test_db();
        let hooks = Hooks::new(&db);
        hooks
            .put(
                "github",
                SECRET,
                &json!({ "command": "true" }),
                HookOptions::default(),
                5,
            )
            .unwrap();
        for (name, secret) in [
            ("github", "0123456789abcdef-secreT"),
            ("github", ""),
            ("gitlab", SECRET),
        ] {
            assert!(matches!(
                hooks.authenticate(name, Credential::Secret(secret), 6),
                Err(SchedError::HookRefused)
            ));
        }
        assert_eq!(
            hooks.get("github").unwrap().calls,
            0,
            "a refused call counted"
        );
    }

    #[test]
    fn replacing_a_hook_rotates_its_secret() {
        let db = test_db();
        let hooks = Hooks::new(&db);
        let exec = json!({ "command": "true" });
        hooks
            .put("h", SECRET, &exec, HookOptions::default(), 1)
            .unwrap();
        hooks
            .put(
                "h",
                "a-brand-new-secret-value",
                &exec,
                HookOptions::default(),
                2,
            )
            .unwrap();
        assert!(hooks
            .authenticate("h", Credential::Secret(SECRET), 3)
            .is_err());
        assert!(hooks
            .authenticate("h", Credential::Secret("a-brand-new-secret-value"), 3)
            .is_ok());
        assert_eq!(hooks.get("h").unwrap().created_ms, 1);
    }

    #[test]
    fn bad_hooks_are_refused_and_delete_removes() {
        let db = test_db();
        let hooks = Hooks::new(&db);
        let exec = json!({ "command": "true" });
        let plain = HookOptions::default();
        assert!(hooks.put("bad name", SECRET, &exec, plain, 1).is_err());
        assert!(hooks.put("h", "short", &exec, plain, 1).is_err());
        assert!(hooks
            .put("h", SECRET, &json!({ "cmd": "x" }), plain, 1)
            .is_err());
        let wide = HookOptions {
            replay_window_ms: MAX_REPLAY_WINDOW_MS + 1,
            ..plain
        };
        assert!(hooks.put("h", SECRET, &exec, wide, 1).is_err());
        hooks.put("h", SECRET, &exec, plain, 1).unwrap();
        hooks.delete("h").unwrap();
        assert!(matches!(
            hooks.delete("h"),
            Err(SchedError::HookNotFound { .. })
        ));
        assert!(matches!(
            hooks.authenticate("h", Credential::Secret(SECRET), 2),
            Err(SchedError::HookRefused)
        ));
    }

    #[test]
    fn signed_calls_are_checked_and_accepted_once() {
        let db = test_db();
        let hooks = Hooks::new(&db);
        let signed = HookOptions {
            signed: true,
            replay_window_ms: 60_000,
        };
        hooks
            .put("ci", SECRET, &json!({ "command": "cat" }), signed, 0)
            .unwrap();
        let now = 1_000_000;
        let body = br#"{"ref":"main"}"#;
        let signature = crate::signing::signature(SECRET, now, body);
        let call = |timestamp: &str, signature: &str, body: &[u8], at: i64| {
            hooks.authenticate(
                "ci",
                Credential::Signed {
                    timestamp,
                    signature,
                    body,
                },
                at,
            )
        };
        let ts = now.to_string();
        // The plain secret is not accepted by a signed hook.
        assert!(matches!(
            hooks.authenticate("ci", Credential::Secret(SECRET), now),
            Err(SchedError::HookRefused)
        ));
        for (timestamp, signature, body, at) in [
            (ts.as_str(), signature.as_str(), &b"{}"[..], now),
            (ts.as_str(), "sha256=00", &body[..], now),
            (ts.as_str(), signature.as_str(), &body[..], now + 60_001),
            ("yesterday", signature.as_str(), &body[..], now),
        ] {
            assert!(
                matches!(
                    call(timestamp, signature, body, at),
                    Err(SchedError::HookRefused)
                ),
                "{timestamp} {signature} at {at}"
            );
        }
        let hook = call(&ts, &signature, body, now + 59_000).unwrap();
        assert!(hook.signed);
        assert!(matches!(
            call(&ts, &signature, body, now + 59_500),
            Err(SchedError::HookReplayed)
        ));
        assert_eq!(hooks.get("ci").unwrap().calls, 1);
    }

    #[test]
    fn a_call_dated_ahead_cannot_be_replayed_while_its_timestamp_is_fresh() {
        let db = test_db();
        let hooks = Hooks::new(&db);
        let window = 60_000;
        let signed = HookOptions {
            signed: true,
            replay_window_ms: window,
        };
        hooks
            .put("ci", SECRET, &json!({ "command": "cat" }), signed, 0)
            .unwrap();
        let now = 1_000_000;
        let body = br#"{"ref":"main"}"#;
        // Dated a whole window ahead of the receiver's clock: still fresh.
        let at = now + window;
        let (ts, signature) = (at.to_string(), crate::signing::signature(SECRET, at, body));
        let call = |received: i64| {
            hooks.authenticate(
                "ci",
                Credential::Signed {
                    timestamp: &ts,
                    signature: &signature,
                    body,
                },
                received,
            )
        };
        call(now).unwrap();
        // Past a window after receipt the timestamp is fresh for another
        // window: the signature is still remembered.
        for received in [now + window + 1, at + window] {
            assert!(
                matches!(call(received), Err(SchedError::HookReplayed)),
                "replayed at {received}"
            );
        }
        // Once the timestamp is stale, the call is refused as stale.
        assert!(matches!(
            call(at + window + 1),
            Err(SchedError::HookRefused)
        ));
        assert_eq!(hooks.get("ci").unwrap().calls, 1);
    }

    #[test]
    fn idempotency_keys_are_remembered_for_the_window() {
        let db = test_db();
        let hooks = Hooks::new(&db);
        let options = HookOptions {
            signed: false,
            replay_window_ms: 10_000,
        };
        hooks
            .put("h", SECRET, &json!({ "command": "true" }), options, 0)
            .unwrap();
        assert_eq!(hooks.delivered("h", "key:a", 100).unwrap(), None);
        hooks.remember("h", "key:a", Some(7), 100).unwrap();
        assert_eq!(
            hooks.delivered("h", "key:a", 10_100).unwrap(),
            Some(Some(7))
        );
        assert_eq!(
            hooks.delivered("h", "key:a", 10_101).unwrap(),
            None,
            "forgotten"
        );
        assert_eq!(hooks.delivered("other", "key:a", 100).unwrap(), None);
        let long = format!("key:{}", "k".repeat(MAX_IDEMPOTENCY_KEY + 1));
        assert!(hooks.remember("h", &long, None, 100).is_err());
        hooks.delete("h").unwrap();
        assert_eq!(
            db.query_row("SELECT COUNT(*) FROM hook_deliveries", params![])
                .unwrap()
                .unwrap()
                .int(0)
                .unwrap(),
            0
        );
    }
}
