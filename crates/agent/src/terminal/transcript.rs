//! Terminal sessions and their transcripts in SQLite.
//!
//! Every byte a session prints is appended here, with its offset, in the
//! same step that sends it to the sockets attached (so a client that
//! reattaches from the offset after the last byte it got misses nothing and
//! gets nothing twice, whatever restarted meanwhile). A session keeps at
//! most [`MAX_KEPT`] bytes: the oldest pieces go first, and `kept_from`
//! says where what is kept begins. At most [`MAX_ENDED`] ended sessions
//! stay listed (the oldest go first), and at most [`MAX_RUNNING`] run at
//! once.

use serde_json::{json, Value};
use stead_sql::{params, Row, Sql};

use crate::error::ApiError;

/// Bytes of output a session keeps.
pub const MAX_KEPT: i64 = 16 << 20;

/// The largest piece stored in one row (rows are at most 2 MB).
const PIECE: usize = 64 << 10;

/// Sessions running at once.
pub const MAX_RUNNING: i64 = 16;

/// Ended sessions kept, with their transcripts.
pub const MAX_ENDED: i64 = 50;

/// Where a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The line terminal over the light shell, in the isolate.
    Light,
    /// A pseudo-terminal on the computer.
    Computer,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Light => "light",
            Backend::Computer => "computer",
        }
    }

    pub fn from_name(name: &str) -> Option<Backend> {
        [Backend::Light, Backend::Computer]
            .into_iter()
            .find(|backend| backend.name() == name)
    }
}

/// Whether a session still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Running,
    Ended,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Ended => "ended",
        }
    }

    fn from_name(name: &str) -> Option<State> {
        [State::Running, State::Ended]
            .into_iter()
            .find(|state| state.name() == name)
    }
}

/// One session as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: String,
    pub backend: Backend,
    pub state: State,
    pub cols: u16,
    pub rows: u16,
    pub created_ms: i64,
    pub active_ms: i64,
    /// The offset after the last byte printed.
    pub end: i64,
    /// The first offset still kept.
    pub kept_from: i64,
    pub exit_code: Option<i64>,
    pub exit_reason: Option<String>,
}

impl Session {
    /// As `GET /agents/{id}/terminals` shows it (`attached`: how many
    /// sockets are attached now).
    pub fn to_json(&self, attached: usize) -> Value {
        json!({
            "id": self.id,
            "backend": self.backend.name(),
            "state": self.state.name(),
            "cols": self.cols,
            "rows": self.rows,
            "created_ms": self.created_ms,
            "active_ms": self.active_ms,
            "end": self.end,
            "kept_from": self.kept_from,
            "exit_code": self.exit_code,
            "exit_reason": self.exit_reason,
            "attached": attached,
        })
    }
}

const COLUMNS: &str = "id, backend, state, cols, rows, created_ms, active_ms, end_offset, \
                       kept_from, exit_code, exit_reason";

fn corrupt(what: &str) -> ApiError {
    ApiError::Fs(stead_vfs::VfsError::Corrupt(format!(
        "terminal session with {what}"
    )))
}

fn session_of(row: &Row) -> Result<Session, ApiError> {
    let size = |column| {
        row.int(column)
            .map(|n| u16::try_from(n).unwrap_or(u16::MAX))
    };
    Ok(Session {
        id: row.text(0)?.to_string(),
        backend: Backend::from_name(row.text(1)?).ok_or_else(|| corrupt("an unknown backend"))?,
        state: State::from_name(row.text(2)?).ok_or_else(|| corrupt("an unknown state"))?,
        cols: size(3)?,
        rows: size(4)?,
        created_ms: row.int(5)?,
        active_ms: row.int(6)?,
        end: row.int(7)?,
        kept_from: row.int(8)?,
        exit_code: row.opt_int(9)?,
        exit_reason: row.opt_text(10)?.map(str::to_string),
    })
}

/// The sessions of one workspace.
pub struct Transcripts<'a, S: Sql> {
    db: &'a S,
}

impl<'a, S: Sql> Transcripts<'a, S> {
    pub fn new(db: &'a S) -> Self {
        Transcripts { db }
    }

    /// Records a new running session (refused past [`MAX_RUNNING`]).
    pub fn create(
        &self,
        id: &str,
        backend: Backend,
        (cols, rows): (u16, u16),
        shell: Option<&str>,
        now_ms: i64,
    ) -> Result<Session, ApiError> {
        self.db.transaction(|| {
            let running = self
                .db
                .query_row(
                    "SELECT count(*) FROM terminal_sessions WHERE state = 'running'",
                    params![],
                )?
                .map(|row| row.int(0))
                .transpose()?
                .unwrap_or(0);
            if running >= MAX_RUNNING {
                return Err(ApiError::TerminalLimit { limit: MAX_RUNNING });
            }
            self.db.execute(
                "INSERT INTO terminal_sessions (id, backend, state, cols, rows, created_ms, \
                 active_ms, shell) VALUES (?, ?, 'running', ?, ?, ?, ?, ?)",
                params![
                    id,
                    backend.name(),
                    i64::from(cols),
                    i64::from(rows),
                    now_ms,
                    now_ms,
                    shell
                ],
            )?;
            self.get(id)
        })
    }

