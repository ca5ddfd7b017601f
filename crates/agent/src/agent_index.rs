//! The deployment's list of agents (`GET /agents`), kept by the Worker.
//!
//! Each agent's data lives in its own Durable Object, which cannot be
//! enumerated; so the Worker keeps an index in one more object (the
//! `Registry`): an agent is recorded when `PUT /agents/{id}` or a fork
//! creates it and forgotten when `DELETE /agents/{id}` succeeds. Recording
//! is idempotent and keeps the first creation time, so a `PUT` of an agent
//! that exists repairs an index that missed it. This module is the index's
//! storage and paging, plain Rust over [`Sql`]; the glue is `src/registry.rs`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stead_sql::{params, Sql};

use crate::decode::{within, Cursor};
use crate::error::ApiError;

/// The cursor kind of the listing.
const CURSOR: &str = "agents";

/// Most agents one page holds.
pub const MAX_PAGE: i64 = 100;

/// Agents a page holds unless `limit` says otherwise.
const DEFAULT_PAGE: i64 = 50;

/// Creates the index's table (idempotent).
pub fn migrate<S: Sql>(db: &S) -> Result<(), ApiError> {
    db.execute(
        "CREATE TABLE IF NOT EXISTS agent_index (\
         id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL)",
        params![],
    )?;
    db.execute(
        "CREATE INDEX IF NOT EXISTS agent_index_newest ON agent_index (created_ms DESC, id DESC)",
        params![],
    )?;
    Ok(())
}

/// Records `id` as created at `now_ms`, unless it is already recorded.
pub fn record<S: Sql>(db: &S, id: &str, now_ms: i64) -> Result<(), ApiError> {
    db.execute(
        "INSERT INTO agent_index (id, created_ms) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
        params![id, now_ms],
    )?;
    Ok(())
}

/// Forgets `id`.
pub fn forget<S: Sql>(db: &S, id: &str) -> Result<(), ApiError> {
    db.execute("DELETE FROM agent_index WHERE id = ?", params![id])?;
    Ok(())
}

/// One agent as the index has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    pub id: String,
    pub created_ms: i64,
}

/// One page of the index: newest first, ties by id (descending).
#[derive(Debug, Serialize, Deserialize)]
pub struct Page {
    pub agents: Vec<Listed>,
    /// The cursor of the next page, when there may be one.
    pub next_cursor: Option<String>,
}

