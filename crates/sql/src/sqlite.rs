//! [`Sql`] over real SQLite (rusqlite, bundled): host tests and tools run the
//! exact statements the Durable Object runs.

use std::cell::Cell;

use rusqlite::{types::ValueRef, Connection};

use crate::{Param, Row, Sql, SqlError, Value};

/// A SQLite database, in memory or on disk.
pub struct SqliteDb {
    conn: Connection,
    depth: Cell<u32>,
}

impl SqliteDb {
    /// A fresh in-memory database.
    pub fn memory() -> Result<Self, SqlError> {
        Connection::open_in_memory()
            .map(Self::from_connection)
            .map_err(|e| SqlError::engine("open :memory:", e.to_string()))
    }

    /// A database file, created if missing.
    pub fn open(path: &std::path::Path) -> Result<Self, SqlError> {
        Connection::open(path)
            .map(Self::from_connection)
            .map_err(|e| SqlError::engine("open", e.to_string()))
    }

    /// The rows inserted, updated or deleted since the database was opened,
    /// including those of triggers: what a statement budget counts as
    /// written.
    pub fn total_changes(&self) -> u64 {
        self.conn.total_changes()
    }

    fn from_connection(conn: Connection) -> Self {
        SqliteDb {
            conn,
            depth: Cell::new(0),
        }
    }
}

impl Sql for SqliteDb {
    fn query(&self, statement: &str, params: &[Param<'_>]) -> Result<Vec<Row>, SqlError> {
        let fail = |e: rusqlite::Error| SqlError::engine(statement, e.to_string());
        let mut stmt = self.conn.prepare_cached(statement).map_err(fail)?;
        let bound = params.iter().map(|param| match *param {
            Param::Null => rusqlite::types::Value::Null,
            Param::Integer(i) => rusqlite::types::Value::Integer(i),
            Param::Text(s) => rusqlite::types::Value::Text(s.to_owned()),
            Param::Blob(b) => rusqlite::types::Value::Blob(b.to_owned()),
        });
        let columns = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(bound))
            .map_err(fail)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(fail)? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(match row.get_ref(i).map_err(fail)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(i) => Value::Integer(i),
                    ValueRef::Real(r) => Value::Real(r),
                    ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                });
            }
            out.push(Row(values));
        }
        Ok(out)
    }

    fn transaction<T, E>(&self, body: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<SqlError>,
    {
        let depth = self.depth.get();
        let name = format!("sp{depth}");
        self.execute(&format!("SAVEPOINT {name}"), &[])?;
        self.depth.set(depth + 1);
        let result = body();
        self.depth.set(depth);
        match result {
            Ok(value) => {
                self.execute(&format!("RELEASE {name}"), &[])?;
                Ok(value)
            }
            Err(error) => {
                self.execute(&format!("ROLLBACK TO {name}"), &[])?;
                self.execute(&format!("RELEASE {name}"), &[])?;
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;

    #[test]
    fn failed_transaction_rolls_back_and_nests() {
        let db = SqliteDb::memory().unwrap();
        db.execute("CREATE TABLE t (x INTEGER)", params![]).unwrap();
        let outer: Result<(), SqlError> = db.transaction(|| {
            db.execute("INSERT INTO t VALUES (1)", params![])?;
            let inner: Result<(), SqlError> = db.transaction(|| {
                db.execute("INSERT INTO t VALUES (2)", params![])?;
                Err(SqlError::MissingColumn { column: 0 })
            });
            assert!(inner.is_err());
            Ok(())
        });
        outer.unwrap();
        let rows = db.query("SELECT x FROM t", params![]).unwrap();
        assert_eq!(rows, vec![Row(vec![Value::Integer(1)])]);
    }
}
