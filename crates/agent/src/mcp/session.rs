//! Sessions of the 2025-11-25 revision, in the agent's database.
//!
//! `initialize` creates one and its id travels in `Mcp-Session-Id`. The
//! spec lets a server end a session at any time (the client then
//! initializes again on a 404), but a Durable Object is evicted whenever it
//! is idle for a few seconds, so sessions kept in memory would end under
//! every pause: they live in SQLite (`mcp_sessions`) and survive restarts,
//! deploys and eviction. A session is its creator's: another credential
//! presenting its id is answered as if it did not exist. Sessions idle for
//! [`IDLE_MS`] are deleted when the next one is created, and each
//! credential keeps at most [`MAX_SESSIONS_PER_CREDENTIAL`] (its least
//! recently used go first): one credential opening sessions in a loop ends
//! only its own, never another's. [`MAX_SESSIONS`] bounds an agent's table
//! whatever the number of credentials (only the admin mints tokens).

use serde_json::Value;
use stead_sql::{params, Sql};

use crate::error::ApiError;
use crate::mcp::revision::Version;

/// A session unused this long is gone.
pub const IDLE_MS: i64 = 24 * 60 * 60 * 1000;
/// Sessions one credential (the admin token, or one agent token) keeps.
pub const MAX_SESSIONS_PER_CREDENTIAL: i64 = 100;
/// Sessions one agent keeps, all credentials together.
pub const MAX_SESSIONS: i64 = 10_000;
/// How stale `used_ms` may get before a request refreshes it (so most
/// requests only read the session).
const TOUCH_MS: i64 = 60 * 1000;

/// A live session.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: String,
    /// The version `initialize` agreed on.
    pub protocol: Version,
    /// Workspace paths subscribed to with `resources/subscribe`.
    pub subscriptions: Vec<String>,
}

/// The sessions of one agent.
pub struct Sessions<'a, S: Sql> {
    db: &'a S,
    now_ms: i64,
}

impl<'a, S: Sql> Sessions<'a, S> {
    pub fn new(db: &'a S, now_ms: i64) -> Self {
        Sessions { db, now_ms }
    }

    /// Creates session `id` for `actor`, dropping idle and surplus ones.
    pub fn create(
        &self,
        id: &str,
        actor: &str,
        protocol: Version,
        client: &Value,
    ) -> Result<Session, ApiError> {
        self.db.transaction(|| {
            self.db.execute(
                "DELETE FROM mcp_sessions WHERE used_ms < ?",
                params![self.now_ms - IDLE_MS],
            )?;
            self.db.execute(
                "DELETE FROM mcp_sessions WHERE id IN (SELECT id FROM mcp_sessions \
                 WHERE actor = ? ORDER BY used_ms DESC, rowid DESC LIMIT -1 OFFSET ?)",
                params![actor, MAX_SESSIONS_PER_CREDENTIAL - 1],
            )?;
            self.db.execute(
                "DELETE FROM mcp_sessions WHERE id IN (SELECT id FROM mcp_sessions \
                 ORDER BY used_ms DESC, rowid DESC LIMIT -1 OFFSET ?)",
                params![MAX_SESSIONS - 1],
            )?;
            let client = client.to_string();
            self.db.execute(
                "INSERT INTO mcp_sessions (id, actor, protocol, client, created_ms, used_ms) \
                 VALUES (?, ?, ?, ?, ?, ?)",
                params![
                    id,
                    actor,
                    protocol.as_str(),
                    &client,
                    self.now_ms,
                    self.now_ms
                ],
            )?;
            Ok::<(), ApiError>(())
        })?;
        Ok(Session {
            id: id.to_string(),
            protocol,
            subscriptions: Vec::new(),
        })
    }

    /// Session `id` if it is `actor`'s and not idle past its time; marks it
    /// used.
    pub fn find(&self, id: &str, actor: &str) -> Result<Option<Session>, ApiError> {
        let row = self.db.query_row(
            "SELECT protocol, subscriptions, used_ms FROM mcp_sessions WHERE id = ? AND actor = ?",
            params![id, actor],
        )?;
        let Some(row) = row else {
            return Ok(None);
        };
        let used_ms = row.int(2)?;
        if used_ms < self.now_ms - IDLE_MS {
            self.delete(id, actor)?;
            return Ok(None);
        }
        if used_ms < self.now_ms - TOUCH_MS {
            self.db.execute(
                "UPDATE mcp_sessions SET used_ms = ? WHERE id = ?",
                params![self.now_ms, id],
            )?;
        }
        let subscriptions = serde_json::from_str(row.text(1)?)
            .map_err(|e| ApiError::Internal(format!("session subscriptions: {e}")))?;
        let protocol = row.text(0)?;
        let protocol = Version::parse(protocol)
            .ok_or_else(|| ApiError::Internal(format!("session protocol {protocol:?}")))?;
        Ok(Some(Session {
            id: id.to_string(),
            protocol,
            subscriptions,
        }))
    }

    /// Records what session `id` is subscribed to.
    pub fn subscribe(&self, id: &str, subscriptions: &[String]) -> Result<(), ApiError> {
        let list =
            serde_json::to_string(subscriptions).map_err(|e| ApiError::Internal(e.to_string()))?;
        self.db.execute(
            "UPDATE mcp_sessions SET subscriptions = ? WHERE id = ?",
            params![&list, id],
        )?;
        Ok(())
    }

    /// Ends session `id` of `actor`; whether there was one.
    pub fn delete(&self, id: &str, actor: &str) -> Result<bool, ApiError> {
        let gone = self.db.query(
            "DELETE FROM mcp_sessions WHERE id = ? AND actor = ? RETURNING id",
            params![id, actor],
        )?;
        Ok(!gone.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    /// A credential opening sessions in a loop (the issue: 1,005
    /// `initialize` calls with a `ports`-only token) ends its own oldest
    /// ones, never another credential's.
    #[test]
    fn sessions_are_bounded_per_credential() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        let client = serde_json::json!({});
        Sessions::new(&db, 1_000)
            .create("admin-1", "admin", Version::V2025_11_25, &client)
            .unwrap();
        let flood = MAX_SESSIONS_PER_CREDENTIAL + 5;
        for n in 0..flood {
            Sessions::new(&db, 2_000 + n)
                .create(&format!("p-{n}"), "token:p", Version::V2025_11_25, &client)
                .unwrap();
        }
        let now = Sessions::new(&db, 2_000 + flood);
        assert!(now.find("admin-1", "admin").unwrap().is_some());
        assert!(
            now.find("p-0", "token:p").unwrap().is_none(),
            "its oldest went"
        );
        assert!(now.find("p-5", "token:p").unwrap().is_some());
        let kept = db
            .query_row(
                "SELECT count(*) FROM mcp_sessions WHERE actor = 'token:p'",
                params![],
            )
            .unwrap()
            .unwrap()
            .int(0)
            .unwrap();
        assert_eq!(kept, MAX_SESSIONS_PER_CREDENTIAL);
    }
}
