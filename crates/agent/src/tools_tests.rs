//! Host tests of the file tools on real SQLite.

use serde_json::{json, Value};
use stead_sql::{migrate, SqliteDb, MIGRATIONS};
use stead_vfs::Vfs;

use super::*;

fn db() -> SqliteDb {
    let db = SqliteDb::memory().unwrap();
    migrate(&db, MIGRATIONS).unwrap();
    db
}

fn call(db: &SqliteDb, tool: &str, body: &str) -> Result<Value, ApiError> {
    let tool = Tool::from_name(tool).expect("a tool");
    let body = crate::decode::parse(body.as_bytes())?;
    super::call(&Vfs::new(db, 1_000), tool, &body)
}

fn ok(db: &SqliteDb, tool: &str, body: Value) -> Value {
    call(db, tool, &body.to_string()).unwrap_or_else(|e| panic!("{tool} failed: {e}"))
}

fn fails(db: &SqliteDb, tool: &str, body: &str) -> (u16, String) {
    let error = call(db, tool, body).expect_err("the call should fail");
    (error.status(), error.code().to_string())
}

fn revision(db: &SqliteDb) -> i64 {
    Vfs::new(db, 0).revision().unwrap()
}

#[test]
fn tools_round_trip() {
    let db = db();
    let written = ok(
        &db,
        "write",
        json!({"path": "/src/a.txt", "content": "one\ntwo\n", "mode": "755"}),
    );
    assert_eq!(written["size"], 8);
    assert_eq!(written["created"], true);
    let stat = ok(&db, "stat", json!({"path": "src/a.txt"}));
    assert_eq!(stat["mode"], "0755");
    assert_eq!(stat["type"], "file");
    let read = ok(
        &db,
        "read",
        json!({"path": "/src/a.txt", "offset": 2, "line_numbers": true}),
    );
    assert_eq!(read["content"], "     2\ttwo\n");
    let bytes = ok(
        &db,
        "read",
        json!({"path": "/src/a.txt", "byte_offset": 4, "byte_length": 2}),
    );
    assert_eq!(bytes["content"], "tw");
    assert_eq!(bytes["next_byte_offset"], 6);
    ok(
        &db,
        "append",
        json!({"path": "/src/a.txt", "content": "dGhyZWUK", "encoding": "base64"}),
    );
    let edited = ok(
        &db,
        "edit",
        json!({"path": "/src/a.txt", "edits": [{"old": "two", "new": "2"}]}),
    );
    assert!(edited["diff"].as_str().unwrap().contains("-two\n+2\n"));
    assert_eq!(
        ok(&db, "read", json!({"path": "/src/a.txt"}))["content"],
        "one\n2\nthree\n"
    );
    ok(
        &db,
        "cp",
        json!({"from": "/src", "to": "/copy", "recursive": true}),
    );
    ok(&db, "mv", json!({"from": "/copy", "to": "/moved"}));
    ok(
        &db,
        "symlink",
        json!({"target": "moved/a.txt", "path": "/link"}),
    );
    assert_eq!(
        ok(&db, "readlink", json!({"path": "/link"}))["target"],
        "moved/a.txt"
    );
    let listing = ok(&db, "ls", json!({"path": "/", "limit": 2}));
    assert_eq!(listing["entries"].as_array().unwrap().len(), 2);
    let next = json!({"path": "/", "cursor": listing["next_cursor"]});
    let rest = ok(&db, "ls", next);
    assert_eq!(rest["entries"][0]["name"], "src", "the page after `moved`");
    let glob = ok(&db, "glob", json!({"pattern": "**/*.txt"}));
    assert_eq!(glob["matches"].as_array().unwrap().len(), 2);
    let grep = ok(
        &db,
        "grep",
        json!({"pattern": "THREE", "ignore_case": true, "output": "files"}),
    );
    assert_eq!(grep["files"], json!(["/moved/a.txt", "/src/a.txt"]));
    ok(&db, "rm", json!({"path": "/moved", "recursive": true}));
    assert_eq!(
        ok(&db, "rm", json!({"path": "/moved", "force": true}))["removed"],
        false
    );
    let changes = ok(&db, "changes", json!({"since": 0}));
    assert_eq!(changes["revision"], revision(&db));
    assert!(changes["changes"].as_array().unwrap().len() >= 8);
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let db = db();
    ok(
        &db,
        "write",
        json!({"path": "/keep.txt", "content": "kept"}),
    );
    let before = revision(&db);
    let cases: &[(&str, &str, u16, &str)] = &[
        ("write", "{not json", 400, "MALFORMED_JSON"),
        ("write", "", 400, "INVALID_REQUEST"),
        (
            "write",
            r#"{"path": 5, "content": "x"}"#,
            400,
            "INVALID_REQUEST",
        ),
        ("write", r#"{"content": "x"}"#, 400, "INVALID_REQUEST"),
        (
            "write",
            r#"{"path": "/a", "content": "x", "colour": 1}"#,
            400,
            "INVALID_REQUEST",
        ),
        (
            "write",
            r#"{"path": "/../etc/passwd", "content": "x"}"#,
            403,
            "EACCES",
        ),
        (
            "write",
            r#"{"path": "/a\u0000b", "content": "x"}"#,
            400,
            "EINVAL",
        ),
        (
            "write",
            r#"{"path": "/keep.txt/inner", "content": "x"}"#,
            409,
            "ENOTDIR",
        ),
        (
            "write",
            r#"{"path": "/x", "content": "%%%", "encoding": "base64"}"#,
            400,
            "INVALID_REQUEST",
        ),
        (
            "write",
            r#"{"path": "/x", "content": "x", "mode": "999"}"#,
            400,
            "INVALID_REQUEST",
        ),
        (
            "edit",
            r#"{"path": "/missing", "edits": [{"old": "a", "new": "b"}]}"#,
            404,
            "ENOENT",
        ),
        (
            "edit",
            r#"{"path": "/keep.txt", "edits": [{"old": "zzz", "new": "b"}]}"#,
            422,
            "EDIT_NO_MATCH",
        ),
        ("mkdir", r#"{"path": "/keep.txt"}"#, 409, "EEXIST"),
        ("rm", r#"{"path": "/"}"#, 409, "EBUSY"),
        ("grep", r#"{"pattern": "(", "regex": true}"#, 400, "EINVAL"),
        ("glob", r#"{"pattern": "[", "path": "/"}"#, 400, "EINVAL"),
        (
            "changes",
            r#"{"since": "yesterday"}"#,
            400,
            "INVALID_REQUEST",
        ),
    ];
    for (tool, body, status, code) in cases {
        assert_eq!(
            fails(&db, tool, body),
            (*status, code.to_string()),
            "{tool} {body}"
        );
    }
    let long_name = format!(r#"{{"path": "/{}", "content": "x"}}"#, "n".repeat(256));
    assert_eq!(
        fails(&db, "write", &long_name),
        (400, "ENAMETOOLONG".to_string())
    );
    assert_eq!(
        revision(&db),
        before,
        "no failed call may change the workspace"
    );
    assert_eq!(
        ok(&db, "read", json!({"path": "/keep.txt"}))["content"],
        "kept"
    );
}

#[test]
fn error_body_names_path_and_edit() {
    let db = db();
    ok(&db, "write", json!({"path": "/f", "content": "a a"}));
    let error = call(
        &db,
        "edit",
        r#"{"path": "/f", "edits": [{"old": "b", "new": "c"}, {"old": "a", "new": "c"}]}"#,
    )
    .unwrap_err();
    let body = error.body();
    assert_eq!(body["error"]["code"], "EDIT_NO_MATCH");
    assert_eq!(body["error"]["edit_index"], 0);
    assert_eq!(body["error"]["path"], "/f");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("edit 0"));
}

#[test]
fn out_of_range_values_are_refused_and_named() {
    let db = db();
    ok(&db, "write", json!({"path": "/f", "content": "a\nb\n"}));
    ok(&db, "mkdir", json!({"path": "/d"}));
    for (tool, body, field) in [
        (
            "read",
            json!({"path": "/f", "byte_length": 1_000_000_000_000_000u64}),
            "byte_length",
        ),
        (
            "read",
            json!({"path": "/f", "byte_length": 0}),
            "byte_length",
        ),
        ("read", json!({"path": "/f", "limit": 2001}), "limit"),
        ("read", json!({"path": "/f", "offset": 0}), "offset"),
        ("ls", json!({"path": "/", "limit": 10_001}), "limit"),
        ("ls", json!({"path": "/", "limit": 0}), "limit"),
        ("glob", json!({"pattern": "*", "limit": 1_000_000}), "limit"),
        ("grep", json!({"pattern": "a", "limit": 0}), "limit"),
        ("grep", json!({"pattern": "a", "context": 101}), "context"),
        ("changes", json!({"limit": 10_001}), "limit"),
    ] {
        let error = call(&db, tool, &body.to_string()).expect_err("refused");
        assert_eq!(
            (error.status(), error.code()),
            (400, "INVALID_REQUEST"),
            "{body}"
        );
        assert!(error.to_string().contains(field), "{tool} {body}: {error}");
    }
    // Negative numbers are not clamped to zero either.
    let (status, code) = fails(&db, "ls", r#"{"limit":-1}"#);
    assert_eq!((status, code.as_str()), (400, "INVALID_REQUEST"));
}

#[test]
fn cursors_are_opaque_and_garbage_is_refused() {
    let db = db();
    for name in ["a", "b", "c"] {
        ok(
            &db,
            "write",
            json!({"path": format!("/d/{name}"), "content": "x"}),
        );
    }
    let first = ok(&db, "ls", json!({"path": "/d", "limit": 2}));
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let rest = ok(&db, "ls", json!({"path": "/d", "cursor": cursor}));
    assert_eq!(rest["entries"][0]["name"], "c");
    let globbed = ok(&db, "glob", json!({"pattern": "d/*", "limit": 1}));
    let next = globbed["next_cursor"].as_str().unwrap().to_string();
    let more = ok(&db, "glob", json!({"pattern": "d/*", "cursor": next}));
    assert_eq!(more["matches"][0]["path"], "/d/b");
    for (tool, body) in [
        ("ls", json!({"path": "/d", "cursor": "garbage!!!"})),
        ("ls", json!({"path": "/d", "cursor": next})),
        ("glob", json!({"pattern": "*", "cursor": "b"})),
        ("glob", json!({"pattern": "*", "cursor": cursor})),
    ] {
        let error = call(&db, tool, &body.to_string()).expect_err("refused");
        assert_eq!(
            (error.status(), error.code()),
            (400, "INVALID_REQUEST"),
            "{body}"
        );
    }
}

/// A binary file read as lines comes back empty, with a hint that says how
/// to get its bytes; a text file has no hint.
#[test]
fn reading_a_binary_file_as_lines_says_how_to_get_its_bytes() {
    let db = db();
    ok(
        &db,
        "write",
        json!({"path": "/img.bin", "content": "AAECAwQ=", "encoding": "base64"}),
    );
    let read = ok(&db, "read", json!({"path": "/img.bin"}));
    assert_eq!(read["binary"], true, "{read}");
    assert_eq!(read["content"], "", "{read}");
    let hint = read["hint"].as_str().expect("a hint");
    assert!(
        hint.contains("byte_offset") && hint.contains("GET /agents/{id}/files/img.bin"),
        "{hint}"
    );
    let bytes = ok(
        &db,
        "read",
        json!({"path": "/img.bin", "byte_offset": 0, "encoding": "base64"}),
    );
    assert_eq!(bytes["content"], "AAECAwQ=", "{bytes}");
    ok(&db, "write", json!({"path": "/t.txt", "content": "text\n"}));
    assert!(ok(&db, "read", json!({"path": "/t.txt"}))
        .get("hint")
        .is_none());
}

#[test]
fn a_write_with_if_rev_lands_only_on_the_revision_it_names() {
    let db = db();
    // 0: only while the file does not exist.
    let first = ok(
        &db,
        "write",
        json!({"path": "/a.txt", "content": "one", "if_rev": 0}),
    );
    let rev = first["revision"].as_i64().unwrap();
    assert_eq!(
        fails(
            &db,
            "write",
            r#"{"path":"/a.txt","content":"x","if_rev":0}"#
        ),
        (412, "REVISION_CHANGED".into())
    );
    // Someone else writes: the editor's revision is stale now.
    ok(&db, "write", json!({"path": "/a.txt", "content": "theirs"}));
    let stale = format!(r#"{{"path":"/a.txt","content":"mine","if_rev":{rev}}}"#);
    let error = call(&db, "write", &stale).unwrap_err();
    assert_eq!(error.status(), 412);
    let body = error.body();
    let current = ok(&db, "stat", json!({"path": "/a.txt"}))["rev"].clone();
    assert_eq!(body["error"]["revision"], current);
    assert_eq!(body["error"]["path"], "/a.txt");
    assert_eq!(
        ok(&db, "read", json!({"path": "/a.txt"}))["content"],
        "theirs"
    );
    // At the current revision it lands.
    let current = current.as_i64().unwrap();
    ok(
        &db,
        "write",
        json!({"path": "/a.txt", "content": "mine", "if_rev": current}),
    );
    assert_eq!(
        ok(&db, "read", json!({"path": "/a.txt"}))["content"],
        "mine"
    );
    // A file deleted meanwhile is a change too.
    ok(&db, "rm", json!({"path": "/a.txt"}));
    assert_eq!(
        fails(
            &db,
            "write",
            r#"{"path":"/a.txt","content":"x","if_rev":5}"#
        ),
        (412, "REVISION_CHANGED".into())
    );
}
