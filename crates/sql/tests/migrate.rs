//! The migration runner on real SQLite.

use stead_sql::{migrate, params, Migration, Sql, SqliteDb, MIGRATIONS};

const ONE: Migration = Migration {
    version: 1,
    name: "0001_one.sql",
    sql: "CREATE TABLE one (x INTEGER);",
};
const TWO: Migration = Migration {
    version: 2,
    name: "0002_two.sql",
    sql: "CREATE TABLE two (x INTEGER);",
};
const THREE: Migration = Migration {
    version: 3,
    name: "0003_three.sql",
    sql: "CREATE TABLE three (x INTEGER);\nINSERT INTO three (x) VALUES (3);",
};

fn tables(db: &SqliteDb) -> Vec<String> {
    db.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
        params![],
    )
    .unwrap()
    .iter()
    .map(|r| r.text(0).unwrap().to_string())
    .collect()
}

#[test]
fn each_migration_applies_once_and_in_order() {
    let db = SqliteDb::memory().unwrap();
    assert_eq!(migrate(&db, &[ONE, TWO]).unwrap(), 2);
    assert_eq!(migrate(&db, &[ONE, TWO]).unwrap(), 0, "nothing twice");
    assert_eq!(migrate(&db, &[ONE, TWO, THREE]).unwrap(), 1);
    assert_eq!(tables(&db), ["one", "schema_migrations", "three", "two"]);
}

#[test]
fn a_lower_number_that_lands_later_still_applies() {
    // Two branches each added a migration; the workspace met 3 before 2.
    let db = SqliteDb::memory().unwrap();
    migrate(&db, &[ONE, THREE]).unwrap();
    assert_eq!(migrate(&db, &[ONE, TWO, THREE]).unwrap(), 1);
    assert!(tables(&db).contains(&"two".to_string()));
}

#[test]
fn a_failing_migration_leaves_nothing_of_itself() {
    let db = SqliteDb::memory().unwrap();
    let broken = Migration {
        version: 2,
        name: "0002_broken.sql",
        sql: "CREATE TABLE half (x INTEGER);\nCREATE TABLE half (x INTEGER);",
    };
    migrate(&db, &[ONE]).unwrap();
    let error = migrate(&db, &[ONE, broken]).unwrap_err();
    assert_eq!(error.version, 2);
    assert!(!tables(&db).contains(&"half".to_string()), "rolled back");
    assert_eq!(migrate(&db, &[ONE, TWO]).unwrap(), 1);
}

#[test]
fn the_project_migrations_apply_to_an_empty_database() {
    let db = SqliteDb::memory().unwrap();
    assert_eq!(migrate(&db, MIGRATIONS).unwrap(), MIGRATIONS.len());
    assert!(MIGRATIONS.windows(2).all(|w| w[0].version < w[1].version));
}
