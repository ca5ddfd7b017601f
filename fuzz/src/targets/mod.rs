//! The targets, one module each, and what they share: a fresh workspace
//! database and a dump of it to prove a failed call changed nothing.

pub mod api;
pub mod edit;
pub mod frame;
pub mod patch;
pub mod path;
pub mod shell;
pub mod syntax;
pub mod wire;

use stead_sql::{migrate, params, Row, Sql, SqliteDb, MIGRATIONS};

/// A migrated in-memory workspace database.
pub(crate) fn fresh_db() -> SqliteDb {
    let db = SqliteDb::memory().expect("in-memory SQLite");
    migrate(&db, MIGRATIONS).expect("migrations apply to a fresh database");
    db
}

/// Every row of every table in `db` (found through `sqlite_master`, so a
/// table added by a later migration is covered too), for before/after
/// comparisons.
pub(crate) fn dump(db: &SqliteDb) -> Vec<(String, Vec<Row>)> {
    let tables = db
        .query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
            params![],
        )
        .expect("list tables");
    tables
        .iter()
        .map(|row| {
            let name = row.text(0).expect("table name").to_string();
            let rows = db
                .query(
                    &format!("SELECT * FROM \"{name}\" ORDER BY 1, 2"),
                    params![],
                )
                .or_else(|_| db.query(&format!("SELECT * FROM \"{name}\" ORDER BY 1"), params![]))
                .expect("dump table");
            (name, rows)
        })
        .collect()
}

/// `bytes` as text, invalid UTF-8 replaced: most targets take strings.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
