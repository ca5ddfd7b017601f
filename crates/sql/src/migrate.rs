//! Schema migrations, applied in order at Durable Object start and recorded.
//!
//! Each file in `migrations/` is named `NNNN_what.sql`. A workspace records
//! every version it has applied in `schema_migrations`; at start-up the ones it
//! lacks run in order, each inside one transaction with its record, so an
//! existing workspace upgrades in place and a crash mid-migration leaves it at
//! the previous version.
//!
//! Files are split into statements at lines ending in `;` (DO SQLite runs one
//! statement per call). Keep each statement's last line ending in `;` and no
//! `;` at a line end inside a statement.

use crate::{params, Sql, SqlError};

/// One numbered schema change.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub version: u32,
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration in `migrations/`, in version order.
pub const MIGRATIONS: &[Migration] = include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// A migration failed; the workspace stays at the version before it.
#[derive(Debug, thiserror::Error)]
#[error("migration {version} ({name}) failed: {source}")]
pub struct MigrationError {
    pub version: u32,
    pub name: &'static str,
    #[source]
    pub source: SqlError,
}

/// Applies the migrations `db` lacks, in order; returns how many ran.
pub fn migrate(db: &impl Sql, migrations: &[Migration]) -> Result<usize, MigrationError> {
    let bootstrap = |source| MigrationError {
        version: 0,
        name: "schema_migrations",
        source,
    };
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL
        )",
        params![],
    )
    .map_err(bootstrap)?;
    // Every migration not yet recorded, in order: a number that landed after
    // a higher one (two branches merged) still applies.
    let done: std::collections::BTreeSet<i64> = db
        .query("SELECT version FROM schema_migrations", params![])
        .and_then(|rows| rows.iter().map(|row| row.int(0)).collect())
        .map_err(bootstrap)?;

    let mut applied = 0;
    for migration in migrations
        .iter()
        .filter(|m| !done.contains(&i64::from(m.version)))
    {
        db.transaction(|| {
            for statement in statements(migration.sql) {
                db.execute(&statement, params![])?;
            }
            db.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                params![migration.version, migration.name],
            )
        })
        .map_err(|source| MigrationError {
            version: migration.version,
            name: migration.name,
            source,
        })?;
        applied += 1;
    }
    Ok(applied)
}

/// Splits a migration file into statements at lines ending in `;`, dropping
/// comment-only lines.
fn statements(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in sql.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("--") {
            continue;
        }
        current.push_str(line);
        current.push('\n');
        if trimmed.ends_with(';') {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::statements;

    #[test]
    fn splits_at_line_end_semicolons_and_skips_comments() {
        let sql = "-- a comment\nCREATE TABLE a (x TEXT DEFAULT ';');\n\nCREATE TABLE b (\n  y INTEGER\n);\n";
        let got = statements(sql);
        assert_eq!(got.len(), 2);
        assert!(got[0].contains("DEFAULT ';'"));
        assert!(got[1].starts_with("CREATE TABLE b"));
    }
}