    /// Drops the oldest ended sessions past [`MAX_ENDED`].
    fn prune_ended(&self) -> Result<(), ApiError> {
        let old = self.db.query(
            "SELECT id FROM terminal_sessions WHERE state = 'ended' \
             ORDER BY active_ms DESC, id LIMIT -1 OFFSET ?",
            params![MAX_ENDED],
        )?;
        for row in old {
            self.delete(row.text(0)?)?;
        }
        Ok(())
    }

    /// Session `id`.
    pub fn get(&self, id: &str) -> Result<Session, ApiError> {
        let row = self.db.query_row(
            &format!("SELECT {COLUMNS} FROM terminal_sessions WHERE id = ?"),
            params![id],
        )?;
        match row {
            Some(row) => session_of(&row),
            None => Err(ApiError::TerminalNotFound { id: id.to_string() }),
        }
    }

    /// Every session, the most recently active first.
    pub fn list(&self) -> Result<Vec<Session>, ApiError> {
        self.db
            .query(
                &format!("SELECT {COLUMNS} FROM terminal_sessions ORDER BY active_ms DESC, id"),
                params![],
            )?
            .iter()
            .map(session_of)
            .collect()
    }

    /// Whether a session on `backend` runs.
    pub fn any_running(&self, backend: Backend) -> Result<bool, ApiError> {
        let row = self.db.query_row(
            "SELECT 1 FROM terminal_sessions WHERE backend = ? AND state = 'running' LIMIT 1",
            params![backend.name()],
        )?;
        Ok(row.is_some())
    }

    /// What the session's backend stores of it (JSON): the light
    /// backend's shell and editor, the computer backend's shell there.
    pub fn shell(&self, id: &str) -> Result<Option<String>, ApiError> {
        let row = self.db.query_row(
            "SELECT shell FROM terminal_sessions WHERE id = ?",
            params![id],
        )?;
        Ok(row
            .map(|row| row.opt_text(0).map(|text| text.map(str::to_string)))
            .transpose()?
            .flatten())
    }

    pub fn save_shell(&self, id: &str, shell: &str, now_ms: i64) -> Result<(), ApiError> {
        self.db.execute(
            "UPDATE terminal_sessions SET shell = ?, active_ms = ? WHERE id = ?",
            params![shell, now_ms, id],
        )?;
        Ok(())
    }

    pub fn resize(&self, id: &str, (cols, rows): (u16, u16)) -> Result<(), ApiError> {
        self.db.execute(
            "UPDATE terminal_sessions SET cols = ?, rows = ? WHERE id = ?",
            params![i64::from(cols), i64::from(rows), id],
        )?;
        Ok(())
    }

    /// Appends `data` to session `id`'s transcript; returns the offset it
    /// begins at. The oldest pieces past [`MAX_KEPT`] are dropped.
    pub fn append(&self, id: &str, data: &[u8], now_ms: i64) -> Result<i64, ApiError> {
        self.db.transaction(|| {
            let session = self.get(id)?;
            let mut at = session.end;
            for piece in data.chunks(PIECE) {
                self.db.execute(
                    "INSERT INTO terminal_output (session, offset, data) VALUES (?, ?, ?)",
                    params![id, at, piece],
                )?;
                at += piece.len() as i64;
            }
            let mut kept_from = session.kept_from;
            if at - kept_from > MAX_KEPT {
                // Whole pieces go; the first kept is the first that stays.
                self.db.execute(
                    "DELETE FROM terminal_output WHERE session = ? AND offset + length(data) <= ?",
                    params![id, at - MAX_KEPT],
                )?;
                kept_from = self
                    .db
                    .query_row(
                        "SELECT min(offset) FROM terminal_output WHERE session = ?",
                        params![id],
                    )?
                    .map(|row| row.opt_int(0))
                    .transpose()?
                    .flatten()
                    .unwrap_or(at);
            }
            self.db.execute(
                "UPDATE terminal_sessions SET end_offset = ?, kept_from = ?, active_ms = ? \
                 WHERE id = ?",
                params![at, kept_from, now_ms, id],
            )?;
            Ok(session.end)
        })
    }

    /// The transcript of session `id` from offset `from` (at least its
    /// first kept offset) to its end: where it begins and the bytes.
    pub fn read(&self, id: &str, from: i64) -> Result<(i64, Vec<u8>), ApiError> {
        let session = self.get(id)?;
        if from > session.end {
            return Err(ApiError::TerminalOffsetBeyondEnd {
                from,
                end: session.end,
            });
        }
        let from = from.max(session.kept_from);
        let rows = self.db.query(
            "SELECT offset, data FROM terminal_output WHERE session = ? \
             AND offset + length(data) > ? ORDER BY offset",
            params![id, from],
        )?;
        let mut out = Vec::new();
        for mut row in rows {
            let offset = row.int(0)?;
            let data = row.take_blob(1)?;
            let skip = usize::try_from(from - offset).unwrap_or(0).min(data.len());
            out.extend_from_slice(&data[skip..]);
        }
        Ok((from, out))
    }

