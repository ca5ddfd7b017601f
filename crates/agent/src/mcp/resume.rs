//! Where each 2026-07-28 listener left off, so that a change made between
//! two `subscriptions/listen` streams reaches the client.
//!
//! That revision has no resumption: a listen stream that ends (a proxy's
//! timeout, a network change, the client's own restart) is simply opened
//! again, and a server that starts each new stream "from now" loses every
//! change made in between. A client may send back the position it last
//! saw (`_meta["stead/cursor"]`), but SDK clients do not know that key. So
//! the agent keeps, per listener (the caller's credential and the filter it
//! listens with, canonical), the change-log position it has brought that
//! listener's stream to (`mcp_listen_positions`), and a listen without a
//! cursor resumes from there when the listener listened within
//! [`RESUME_MS`].
//!
//! The position kept lags one push behind what was sent (it is the stream's
//! cursor before its latest push): bytes in flight when a connection dies
//! are lost without the server knowing, so the last push is sent again on
//! the next stream rather than risk losing it. A notification sent twice
//! is harmless (each says "this changed; read it again"); one lost leaves a
//! client with a stale copy. Two clients sharing one credential and one
//! filter share a position, and so may each be told of a change the other
//! was already told of: again a repeat, never a loss.

use stead_sql::{params, Sql};

use crate::error::ApiError;
use crate::mcp::listen::{Cursor, Listener};

/// A listener unseen this long starts from "now" again (its client's
/// copies are better re-read than replayed change by change).
pub const RESUME_MS: i64 = 60 * 60 * 1000;

/// The kept positions of one agent.
pub struct Positions<'a, S: Sql> {
    db: &'a S,
    now_ms: i64,
}

impl<'a, S: Sql> Positions<'a, S> {
    pub fn new(db: &'a S, now_ms: i64) -> Self {
        Positions { db, now_ms }
    }

    /// Where `listener` resumes, if it listened within [`RESUME_MS`].
    pub fn find(&self, listener: &Listener) -> Result<Option<Cursor>, ApiError> {
        let row = self.db.query_row(
            "SELECT cursor FROM mcp_listen_positions WHERE actor = ? AND filter = ? AND used_ms >= ?",
            params![&listener.actor, &listener.filter, self.now_ms - RESUME_MS],
        )?;
        let Some(row) = row else {
            return Ok(None);
        };
        let text = row.text(0)?;
        Cursor::parse(text)
            .map(Some)
            .ok_or_else(|| ApiError::Internal(format!("listen position {text:?}")))
    }

    /// Keeps `cursor` as where `listener` resumes, dropping positions
    /// unused past [`RESUME_MS`]. (Each statement stands alone: a prune
    /// without the update, or the reverse, is still a consistent table.)
    pub fn record(&self, listener: &Listener, cursor: Cursor) -> Result<(), ApiError> {
        self.db.execute(
            "DELETE FROM mcp_listen_positions WHERE used_ms < ?",
            params![self.now_ms - RESUME_MS],
        )?;
        self.db.execute(
            "INSERT INTO mcp_listen_positions (actor, filter, cursor, used_ms) \
             VALUES (?, ?, ?, ?) ON CONFLICT (actor, filter) \
             DO UPDATE SET cursor = excluded.cursor, used_ms = excluded.used_ms",
            params![
                &listener.actor,
                &listener.filter,
                &cursor.to_string(),
                self.now_ms
            ],
        )?;
        Ok(())
    }
}
