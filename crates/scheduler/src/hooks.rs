//! Webhook hooks: named entry points that third parties call.
//!
//! `POST /agents/{id}/hooks/{name}` is called by other services, which hold
//! the hook's own secret rather than the API token: each hook can be
//! revoked alone and a leaked hook secret gives no access to the workspace.
//! Only the secret's SHA-256 is stored. The check compares digests in
//! constant time, and an unknown hook is refused exactly as a wrong secret
//! is (after the same work), so callers learn nothing about which hooks
//! exist.

use serde::Serialize;
use serde_json::Value;
use stead_sql::{params, Row, Sql};

use crate::signing::sha256;
use crate::{constant_time_eq, Result, SchedError};

/// Shortest accepted secret.
pub const MIN_SECRET_LEN: usize = 16;

/// A hook record (the secret itself is never kept).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hook {
    pub name: String,
    /// The exec request run on each call; the call's body becomes stdin.
    pub exec: Value,
    pub created_ms: i64,
    pub calls: i64,
    pub last_call_ms: Option<i64>,
}

fn hook_from_row(row: &Row) -> Result<Hook> {
    Ok(Hook {
        name: row.text(0)?.to_string(),
        exec: serde_json::from_str(row.text(1)?)
            .map_err(|e| SchedError::Corrupt(format!("hook exec: {e}")))?,
        created_ms: row.int(2)?,
        calls: row.int(3)?,
        last_call_ms: row.opt_int(4)?,
    })
}

const COLUMNS: &str = "name, exec, created_ms, calls, last_call_ms";

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
    pub fn put(&self, name: &str, secret: &str, exec: &Value, now_ms: i64) -> Result<Hook> {
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
        let digest = sha256(secret.as_bytes());
        let row = self.db.query_row(
            &format!(
                "INSERT INTO hooks (name, secret_sha256, exec, created_ms) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (name) DO UPDATE SET secret_sha256 = excluded.secret_sha256, \
                 exec = excluded.exec RETURNING {COLUMNS}"
            ),
            params![name, &digest[..], &exec.to_string(), now_ms],
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
        let gone = self.db.query_row(
            "DELETE FROM hooks WHERE name = ? RETURNING name",
            params![name],
        )?;
        gone.map(drop)
            .ok_or_else(|| SchedError::HookNotFound { name: name.into() })
    }

    /// Checks `presented` against hook `name`'s secret and counts the call.
    /// An unknown hook and a wrong secret are both [`SchedError::HookRefused`].
    pub fn authenticate(&self, name: &str, presented: &str, now_ms: i64) -> Result<Hook> {
        let digest = sha256(presented.as_bytes());
        let stored = self.db.query_row(
            "SELECT secret_sha256 FROM hooks WHERE name = ?",
            params![name],
        )?;
        let expected = match stored.as_ref().and_then(|r| r.0.first()) {
            Some(stead_sql::Value::Blob(b)) => b.clone(),
            // Compare against something anyway, so both refusals cost the same.
            _ => vec![0u8; 32],
        };
        if !constant_time_eq(&digest, &expected) || stored.is_none() {
            return Err(SchedError::HookRefused);
        }
        self.db.execute(
            "UPDATE hooks SET calls = calls + 1, last_call_ms = ? WHERE name = ?",
            params![now_ms, name],
        )?;
        self.get(name)
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
        let hook = hooks.put("github", SECRET, &exec, 5).unwrap();
        assert_eq!((hook.calls, hook.exec.clone()), (0, exec));
        let called = hooks.authenticate("github", SECRET, 9).unwrap();
        assert_eq!((called.calls, called.last_call_ms), (1, Some(9)));
        assert_eq!(hooks.list().unwrap().len(), 1);
    }

    #[test]
    fn wrong_secret_and_unknown_hook_are_refused_alike() {
        let db = test_db();
        let hooks = Hooks::new(&db);
        hooks
            .put("github", SECRET, &json!({ "command": "true" }), 5)
            .unwrap();
        for (name, secret) in [
            ("github", "0123456789abcdef-secreT"),
            ("github", ""),
            ("gitlab", SECRET),
        ] {
            assert!(matches!(
                hooks.authenticate(name, secret, 6),
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
        hooks.put("h", SECRET, &exec, 1).unwrap();
        hooks
            .put("h", "a-brand-new-secret-value", &exec, 2)
            .unwrap();
        assert!(hooks.authenticate("h", SECRET, 3).is_err());
        assert!(hooks
            .authenticate("h", "a-brand-new-secret-value", 3)
            .is_ok());
        assert_eq!(hooks.get("h").unwrap().created_ms, 1);
    }

    #[test]
    fn bad_hooks_are_refused_and_delete_removes() {
        let db = test_db();
        let hooks = Hooks::new(&db);
        let exec = json!({ "command": "true" });
        assert!(hooks.put("bad name", SECRET, &exec, 1).is_err());
        assert!(hooks.put("h", "short", &exec, 1).is_err());
        assert!(hooks.put("h", SECRET, &json!({ "cmd": "x" }), 1).is_err());
        hooks.put("h", SECRET, &exec, 1).unwrap();
        hooks.delete("h").unwrap();
        assert!(matches!(
            hooks.delete("h"),
            Err(SchedError::HookNotFound { .. })
        ));
        assert!(matches!(
            hooks.authenticate("h", SECRET, 2),
            Err(SchedError::HookRefused)
        ));
    }
}
