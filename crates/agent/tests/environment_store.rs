//! The durable environment's store on real SQLite: a commit replaces the
//! manifest whole and keeps only the content it names, damaged content is
//! refused on the way in and out, and nothing of it touches the
//! workspace's chunks, quotas or change log.

use stead_agent::environment::store::{self, EnvState};
use stead_agent::environment::{BuiltFrom, SaveReason};
use stead_sql::{migrate, params, Sql, SqliteDb, MIGRATIONS};
use stead_sync::environment::{EnvEntry, EnvKind};
use stead_sync::{hash_chunk, hash_content};

fn db() -> SqliteDb {
    let db = SqliteDb::memory().unwrap();
    migrate(&db, MIGRATIONS).unwrap();
    db
}

fn file(path: &str, content: &[u8]) -> EnvEntry {
    EnvEntry {
        path: path.into(),
        kind: EnvKind::File {
            mode: 0o644,
            size: content.len() as u64,
            chunks: hash_content(content),
            mtime_ms: 1,
        },
    }
}

fn from(instance: &str) -> BuiltFrom {
    BuiltFrom {
        reason: SaveReason::Release,
        instance: instance.into(),
        setup: None,
    }
}

fn count(db: &SqliteDb, table: &str) -> i64 {
    db.query_row(&format!("SELECT COUNT(*) FROM {table}"), params![])
        .unwrap()
        .unwrap()
        .int(0)
        .unwrap()
}

#[test]
fn a_commit_replaces_the_snapshot_and_keeps_only_what_it_names() {
    let db = db();
    assert_eq!(store::record(&db).unwrap(), None);
    let (a, b) = (b"first content".as_slice(), b"second content".as_slice());
    let entries = vec![
        EnvEntry {
            path: "/.venv".into(),
            kind: EnvKind::Dir { mode: 0o755 },
        },
        file("/.venv/a", a),
        file("/.venv/b", b),
    ];
    assert_eq!(
        store::missing(&db, &[hash_chunk(a), hash_chunk(b)])
            .unwrap()
            .len(),
        2
    );
    assert!(store::put_chunk(&db, &hash_chunk(a), a).unwrap());
    assert!(store::put_chunk(&db, &hash_chunk(b), b).unwrap());
    assert!(
        !store::put_chunk(&db, &hash_chunk(a), b).unwrap(),
        "content that is not its hash's is refused"
    );
    let stored_before = db
        .query_row(
            "SELECT value FROM meta WHERE key = 'stored_bytes'",
            params![],
        )
        .unwrap()
        .map(|row| row.int(0).unwrap());
    store::commit(&db, &entries, 27, &from("one"), 1000).unwrap();
    let record = store::record(&db).unwrap().unwrap();
    assert_eq!(record.state, EnvState::Ready);
    assert_eq!(
        (record.bytes, record.files, record.saved_ms),
        (27, 3, Some(1000))
    );
    assert_eq!(record.built_from, Some(from("one")));
    assert_eq!(store::entries(&db).unwrap(), entries);
    assert_eq!(
        store::chunk(&db, &hash_chunk(a)).unwrap().as_deref(),
        Some(a)
    );

    // The workspace's own store and counters are untouched.
    assert_eq!(count(&db, "chunks"), 0);
    assert_eq!(count(&db, "changes"), 0);
    let stored_after = db
        .query_row(
            "SELECT value FROM meta WHERE key = 'stored_bytes'",
            params![],
        )
        .unwrap()
        .map(|row| row.int(0).unwrap());
    assert_eq!(stored_before, stored_after);

    // A new snapshot without `b`: its content goes, as does content a
    // failed save staged.
    let stray = b"staged by a save that failed".as_slice();
    store::put_chunk(&db, &hash_chunk(stray), stray).unwrap();
    store::commit(&db, &entries[..2], 13, &from("two"), 2000).unwrap();
    assert_eq!(count(&db, "environment_chunks"), 1);
    assert_eq!(store::stored_bytes(&db).unwrap(), a.len() as u64);
    assert_eq!(store::chunk(&db, &hash_chunk(b)).unwrap(), None);

    store::drop_all(&db).unwrap();
    assert_eq!(store::record(&db).unwrap(), None);
    assert_eq!(count(&db, "environment_chunks"), 0);
    assert!(store::entries(&db).unwrap().is_empty());
}

#[test]
fn damaged_content_reads_as_missing_and_states_are_kept() {
    let db = db();
    let a = b"content".as_slice();
    store::put_chunk(&db, &hash_chunk(a), a).unwrap();
    store::commit(&db, &[file("/node_modules/x", a)], 7, &from("one"), 5).unwrap();
    db.execute("UPDATE environment_chunks SET data = X'00'", params![])
        .unwrap();
    assert_eq!(store::chunk(&db, &hash_chunk(a)).unwrap(), None);

    store::mark(&db, EnvState::Building, None).unwrap();
    assert_eq!(
        store::record(&db).unwrap().unwrap().state,
        EnvState::Building
    );
    store::mark(&db, EnvState::Failed, Some("over the limit")).unwrap();
    store::warn(&db, Some("not restored")).unwrap();
    let record = store::record(&db).unwrap().unwrap();
    assert_eq!(record.state, EnvState::Failed);
    assert_eq!(record.log.as_deref(), Some("over the limit"));
    assert_eq!(record.warning.as_deref(), Some("not restored"));
    assert_eq!(record.files, 1, "the snapshot's description stays");
}