    /// Marks session `id` ended with `code` and `reason` (once: a session
    /// already ended keeps its first ending), dropping the oldest ended
    /// ones past [`MAX_ENDED`]. Whether it was running.
    pub fn end(
        &self,
        id: &str,
        code: Option<i64>,
        reason: &str,
        now_ms: i64,
    ) -> Result<bool, ApiError> {
        let was = self.get(id)?.state == State::Running;
        if was {
            self.db.execute(
                "UPDATE terminal_sessions SET state = 'ended', exit_code = ?, exit_reason = ?, \
                 active_ms = ?, shell = NULL WHERE id = ?",
                params![code, reason, now_ms, id],
            )?;
            self.prune_ended()?;
        }
        Ok(was)
    }

    /// Forgets session `id` and its transcript.
    pub fn delete(&self, id: &str) -> Result<(), ApiError> {
        self.db.transaction(|| {
            self.db
                .execute("DELETE FROM terminal_output WHERE session = ?", params![id])?;
            self.db
                .execute("DELETE FROM terminal_sessions WHERE id = ?", params![id])?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    fn db() -> SqliteDb {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        db
    }

    #[test]
    fn output_is_read_back_from_any_offset() {
        let db = db();
        let t = Transcripts::new(&db);
        t.create("s", Backend::Light, (80, 24), None, 1).unwrap();
        assert_eq!(t.append("s", b"hello ", 2).unwrap(), 0);
        assert_eq!(t.append("s", b"world", 3).unwrap(), 6);
        assert_eq!(t.read("s", 0).unwrap(), (0, b"hello world".to_vec()));
        assert_eq!(t.read("s", 4).unwrap(), (4, b"o world".to_vec()));
        assert_eq!(t.read("s", 11).unwrap(), (11, Vec::new()));
        assert!(matches!(
            t.read("s", 12),
            Err(ApiError::TerminalOffsetBeyondEnd { end: 11, .. })
        ));
        assert!(matches!(
            t.read("nope", 0),
            Err(ApiError::TerminalNotFound { .. })
        ));
        let session = t.get("s").unwrap();
        assert_eq!((session.end, session.active_ms), (11, 3));
    }

    #[test]
    fn the_oldest_output_goes_first_and_kept_from_says_where_it_begins() {
        let db = db();
        let t = Transcripts::new(&db);
        t.create("s", Backend::Light, (80, 24), None, 1).unwrap();
        let piece = vec![b'x'; PIECE];
        let pieces = (MAX_KEPT as usize / PIECE) + 3;
        for _ in 0..pieces {
            t.append("s", &piece, 2).unwrap();
        }
        let session = t.get("s").unwrap();
        assert_eq!(session.end, (pieces * PIECE) as i64);
        assert_eq!(session.kept_from, session.end - MAX_KEPT);
        let (from, bytes) = t.read("s", 0).unwrap();
        assert_eq!(from, session.kept_from);
        assert_eq!(bytes.len() as i64, MAX_KEPT);
    }

    #[test]
    fn running_sessions_are_bounded_and_ended_ones_pruned() {
        let db = db();
        let t = Transcripts::new(&db);
        for n in 0..MAX_RUNNING {
            t.create(&format!("r{n}"), Backend::Light, (80, 24), None, n)
                .unwrap();
        }
        assert!(matches!(
            t.create("more", Backend::Light, (80, 24), None, 99),
            Err(ApiError::TerminalLimit { .. })
        ));
        assert!(t.end("r0", Some(0), "exited", 100).unwrap());
        assert!(!t.end("r0", Some(1), "again", 101).unwrap());
        let ended = t.get("r0").unwrap();
        assert_eq!(ended.state, State::Ended);
        assert_eq!(
            (ended.exit_code, ended.exit_reason.as_deref()),
            (Some(0), Some("exited"))
        );
        t.create("more", Backend::Light, (80, 24), None, 102)
            .unwrap();
        for n in 1..MAX_RUNNING {
            t.end(&format!("r{n}"), None, "closed", 103).unwrap();
        }
        // Many ended sessions: only the newest MAX_ENDED stay.
        for n in 0..MAX_ENDED + 5 {
            let id = format!("e{n}");
            t.create(&id, Backend::Light, (80, 24), None, 200 + n)
                .unwrap();
            t.end(&id, Some(0), "exited", 200 + n).unwrap();
        }
        let ended: Vec<Session> = t
            .list()
            .unwrap()
            .into_iter()
            .filter(|s| s.state == State::Ended)
            .collect();
        assert_eq!(ended.len() as i64, MAX_ENDED);
        assert!(ended.iter().all(|s| s.id != "r0" && s.id != "e0"));
    }
}