/// The page `query` (`limit`, `cursor`) asks for.
pub fn page<S: Sql>(db: &S, query: &[(String, String)]) -> Result<Page, ApiError> {
    let (mut limit, mut after) = (DEFAULT_PAGE, None);
    for (key, value) in query {
        match key.as_str() {
            "limit" => {
                let number: i64 = value.parse().map_err(|_| {
                    ApiError::InvalidRequest(format!("limit={value:?} is not a number"))
                })?;
                limit = within("limit", number, 1, MAX_PAGE)?;
            }
            "cursor" => after = Some(position(&Cursor::decode(CURSOR, value)?)?),
            other => {
                return Err(ApiError::InvalidRequest(format!(
                    "unknown query parameter {other:?} (GET /agents takes limit and cursor)"
                )))
            }
        }
    }
    let rows = match &after {
        Some((created_ms, id)) => db.query(
            "SELECT id, created_ms FROM agent_index \
             WHERE created_ms < ? OR (created_ms = ? AND id < ?) \
             ORDER BY created_ms DESC, id DESC LIMIT ?",
            params![*created_ms, *created_ms, id.as_str(), limit],
        )?,
        None => db.query(
            "SELECT id, created_ms FROM agent_index ORDER BY created_ms DESC, id DESC LIMIT ?",
            params![limit],
        )?,
    };
    let agents = rows
        .iter()
        .map(|row| {
            Ok(Listed {
                id: row.text(0)?.to_string(),
                created_ms: row.int(1)?,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let next_cursor = match agents.last() {
        Some(last) if agents.len() as i64 == limit => Some(Cursor::encode(
            CURSOR,
            &format!("{}:{}", last.created_ms, last.id),
        )),
        _ => None,
    };
    Ok(Page {
        agents,
        next_cursor,
    })
}

/// The `(created_ms, id)` a cursor's position names.
fn position(text: &str) -> Result<(i64, String), ApiError> {
    let refused = || ApiError::InvalidRequest("cursor is not a next_cursor of GET /agents".into());
    let (created_ms, id) = text.split_once(':').ok_or_else(refused)?;
    Ok((created_ms.parse().map_err(|_| refused())?, id.to_string()))
}

/// The listing's answer: each agent with its creation time and its
/// `GET /agents/{id}` answer beside it (usage); an agent whose answer is
/// `None` was deleted meanwhile and is left out.
pub fn answer(page: Page, details: Vec<Option<Value>>) -> Value {
    let agents: Vec<Value> = page
        .agents
        .into_iter()
        .zip(details)
        .filter_map(|(listed, detail)| {
            let mut entry = json!({ "id": listed.id, "created_ms": listed.created_ms });
            if let (Some(entry), Value::Object(detail)) = (entry.as_object_mut(), detail?) {
                for (key, value) in detail {
                    if key != "agent" {
                        entry.insert(key, value);
                    }
                }
            }
            Some(entry)
        })
        .collect();
    json!({ "agents": agents, "next_cursor": page.next_cursor })
}

#[cfg(test)]
mod tests {
    use super::*;
    use stead_sql::SqliteDb;

    fn db() -> SqliteDb {
        let db = SqliteDb::memory().unwrap();
        migrate(&db).unwrap();
        db
    }

    fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn ids(page: &Page) -> Vec<&str> {
        page.agents
            .iter()
            .map(|listed| listed.id.as_str())
            .collect()
    }

    #[test]
    fn pages_run_newest_first_and_every_agent_appears_once() {
        let db = db();
        for (i, id) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            // Two agents share a creation time: their order is by id.
            record(&db, id, 1000 + (i as i64 / 2)).unwrap();
        }
        let first = page(&db, &query(&[("limit", "2")])).unwrap();
        assert_eq!(ids(&first), ["e", "d"]);
        let cursor = first.next_cursor.clone().unwrap();
        let second = page(&db, &query(&[("limit", "2"), ("cursor", &cursor)])).unwrap();
        assert_eq!(ids(&second), ["c", "b"]);
        let cursor = second.next_cursor.clone().unwrap();
        let third = page(&db, &query(&[("limit", "2"), ("cursor", &cursor)])).unwrap();
        assert_eq!(ids(&third), ["a"]);
        assert_eq!(third.next_cursor, None);
    }

    #[test]
    fn recording_again_keeps_the_first_creation_time_and_forget_removes() {
        let db = db();
        record(&db, "alice", 5).unwrap();
        record(&db, "alice", 9).unwrap();
        let listed = Listed {
            id: "alice".into(),
            created_ms: 5,
        };
        assert_eq!(page(&db, &[]).unwrap().agents, [listed]);
        forget(&db, "alice").unwrap();
        assert!(page(&db, &[]).unwrap().agents.is_empty());
    }

    #[test]
    fn bad_paging_is_refused_with_what_to_send() {
        let db = db();
        let error = |pairs: &[(&str, &str)]| match page(&db, &query(pairs)) {
            Err(ApiError::InvalidRequest(message)) => message,
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("accepted {pairs:?}"),
        };
        assert!(error(&[("limit", "0")]).contains("between 1 and 100"));
        assert!(error(&[("limit", "x")]).contains("not a number"));
        assert!(error(&[("before", "1")]).contains("limit and cursor"));
        let foreign = Cursor::encode("jobs", "5:alice");
        assert!(matches!(
            page(&db, &query(&[("cursor", &foreign)])),
            Err(ApiError::InvalidRequest(_))
        ));
    }

    #[test]
    fn the_answer_carries_each_agents_details_and_drops_one_deleted_meanwhile() {
        let db = db();
        record(&db, "alice", 7).unwrap();
        record(&db, "bob", 8).unwrap();
        let page = page(&db, &[]).unwrap();
        let answer = answer(
            page,
            vec![None, Some(json!({"agent": "alice", "usage": {"files": 3}}))],
        );
        assert_eq!(
            answer,
            json!({"agents": [{"id": "alice", "created_ms": 7, "usage": {"files": 3}}], "next_cursor": null})
        );
    }
}
