//! Terminal tickets: how a browser opens a terminal.
//!
//! A browser cannot set `Authorization` on a WebSocket, and a token in a
//! URL outlives the page that used it (history, logs). So a page asks for
//! a ticket with its token (`POST /agents/{id}/tickets
//! {"purpose":"terminal"}`) and opens the socket with `?ticket=` in the
//! query string. A ticket is random, opens one upgrade of this agent's
//! terminal route and nothing else, once, within at most
//! [`MAX_TTL_MS`], with the scopes of whoever minted it (whose token must
//! still hold then). Only its SHA-256 is stored; a used one is kept,
//! marked, until it expires, so a second use is told apart from a wrong
//! ticket. Tickets live in the agent that minted them, so another agent's
//! ticket is unknown here.

use serde::Deserialize;
use serde_json::{json, Value};
use stead_sql::{params, Sql};

use crate::auth::Caller;
use crate::error::ApiError;

/// The query parameter a ticket travels in.
pub const QUERY_PARAM: &str = "ticket";

/// The longest a ticket lives, and its default lifetime.
pub const MAX_TTL_MS: i64 = 60_000;

/// What a ticket opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    Terminal,
}

/// `POST /agents/{id}/tickets`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TicketRequest {
    pub purpose: Purpose,
    /// Seconds it lives: 1-60, default 60.
    pub ttl_seconds: Option<i64>,
}

fn hash(ticket: &str) -> String {
    let digest = stead_scheduler::signing::sha256(ticket.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Stores a ticket for `caller`: `random` is its secret part. Answers the
/// ticket and its expiry.
pub fn mint(
    db: &impl Sql,
    request: &TicketRequest,
    caller: &Caller,
    random: &str,
    now_ms: i64,
) -> Result<Value, ApiError> {
    let ttl_ms = match request.ttl_seconds {
        None => MAX_TTL_MS,
        Some(seconds) => crate::decode::within("ttl_seconds", seconds, 1, MAX_TTL_MS / 1000)?
            .saturating_mul(1000),
    };
    let ticket = format!("stt_{random}");
    let expires_ms = now_ms + ttl_ms;
    let caller_json =
        serde_json::to_string(caller).map_err(|e| ApiError::Internal(e.to_string()))?;
    db.transaction(|| {
        db.execute(
            "DELETE FROM terminal_tickets WHERE expires_ms <= ?",
            params![now_ms],
        )?;
        db.execute(
            "INSERT INTO terminal_tickets (hash, caller, expires_ms) VALUES (?, ?, ?)",
            params![&hash(&ticket), caller_json.as_str(), expires_ms],
        )?;
        Ok::<_, ApiError>(())
    })?;
    Ok(json!({ "ticket": ticket, "purpose": "terminal", "expires_ms": expires_ms }))
}

/// Redeems `ticket`: the caller who minted it, once.
pub fn redeem(db: &impl Sql, ticket: &str, now_ms: i64) -> Result<Caller, ApiError> {
    db.transaction(|| {
        let row = db.query_row(
            "SELECT caller, expires_ms, used FROM terminal_tickets WHERE hash = ?",
            params![&hash(ticket)],
        )?;
        let Some(row) = row else {
            return Err(ApiError::TicketInvalid);
        };
        if row.int(1)? <= now_ms {
            return Err(ApiError::TicketExpired);
        }
        if row.int(2)? != 0 {
            return Err(ApiError::TicketUsed);
        }
        db.execute(
            "UPDATE terminal_tickets SET used = 1 WHERE hash = ?",
            params![&hash(ticket)],
        )?;
        serde_json::from_str(row.text(0)?).map_err(|_| ApiError::TicketInvalid)
    })
}

/// The ticket in a request's query, if it carries one.
pub fn presented(query: &[(String, String)]) -> Option<&str> {
    query
        .iter()
        .find(|(key, _)| key == QUERY_PARAM)
        .map(|(_, value)| value.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Scope;
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    fn db() -> SqliteDb {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        db
    }

    fn request(ttl: Option<i64>) -> TicketRequest {
        TicketRequest {
            purpose: Purpose::Terminal,
            ttl_seconds: ttl,
        }
    }

    #[test]
    fn a_ticket_opens_once_with_its_minters_scopes() {
        let db = db();
        let caller = Caller::Token {
            id: "t1".into(),
            scopes: vec![Scope::ExecShell],
            expires: 2_000_000_000,
        };
        let minted = mint(&db, &request(None), &caller, "abc", 1_000).unwrap();
        assert_eq!(minted["expires_ms"], 61_000);
        let ticket = minted["ticket"].as_str().unwrap();
        assert_eq!(redeem(&db, ticket, 2_000).unwrap(), caller);
        assert!(matches!(
            redeem(&db, ticket, 2_001),
            Err(ApiError::TicketUsed)
        ));
        assert!(matches!(
            redeem(&db, "stt_other", 2_001),
            Err(ApiError::TicketInvalid)
        ));
        // Nothing but the hash is stored.
        let rows = db
            .query("SELECT hash, caller FROM terminal_tickets", params![])
            .unwrap();
        assert!(!rows[0].text(0).unwrap().contains("abc"));
    }

    #[test]
    fn a_ticket_expires() {
        let db = db();
        let minted = mint(&db, &request(Some(5)), &Caller::Admin, "x", 0).unwrap();
        let ticket = minted["ticket"].as_str().unwrap();
        assert!(matches!(
            redeem(&db, ticket, 5_000),
            Err(ApiError::TicketExpired)
        ));
        for ttl in [0, 61, -1] {
            assert!(mint(&db, &request(Some(ttl)), &Caller::Admin, "y", 0).is_err());
        }
        // Expired tickets go when the next is minted.
        mint(&db, &request(None), &Caller::Admin, "z", 10_000).unwrap();
        let left = db
            .query("SELECT count(*) FROM terminal_tickets", params![])
            .unwrap();
        assert_eq!(left[0].int(0).unwrap(), 1);
    }
}
