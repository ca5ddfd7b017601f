//! The tokens minted for an agent, so that its admin can list them
//! (`GET /agents/{id}/tokens`).
//!
//! A token is a signed credential the Worker checks without asking anyone
//! (see [`crate::auth`]), so nothing would otherwise remember that it was
//! made. The Worker records each new token here (`POST
//! /agents/{id}/tokens/minted`, the deployment's admin only) before it hands
//! the token out: a token the agent has no record of was never given to
//! anyone. The record holds the token's id, scopes and expiry, never the
//! token itself. Expired records are dropped on the way; a revocation is
//! the agent's own (`revoked_tokens`), so the listing says which are
//! revoked.

use serde::{Deserialize, Serialize};
use stead_sql::{params, Sql};

use crate::auth::Scope;
use crate::error::ApiError;

/// Most tokens one listing holds (newest first): past it, `truncated`.
pub const MAX_LISTED: i64 = 1000;

/// What the Worker records of a token it mints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Minted {
    pub id: String,
    pub scopes: Vec<Scope>,
    /// Unix seconds.
    pub minted_at: i64,
    /// Unix seconds.
    pub expires_at: i64,
}

/// One token as the listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    #[serde(flatten)]
    pub token: Minted,
    pub revoked: bool,
}

/// The listing: unexpired tokens, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    pub tokens: Vec<Listed>,
    pub truncated: bool,
}

/// Records `token` (again: the same id keeps its first record).
pub fn record(db: &impl Sql, token: &Minted, now_s: i64) -> Result<(), ApiError> {
    db.execute("DELETE FROM minted_tokens WHERE exp <= ?", params![now_s])?;
    let scopes = serde_json::to_string(&token.scopes).expect("scopes serialize");
    db.execute(
        "INSERT INTO minted_tokens (id, scopes, minted_at, exp) VALUES (?, ?, ?, ?) \
         ON CONFLICT (id) DO NOTHING",
        params![&token.id, &scopes, token.minted_at, token.expires_at],
    )?;
    Ok(())
}

/// The tokens that have not expired at `now_s`, newest first (in the
/// order they were recorded: tokens minted in one second keep their order).
pub fn list(db: &impl Sql, now_s: i64) -> Result<Listing, ApiError> {
    let rows = db.query(
        "SELECT m.id, m.scopes, m.minted_at, m.exp, r.id IS NOT NULL \
         FROM minted_tokens m LEFT JOIN revoked_tokens r ON r.id = m.id \
         WHERE m.exp > ? ORDER BY m.rowid DESC LIMIT ?",
        params![now_s, MAX_LISTED + 1],
    )?;
    let mut tokens = Vec::with_capacity(rows.len());
    for row in rows.iter().take(MAX_LISTED as usize) {
        let scopes: Vec<Scope> = serde_json::from_str(row.text(1)?)
            .map_err(|e| ApiError::Internal(format!("minted_tokens.scopes: {e}")))?;
        tokens.push(Listed {
            token: Minted {
                id: row.text(0)?.to_string(),
                scopes,
                minted_at: row.int(2)?,
                expires_at: row.int(3)?,
            },
            revoked: row.int(4)? != 0,
        });
    }
    Ok(Listing {
        truncated: rows.len() as i64 > MAX_LISTED,
        tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth;

    fn db() -> stead_sql::SqliteDb {
        let db = stead_sql::SqliteDb::memory().unwrap();
        stead_sql::migrate(&db, stead_sql::MIGRATIONS).unwrap();
        db
    }

    fn minted(id: &str, minted_at: i64, expires_at: i64) -> Minted {
        Minted {
            id: id.into(),
            scopes: vec![Scope::Read, Scope::Write],
            minted_at,
            expires_at,
        }
    }

    #[test]
    fn the_listing_is_the_unexpired_tokens_newest_first_with_revocations() {
        let db = db();
        record(&db, &minted("a", 100, 1_000), 100).unwrap();
        record(&db, &minted("b", 200, 300), 200).unwrap();
        record(&db, &minted("c", 300, 2_000), 300).unwrap();
        // The same id again keeps its first record.
        record(&db, &minted("a", 400, 5_000), 400).unwrap();
        auth::revoke(&db, "c", 2_000, 400).unwrap();
        let listing = list(&db, 500).unwrap();
        let seen: Vec<(&str, i64, bool)> = listing
            .tokens
            .iter()
            .map(|t| (t.token.id.as_str(), t.token.expires_at, t.revoked))
            .collect();
        // `b` expired at 300.
        assert_eq!(seen, [("c", 2_000, true), ("a", 1_000, false)]);
        assert!(!listing.truncated);
        assert_eq!(listing.tokens[1].token.scopes, [Scope::Read, Scope::Write]);
        // A record made later drops the expired ones.
        record(&db, &minted("d", 600, 9_000), 600).unwrap();
        let rows = db
            .query_row("SELECT COUNT(*) FROM minted_tokens", stead_sql::params![])
            .unwrap()
            .unwrap();
        assert_eq!(rows.int(0).unwrap(), 3);
    }
}
