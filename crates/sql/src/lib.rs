//! The SQL boundary of a workspace.
//!
//! Durable Object SQLite is synchronous: a statement runs to completion inside
//! the current event, and a run of statements with no `await` between them is
//! atomic. Everything above this crate (the VFS, later the scheduler) is
//! therefore written once against the tiny synchronous [`Sql`] trait and runs
//! unchanged on DO SQLite in production and on real SQLite (the `rusqlite`
//! feature) in host tests and tools.
//!
//! The trait is deliberately small: statements with positional `?` parameters,
//! rows of dynamically typed [`Value`]s, and a nestable [`Sql::transaction`].
//! Platform limits shape it too: DO SQLite allows at most 100 bound parameters
//! per statement, so callers pass sets as one JSON array and expand it with
//! `json_each(?)` instead of building `IN (?, ?, ...)` lists.

mod migrate;
#[cfg(feature = "rusqlite")]
mod sqlite;
mod value;

pub use migrate::{migrate, Migration, MigrationError, MIGRATIONS};
#[cfg(feature = "rusqlite")]
pub use sqlite::SqliteDb;
pub use value::{Param, Row, Value};

/// A statement failed in the engine, or a column held an unexpected type.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The engine rejected or failed the statement.
    #[error("sql statement failed: {message} (in `{statement}`)")]
    Engine { statement: String, message: String },
    /// A column did not hold the type the caller asked for.
    #[error("column {column} holds {found}, expected {expected}")]
    ColumnType {
        column: usize,
        expected: &'static str,
        found: &'static str,
    },
    /// A row had fewer columns than the caller read.
    #[error("row has no column {column}")]
    MissingColumn { column: usize },
}

impl SqlError {
    /// Builds an engine error, keeping the start of the statement for context.
    pub fn engine(statement: &str, message: impl Into<String>) -> Self {
        const CONTEXT: usize = 120;
        let mut end = statement.len().min(CONTEXT);
        while !statement.is_char_boundary(end) {
            end -= 1;
        }
        SqlError::Engine {
            statement: statement[..end].to_string(),
            message: message.into(),
        }
    }
}

/// A synchronous SQL connection: DO SQLite in the Worker, rusqlite on the host.
pub trait Sql {
    /// Runs one statement and returns every row it produced.
    fn query(&self, statement: &str, params: &[Param<'_>]) -> Result<Vec<Row>, SqlError>;

    /// Runs `body` atomically: every statement it runs commits together when it
    /// returns `Ok`, and none of them does when it returns `Err`. Nests.
    fn transaction<T, E>(&self, body: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<SqlError>;

    /// Runs one statement for its effect.
    fn execute(&self, statement: &str, params: &[Param<'_>]) -> Result<(), SqlError> {
        self.query(statement, params).map(drop)
    }

    /// Runs one statement and returns its first row, if any.
    fn query_row(&self, statement: &str, params: &[Param<'_>]) -> Result<Option<Row>, SqlError> {
        Ok(self.query(statement, params)?.into_iter().next())
    }
}

/// Builds a parameter slice from values convertible into [`Param`].
#[macro_export]
macro_rules! params {
    () => { &[] as &[$crate::Param<'_>] };
    ($($value:expr),+ $(,)?) => { &[$($crate::Param::from($value)),+] as &[$crate::Param<'_>] };
}
