//! End-to-end: every route's happy path over HTTP against the real Worker,
//! big streamed files, edits that keep line endings and modes, and agents
//! kept apart from one another. All tests share one `wrangler dev`; each
//! uses its own agent, named after the test.

mod common;

use std::io::Read;

use base64::Engine;
use common::{
    assert_same_stream, expect_error, expect_made, expect_ok, expect_status, raw_authorized, Agent,
    Noise,
};
use serde_json::{json, Value};

fn names(entries: &Value) -> Vec<&str> {
    entries
        .as_array()
        .expect("array")
        .iter()
        .map(|e| e["name"].as_str().expect("name"))
        .collect()
}

fn paths(matches: &Value) -> Vec<&str> {
    let mut paths: Vec<&str> = matches
        .as_array()
        .expect("array")
        .iter()
        .map(|m| m.as_str().or_else(|| m["path"].as_str()).expect("path"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn create_is_idempotent() {
    let agent = Agent::new("create_is_idempotent");
    agent.write("/kept.txt", "kept");
    let again = agent.client.create(&agent.id);
    expect_status(&again, 200);
    assert_eq!(
        again.json(),
        json!({ "agent": agent.id, "created": false, "revision": 1 })
    );
    assert_eq!(agent.read("/kept.txt"), "kept");
}

#[test]
fn info_reports_usage() {
    let agent = Agent::new("info_reports_usage");
    let empty = agent.info();
    assert_eq!(empty["agent"], agent.id);
    assert_eq!(
        empty["usage"],
        json!({ "revision": 0, "files": 0, "directories": 0, "symlinks": 0, "bytes": 0,
                "stored_bytes": 0, "checkpoint_only_bytes": 0, "checkpoints": 0 })
    );
    agent.write("/d/a.txt", "hello");
    agent.write("/d/b.txt", "hello");
    agent.ok("symlink", json!({ "target": "d/a.txt", "path": "/link" }));
    let info = agent.info();
    let usage = &info["usage"];
    assert_eq!(usage["revision"], 3);
    assert_eq!(usage["files"], 2);
    assert_eq!(usage["directories"], 1);
    assert_eq!(usage["symlinks"], 1);
    assert_eq!(usage["bytes"], 10);
    // Both files hold the same chunk, stored once.
    assert_eq!(usage["stored_bytes"], 5);
    assert!(info["database_bytes"].as_u64().unwrap() > 0, "{info}");
}

#[test]
fn ping_reaches_the_agent() {
    let agent = Agent::new("ping_reaches_the_agent");
    let ping = expect_ok(&agent.send("POST", "/ping", b""));
    assert_eq!(ping, json!({ "agent": agent.id }));
    assert_eq!(agent.revision(), 0);
}

#[test]
fn delete_removes_the_agent_and_its_files() {
    let agent = Agent::new("delete_removes_the_agent");
    agent.write("/a.txt", "gone soon");
    let deleted = expect_ok(&agent.send("DELETE", "", b""));
    assert_eq!(deleted, json!({ "agent": agent.id, "deleted": true }));
    expect_error(&agent.send("GET", "", b""), 404, "AGENT_NOT_FOUND");
    expect_error(
        &agent.call("read", json!({ "path": "/a.txt" })),
        404,
        "AGENT_NOT_FOUND",
    );
    // Created again, it starts empty.
    let again = Agent::create_on(agent.client.clone(), &agent.id);
    expect_error(
        &again.call("read", json!({ "path": "/a.txt" })),
        404,
        "ENOENT",
    );
    assert_eq!(again.info()["usage"]["files"], 0);
}

#[test]
fn write_then_read_lines_and_bytes() {
    let agent = Agent::new("write_then_read");
    let written = agent.write("/notes/a.txt", "one\ntwo\nthree\n");
    assert_eq!(
        written,
        json!({ "path": "/notes/a.txt", "size": 14, "created": true, "revision": 1 })
    );
    let rewritten = agent.write("notes/a.txt", "one\ntwo\nthree\nfour\n");
    assert_eq!(rewritten["created"], false);
    assert_eq!(rewritten["revision"], 2);

    let all = agent.ok("read", json!({ "path": "/notes/a.txt" }));
    assert_eq!(all["content"], "one\ntwo\nthree\nfour\n");
    assert_eq!(all["total_lines"], 4);
    assert_eq!(all["size"], 19);

    let page = agent.ok(
        "read",
        json!({ "path": "/notes/a.txt", "offset": 2, "limit": 2, "line_numbers": true }),
    );
    assert_eq!(page["content"], "     2\ttwo\n     3\tthree\n");
    assert_eq!(page["truncated"], true);
    assert_eq!(page["next_offset"], 4);

    let binary = [0u8, 1, 2, 0xfe, 0xff];
    let encoded = base64::engine::general_purpose::STANDARD.encode(binary);
    agent.ok(
        "write",
        json!({ "path": "/bin.dat", "content": encoded, "encoding": "base64" }),
    );
    let bytes = agent.ok(
        "read",
        json!({ "path": "/bin.dat", "byte_offset": 1, "byte_length": 3 }),
    );
    assert_eq!(bytes["encoding"], "base64");
    assert_eq!(
        bytes["content"],
        base64::engine::general_purpose::STANDARD.encode(&binary[1..4])
    );
    assert_eq!(bytes["eof"], false);
    assert_eq!(bytes["next_byte_offset"], 4);
    assert_eq!(agent.download("/bin.dat"), binary);
}

#[test]
fn append_extends_or_creates() {
    let agent = Agent::new("append_extends_or_creates");
    let created = agent.ok("append", json!({ "path": "/log.txt", "content": "a\n" }));
    assert_eq!(created["created"], true);
    let appended = agent.ok("append", json!({ "path": "/log.txt", "content": "b\n" }));
    assert_eq!(appended["created"], false);
    assert_eq!(appended["size"], 4);
    assert_eq!(agent.read("/log.txt"), "a\nb\n");
}

#[test]
fn edit_replaces_and_dry_run_does_not() {
    let agent = Agent::new("edit_replaces");
    agent.write(
        "/src/main.rs",
        "fn main() {\n    let x = 1;\n    let y = 1;\n}\n",
    );
    let dry = agent.ok(
        "edit",
        json!({ "path": "/src/main.rs", "dry_run": true,
                "edits": [{ "old": "let x = 1", "new": "let x = 2" }] }),
    );
    assert!(dry.get("revision").is_none(), "{dry}");
    assert!(dry["diff"].as_str().unwrap().contains("+    let x = 2;"));
    assert_eq!(agent.revision(), 1);

    let edited = agent.ok(
        "edit",
        json!({ "path": "/src/main.rs", "edits": [
            { "old": "let x = 1", "new": "let x = 2" },
            { "old": "let y = 1", "new": "let y = 3", "replace_all": false },
        ] }),
    );
    assert_eq!(edited["replacements"], 2);
    assert_eq!(edited["revision"], 2);
    assert_eq!(
        agent.read("/src/main.rs"),
        "fn main() {\n    let x = 2;\n    let y = 3;\n}\n"
    );
    let all = agent.ok(
        "edit",
        json!({ "path": "/src/main.rs", "edits": [{ "old": "let", "new": "const", "replace_all": true }] }),
    );
    assert_eq!(all["replacements"], 2);
    assert!(agent.read("/src/main.rs").contains("const y = 3;"));
}

#[test]
fn edit_keeps_crlf_and_mode_and_returns_a_diff() {
    let agent = Agent::new("edit_keeps_crlf_and_mode");
    agent.write("/script.bat", "line one\r\nline two\r\nline three\r\n");
    agent.ok("chmod", json!({ "path": "/script.bat", "mode": "755" }));
    let edited = agent.ok(
        "edit",
        json!({ "path": "/script.bat", "edits": [{ "old": "line two\nline three", "new": "line 2\nline 3" }] }),
    );
    assert_eq!(
        agent.read("/script.bat"),
        "line one\r\nline 2\r\nline 3\r\n"
    );
    assert_eq!(agent.stat("/script.bat")["mode"], "0755");
    assert_eq!(edited["size"], 26);
    let diff = edited["diff"].as_str().unwrap();
    assert!(
        diff.starts_with("--- a/script.bat\n+++ b/script.bat\n@@ "),
        "{diff}"
    );
    assert!(diff.contains("\n line one\r\n"), "{diff}");
    assert!(diff.contains("\n-line two\r\n"), "{diff}");
    assert!(diff.contains("\n+line 2\r\n"), "{diff}");
    assert!(diff.contains("\n+line 3\r\n"), "{diff}");
}

#[test]
fn stat_files_dirs_and_links() {
    let agent = Agent::new("stat_files_dirs_and_links");
    agent.write("/d/f.txt", "12345");
    agent.ok("symlink", json!({ "target": "/d/f.txt", "path": "/l" }));
    let file = agent.stat("/d/f.txt");
    assert_eq!(file["type"], "file");
    assert_eq!(file["size"], 5);
    assert_eq!(file["mode"], "0644");
    assert_eq!(agent.stat("/d")["type"], "dir");
    let followed = agent.stat("/l");
    assert_eq!(followed["type"], "file");
    assert_eq!(followed["real_path"], "/d/f.txt");
    let link = agent.ok("stat", json!({ "path": "/l", "follow": false }));
    assert_eq!(link["type"], "symlink");
    assert_eq!(link["target"], "/d/f.txt");
}

#[test]
fn ls_lists_in_pages() {
    let agent = Agent::new("ls_lists_in_pages");
    for name in ["b.txt", "a.txt", "c.txt"] {
        agent.write(&format!("/d/{name}"), name);
    }
    agent.ok("mkdir", json!({ "path": "/d/sub" }));
    let all = agent.ok("ls", json!({ "path": "/d" }));
    assert_eq!(names(&all["entries"]), ["a.txt", "b.txt", "c.txt", "sub"]);
    assert_eq!(all["entries"][3]["type"], "dir");
    assert_eq!(all["truncated"], false);
    let first = agent.ok("ls", json!({ "path": "/d", "limit": 2 }));
    assert_eq!(names(&first["entries"]), ["a.txt", "b.txt"]);
    assert_eq!(first["truncated"], true);
    let rest = agent.ok(
        "ls",
        json!({ "path": "/d", "cursor": first["next_cursor"] }),
    );
    assert_eq!(names(&rest["entries"]), ["c.txt", "sub"]);
    assert_eq!(names(&agent.ok("ls", json!({}))["entries"]), ["d"]);
}

#[test]
fn mkdir_with_and_without_parents() {
    let agent = Agent::new("mkdir_with_and_without_parents");
    expect_error(
        &agent.call("mkdir", json!({ "path": "/x/y" })),
        404,
        "ENOENT",
    );
    let made = agent.ok("mkdir", json!({ "path": "/x/y", "parents": true }));
    assert_eq!(made, json!({ "path": "/x/y", "revision": 1 }));
    agent.ok("mkdir", json!({ "path": "/x/y", "parents": true }));
    expect_error(&agent.call("mkdir", json!({ "path": "/x" })), 409, "EEXIST");
    agent.ok("mkdir", json!({ "path": "/private", "mode": "700" }));
    assert_eq!(agent.stat("/private")["mode"], "0700");
    assert_eq!(agent.stat("/x/y")["type"], "dir");
}

#[test]
fn rm_files_and_trees() {
    let agent = Agent::new("rm_files_and_trees");
    agent.write("/f.txt", "f");
    agent.write("/tree/a/b.txt", "b");
    let removed = agent.ok("rm", json!({ "path": "/f.txt" }));
    assert_eq!(removed["removed"], true);
    expect_error(
        &agent.call("stat", json!({ "path": "/f.txt" })),
        404,
        "ENOENT",
    );
    expect_error(
        &agent.call("rm", json!({ "path": "/tree" })),
        409,
        "ENOTEMPTY",
    );
    agent.ok("rm", json!({ "path": "/tree", "recursive": true }));
    let forced = agent.ok("rm", json!({ "path": "/tree", "force": true }));
    assert_eq!(forced["removed"], false);
    assert!(agent.tree().is_empty(), "{:?}", agent.tree());
    // What is still stored, only the automatic checkpoints hold.
    let usage = &agent.info()["usage"];
    assert_eq!(usage["bytes"], 0, "{usage}");
    assert_eq!(
        usage["stored_bytes"], usage["checkpoint_only_bytes"],
        "{usage}"
    );
}

#[test]
fn mv_moves_files_and_subtrees() {
    let agent = Agent::new("mv_moves_files_and_subtrees");
    agent.write("/a.txt", "a");
    agent.write("/dir/inner/x.txt", "x");
    agent.ok("mkdir", json!({ "path": "/dest" }));
    let moved = agent.ok("mv", json!({ "from": "/a.txt", "to": "/dest/b.txt" }));
    assert_eq!(moved["to"], "/dest/b.txt");
    agent.ok("mv", json!({ "from": "/dir", "to": "/dest/dir" }));
    assert_eq!(
        agent.tree(),
        [
            "/dest",
            "/dest/b.txt",
            "/dest/dir",
            "/dest/dir/inner",
            "/dest/dir/inner/x.txt"
        ]
    );
    assert_eq!(agent.read("/dest/dir/inner/x.txt"), "x");
}

#[test]
fn cp_copies_files_and_trees() {
    let agent = Agent::new("cp_copies_files_and_trees");
    agent.write("/src/a.txt", "a");
    agent.write("/src/sub/b.txt", "b");
    agent.ok("cp", json!({ "from": "/src/a.txt", "to": "/a-copy.txt" }));
    expect_error(
        &agent.call("cp", json!({ "from": "/src", "to": "/copy" })),
        409,
        "EISDIR",
    );
    agent.ok(
        "cp",
        json!({ "from": "/src", "to": "/copy", "recursive": true }),
    );
    agent.write("/copy/sub/b.txt", "changed");
    assert_eq!(agent.read("/src/sub/b.txt"), "b");
    assert_eq!(agent.read("/copy/sub/b.txt"), "changed");
    assert_eq!(agent.read("/a-copy.txt"), "a");
    assert_eq!(agent.read("/copy/a.txt"), "a");
}

#[test]
fn symlink_readlink_and_write_through() {
    let agent = Agent::new("symlink_readlink");
    agent.write("/real.txt", "real");
    let made = agent.ok("symlink", json!({ "target": "real.txt", "path": "/link" }));
    assert_eq!(made["target"], "real.txt");
    let link = agent.ok("readlink", json!({ "path": "/link" }));
    assert_eq!(link, json!({ "path": "/link", "target": "real.txt" }));
    assert_eq!(agent.read("/link"), "real");
    let written = agent.write("/link", "through");
    assert_eq!(written["path"], "/real.txt");
    assert_eq!(agent.read("/real.txt"), "through");
    expect_error(
        &agent.call("readlink", json!({ "path": "/real.txt" })),
        400,
        "EINVAL",
    );
}

#[test]
fn chmod_sets_modes() {
    let agent = Agent::new("chmod_sets_modes");
    agent.write("/run.sh", "#!/bin/sh\n");
    let set = agent.ok("chmod", json!({ "path": "/run.sh", "mode": "755" }));
    assert_eq!(set["mode"], "0755");
    assert_eq!(agent.stat("/run.sh")["mode"], "0755");
    agent.ok("chmod", json!({ "path": "/run.sh", "mode": 0o600 }));
    assert_eq!(agent.stat("/run.sh")["mode"], "0600");
}

#[test]
fn glob_finds_paths() {
    let agent = Agent::new("glob_finds_paths");
    agent.write("/src/main.rs", "");
    agent.write("/src/lib/util.rs", "");
    agent.write("/target/gen.rs", "");
    agent.write("/README.md", "");
    let rust = agent.ok("glob", json!({ "pattern": "**/*.rs" }));
    assert_eq!(
        paths(&rust["matches"]),
        ["/src/lib/util.rs", "/src/main.rs", "/target/gen.rs"]
    );
    let filtered = agent.ok(
        "glob",
        json!({ "pattern": "**/*.rs", "exclude": ["target"] }),
    );
    assert_eq!(
        paths(&filtered["matches"]),
        ["/src/lib/util.rs", "/src/main.rs"]
    );
    let below = agent.ok("glob", json!({ "pattern": "*.rs", "path": "/src" }));
    assert_eq!(paths(&below["matches"]), ["/src/main.rs"]);
}

#[test]
fn grep_searches_contents() {
    let agent = Agent::new("grep_searches_contents");
    agent.write(
        "/src/main.rs",
        "use std::io;\nfn main() {\n    println!(\"Hello\");\n}\n",
    );
    agent.write("/src/lib.rs", "pub fn hello() {}\n");
    agent.write("/notes.md", "hello there\n");
    let content = agent.ok("grep", json!({ "pattern": "fn main" }));
    assert_eq!(
        content["matches"],
        json!([{ "path": "/src/main.rs", "line": 2, "text": "fn main() {" }])
    );
    let files = agent.ok(
        "grep",
        json!({ "pattern": "hello", "ignore_case": true, "output": "files", "include": "*.rs" }),
    );
    assert_eq!(paths(&files["files"]), ["/src/lib.rs", "/src/main.rs"]);
    let counts = agent.ok(
        "grep",
        json!({ "pattern": "^(use|fn) ", "regex": true, "output": "count" }),
    );
    assert_eq!(
        counts["counts"],
        json!([{ "path": "/src/main.rs", "count": 2 }])
    );
    let context = agent.ok(
        "grep",
        json!({ "pattern": "println", "path": "/src", "context": 1 }),
    );
    assert_eq!(context["matches"][0]["before"], json!(["fn main() {"]));
    assert_eq!(context["matches"][0]["after"], json!(["}"]));
}

#[test]
fn changes_lists_what_happened() {
    let agent = Agent::new("changes_lists_what_happened");
    agent.write("/a.txt", "a");
    agent.write("/a.txt", "b");
    agent.ok("rm", json!({ "path": "/a.txt" }));
    let changes = agent.ok("changes", json!({}));
    assert_eq!(changes["revision"], 3);
    assert_eq!(
        changes["changes"],
        json!([
            { "revision": 1, "path": "/a.txt", "kind": "created" },
            { "revision": 2, "path": "/a.txt", "kind": "modified" },
            { "revision": 3, "path": "/a.txt", "kind": "deleted" },
        ])
    );
    let since = agent.ok("changes", json!({ "since": 2 }));
    assert_eq!(since["changes"].as_array().unwrap().len(), 1);
    let none = agent.ok("changes", json!({ "since": 3 }));
    assert_eq!(none["changes"], json!([]));
}

#[test]
fn exec_runs_a_command_line_over_the_workspace() {
    let agent = Agent::new("exec_runs_a_command_line");
    agent.write("/in.txt", "b\na\n");
    let command = "sort in.txt > out.txt && cat out.txt; echo \"$GREETING\" >&2";
    let ran = agent.ok(
        "exec",
        json!({ "command": command, "env": { "GREETING": "hi" } }),
    );
    assert_eq!(ran["stdout"], "a\nb\n", "{ran}");
    assert_eq!(ran["stderr"], "hi\n", "{ran}");
    assert_eq!(ran["exit_code"], 0, "{ran}");
    assert_eq!(ran["revision"], agent.revision());
    assert_eq!(agent.read("/out.txt"), "a\nb\n");
    let failed = agent.ok("exec", json!({ "command": "cat missing.txt" }));
    assert_ne!(failed["exit_code"], 0, "{failed}");
}

#[test]
fn upload_and_download_raw_bytes() {
    let agent = Agent::new("upload_and_download_raw_bytes");
    // Three chunks and a bit, so chunk boundaries are crossed.
    let len = 3 * 512 * 1024 + 12_345;
    let reply = agent.upload("/bin/tool", "?mode=755", Noise::new(7, len as u64));
    // A PUT that creates answers 201 with where the new file is.
    expect_status(&reply, 201);
    let location = format!("/agents/{}/files/bin/tool", agent.id);
    assert_eq!(reply.header("location"), Some(location.as_str()));
    let uploaded = reply.json();
    assert_eq!(
        uploaded,
        json!({ "path": "/bin/tool", "size": len, "created": true, "revision": 1 })
    );
    let stat = agent.stat("/bin/tool");
    assert_eq!(stat["mode"], "0755");
    assert_eq!(stat["size"], len);
    assert_eq!(agent.download("/bin/tool"), Noise::bytes(7, len));

    // Replacing keeps the mode; an empty body makes an empty file.
    let replaced = expect_ok(&agent.upload("/bin/tool", "", &b"tiny"[..]));
    assert_eq!(replaced["created"], false);
    assert_eq!(agent.download("/bin/tool"), b"tiny");
    assert_eq!(agent.stat("/bin/tool")["mode"], "0755");
    expect_made(&agent.upload("/empty", "", &b""[..]));
    assert_eq!(agent.download("/empty"), b"");

    // Names with spaces and non-ASCII travel percent-encoded.
    expect_made(&agent.upload("/dir%20x/na%C3%AFve.txt", "?parents=true", &b"hi"[..]));
    assert_eq!(agent.read("/dir x/na\u{ef}ve.txt"), "hi");
    assert_eq!(agent.download("/dir%20x/na%C3%AFve.txt"), b"hi");
}

#[test]
fn download_describes_the_file_in_headers() {
    let agent = Agent::new("download_headers");
    expect_made(&agent.upload("/run.sh", "?mode=0750", &b"#!/bin/sh\n"[..]));
    let revision = agent.revision();
    let reply = raw_authorized("GET", &agent.url("/files/run.sh"), b"");
    expect_status(&reply, 200);
    assert_eq!(reply.body, b"#!/bin/sh\n");
    assert_eq!(reply.header("x-file-size"), Some("10"));
    assert_eq!(reply.header("x-file-mode"), Some("0750"));
    assert_eq!(
        reply.header("x-revision"),
        Some(revision.to_string().as_str())
    );
    assert_eq!(
        reply.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(reply.header("content-length"), Some("10"));
    let etag = reply.header("etag").expect("an ETag").to_string();
    assert!(
        reply
            .header("last-modified")
            .is_some_and(|d| d.ends_with(" GMT")),
        "{:?}",
        reply.headers
    );
    // HEAD: the same status and headers, no body.
    let head = raw_authorized("HEAD", &agent.url("/files/run.sh"), b"");
    expect_status(&head, 200);
    assert_eq!(head.body, b"", "a HEAD has no body");
    for name in [
        "content-length",
        "etag",
        "last-modified",
        "x-file-size",
        "x-revision",
    ] {
        assert_eq!(head.header(name), reply.header(name), "{name}");
    }
    // The ETag changes when the file does.
    agent.write("/run.sh", "#!/bin/sh\necho\n");
    let changed = raw_authorized("HEAD", &agent.url("/files/run.sh"), b"");
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
    assert_eq!(changed.header("content-length"), Some("15"));
    let missing = raw_authorized("HEAD", &agent.url("/files/nope"), b"");
    expect_status(&missing, 404);
    assert_eq!(missing.body, b"");
    // Every GET route takes a HEAD: the agent's info too.
    let info = raw_authorized("HEAD", &agent.url(""), b"");
    expect_status(&info, 200);
    assert_eq!(info.body, b"");
    assert_eq!(info.header("content-type"), Some("application/json"));
}

/// `Range` (RFC 9110, 14): one range of a file that spans several chunks
/// comes back as a `206` with exactly those bytes, a range past the end is
/// a `416` that gives the size, and what is not one valid byte range (or
/// an `If-Range` that is not the file's tag) gets the whole file. `curl`
/// resumes a cut download with it.
#[test]
fn range_requests_send_the_bytes_asked_for() {
    use common::{base, bearer, raw};
    let agent = Agent::new("download_ranges");
    // Three chunks and a bit (a chunk is 512 KiB).
    let len = 3 * 512 * 1024 + 1000;
    let data = Noise::bytes(11, len);
    expect_made(&agent.upload("/big.bin", "", std::io::Cursor::new(data.clone())));
    let url = agent.url("/files/big.bin");
    let auth = bearer();
    let get = |headers: &[(&str, &str)]| {
        let mut all = vec![("Authorization", auth.as_str())];
        all.extend_from_slice(headers);
        raw("GET", &url, &all, b"")
    };
    let whole = get(&[]);
    expect_status(&whole, 200);
    assert_eq!(whole.header("accept-ranges"), Some("bytes"));
    let etag = whole.header("etag").expect("an ETag").to_string();
    let cases = [
        // Across the first chunk boundary, inside the second chunk, the
        // last bytes, a suffix, an open end, and one past the end cut to
        // the file.
        ("bytes=524000-525000", 524_000, 525_000),
        ("bytes=600000-600009", 600_000, 600_009),
        ("bytes=0-0", 0, 0),
        ("bytes=-1000", len - 1000, len - 1),
        (&format!("bytes={}-", len - 3) as &str, len - 3, len - 1),
        ("bytes=1048570-99999999", 1_048_570, len - 1),
    ]
    .map(|(range, start, end)| (range.to_string(), start, end));
    for (range, start, end) in &cases {
        let part = get(&[("Range", range)]);
        expect_status(&part, 206);
        assert_eq!(part.body, data[*start..=*end], "{range}");
        assert_eq!(
            part.header("content-range"),
            Some(format!("bytes {start}-{end}/{len}").as_str()),
            "{range}"
        );
        let length = (end - start + 1).to_string();
        assert_eq!(part.header("content-length"), Some(length.as_str()));
        assert_eq!(part.header("etag"), Some(etag.as_str()));
    }
    // Past the end: 416, the size in Content-Range, a structured error.
    let past = get(&[("Range", &format!("bytes={len}-"))]);
    let error = expect_error(&past, 416, "RANGE_NOT_SATISFIABLE");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains(&len.to_string()));
    assert_eq!(
        past.header("content-range"),
        Some(format!("bytes */{len}").as_str())
    );
    // Not one valid byte range, or a stale If-Range: the whole file.
    for headers in [
        vec![("Range", "bytes=0-1,5-6")],
        vec![("Range", "bytes=9-2")],
        vec![("Range", "lines=1-2")],
        vec![("Range", "bytes=2-3"), ("If-Range", "\"0-0\"")],
    ] {
        let reply = get(&headers);
        expect_status(&reply, 200);
        assert_eq!(reply.body.len(), len, "{headers:?}");
        assert_eq!(reply.header("content-range"), None);
    }
    let current = get(&[("Range", "bytes=2-3"), ("If-Range", &etag)]);
    expect_status(&current, 206);
    assert_eq!(current.body, data[2..=3]);
    // A HEAD ignores Range (GET is the only method range handling is
    // defined for).
    let head = raw(
        "HEAD",
        &url,
        &[("Authorization", &auth), ("Range", "bytes=0-9")],
        b"",
    );
    expect_status(&head, 200);
    assert_eq!(
        head.header("content-length"),
        Some(len.to_string().as_str())
    );

    // curl resumes a cut download: it asks for the rest with Range.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big.bin");
    std::fs::write(&out, &data[..700_000]).unwrap();
    let resumed = std::process::Command::new("curl")
        .args(["-sS", "--fail", "-C", "-", "-o"])
        .arg(&out)
        .args(["-H", &format!("Authorization: {auth}")])
        .arg(format!("{}{url}", base()))
        .output()
        .expect("curl");
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(
        std::fs::read(&out).unwrap() == data,
        "the resumed file is the file"
    );
}

/// A directory is not a download: the refusal points to `ls`. A binary
/// file read by line says how to get its bytes.
#[test]
fn a_directory_download_and_a_binary_read_say_where_to_go() {
    let agent = Agent::new("download_directory");
    agent.write("/src/main.rs", "fn main() {}\n");
    let error = expect_error(
        &raw_authorized("GET", &agent.url("/files/src"), b""),
        409,
        "EISDIR",
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("/ls") && message.contains("/src"),
        "{message}"
    );
    expect_made(&agent.upload("/blob.bin", "", &b"\x00\x01binary\x00"[..]));
    let read = agent.ok("read", json!({ "path": "/blob.bin" }));
    assert_eq!(
        (read["binary"].as_bool(), read["content"].as_str()),
        (Some(true), Some(""))
    );
    let hint = read["hint"].as_str().expect("a hint");
    assert!(
        hint.contains("byte_offset") && hint.contains("/files/blob.bin"),
        "{hint}"
    );
}

#[test]
fn concurrent_requests_to_one_agent_serialise() {
    const THREADS: usize = 6;
    const WRITES: usize = 8;
    const UPLOAD: usize = 1_300_000;
    let agent = Agent::new("concurrent_requests");
    let revisions: Vec<i64> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let agent = &agent;
                scope.spawn(move || {
                    let mut revisions = Vec::new();
                    for w in 0..WRITES {
                        let path = format!("/t{t}/f{w}.txt");
                        let written = agent.write(&path, &format!("{t}-{w}"));
                        revisions.push(written["revision"].as_i64().unwrap());
                    }
                    // A streamed upload too, whose chunks arrive over many awaits.
                    let body = Noise::new(t as u64, UPLOAD as u64);
                    let uploaded = expect_made(&agent.upload(&format!("/up{t}.bin"), "", body));
                    revisions.push(uploaded["revision"].as_i64().unwrap());
                    revisions
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let mut sorted = revisions.clone();
    sorted.sort();
    let total = (THREADS * (WRITES + 1)) as i64;
    assert_eq!(
        sorted,
        (1..=total).collect::<Vec<_>>(),
        "each change gets its own revision"
    );
    let usage = agent.info()["usage"].clone();
    assert_eq!(usage["revision"], total);
    assert_eq!(usage["files"], total);
    for t in 0..THREADS {
        assert_eq!(agent.read(&format!("/t{t}/f3.txt")), format!("{t}-3"));
        assert_eq!(
            agent.download(&format!("/up{t}.bin")),
            Noise::bytes(t as u64, UPLOAD)
        );
    }
}

#[test]
fn hundred_mebibytes_round_trip() {
    const LEN: u64 = 100 << 20;
    const SEED: u64 = 0x5eed;
    let agent = Agent::new("hundred_mebibytes_round_trip");
    let uploaded = expect_made(&agent.upload("/big.bin", "", Noise::new(SEED, LEN)));
    assert_eq!(uploaded["size"], LEN);
    assert_eq!(uploaded["created"], true);
    let usage = agent.info()["usage"].clone();
    assert_eq!(usage["files"], 1);
    assert_eq!(usage["bytes"], LEN);
    assert_eq!(usage["stored_bytes"], LEN);

    let (status, body) = agent.client.download(&agent.id, "/big.bin");
    assert_eq!(status, 200);
    assert_eq!(assert_same_stream(body, Noise::new(SEED, LEN)), LEN);
}

/// A download that outlives its file may fail, but must never deliver
/// another file's bytes as if they were its own.
#[test]
fn download_outliving_its_file_never_serves_other_bytes() {
    const LEN: u64 = 64 << 20;
    let agent = Agent::new("download_outliving_its_file");
    expect_made(&agent.upload("/a.bin", "", Noise::new(1, LEN)));
    let (status, mut body) = agent.client.download(&agent.id, "/a.bin");
    assert_eq!(status, 200);
    let mut start = vec![0u8; 1 << 20];
    body.read_exact(&mut start).expect("start of the download");
    // Let the pipeline fill up, so the server waits on the reader.
    std::thread::sleep(std::time::Duration::from_secs(3));
    agent.ok("rm", json!({ "path": "/a.bin" }));
    expect_made(&agent.upload("/b.bin", "", Noise::new(2, LEN)));
    let mut rest = Vec::new();
    if body.read_to_end(&mut rest).is_err() {
        return; // Cut short: acceptable.
    }
    let expected = Noise::bytes(1, LEN as usize);
    let got = [start, rest].concat();
    let differs = got.iter().zip(&expected).position(|(a, b)| a != b);
    assert_eq!(differs, None, "the download changed content midway");
    assert_eq!(
        got.len(),
        expected.len(),
        "the download ended early with success"
    );
}

#[test]
fn agents_are_isolated() {
    let a = Agent::new("agents_are_isolated-a");
    let b = Agent::new("agents_are_isolated-b");
    a.write("/same.txt", "from a");
    b.write("/same.txt", "from b");
    a.write("/only-a/secret.txt", "alpha secret");
    b.write("/only-b/secret.txt", "beta secret");

    assert_eq!(a.read("/same.txt"), "from a");
    assert_eq!(b.read("/same.txt"), "from b");
    assert_eq!(a.tree(), ["/only-a", "/only-a/secret.txt", "/same.txt"]);
    assert_eq!(b.tree(), ["/only-b", "/only-b/secret.txt", "/same.txt"]);
    assert_eq!(
        names(&a.ok("ls", json!({}))["entries"]),
        ["only-a", "same.txt"]
    );
    let grep = a.ok("grep", json!({ "pattern": "secret", "output": "files" }));
    assert_eq!(paths(&grep["files"]), ["/only-a/secret.txt"]);
    let grep_b = b.ok("grep", json!({ "pattern": "from", "output": "files" }));
    assert_eq!(paths(&grep_b["files"]), ["/same.txt"]);
    expect_error(
        &a.call("read", json!({ "path": "/only-b/secret.txt" })),
        404,
        "ENOENT",
    );
    assert_eq!(a.info()["usage"]["files"], 2);
    // Deleting one agent leaves the other alone.
    expect_ok(&b.send("DELETE", "", b""));
    assert_eq!(a.read("/same.txt"), "from a");
}

/// Every route but `PUT /agents/{id}`, as (method, path after the agent, body).
fn agent_routes() -> Vec<(&'static str, String, Value)> {
    let mut routes: Vec<(&str, String, Value)> = vec![
        ("GET", String::new(), Value::Null),
        ("DELETE", String::new(), Value::Null),
        ("POST", "/ping".into(), Value::Null),
        ("GET", "/files/a.txt".into(), Value::Null),
        ("PUT", "/files/a.txt".into(), json!("content")),
    ];
    let bodies = [
        ("read", json!({ "path": "/a" })),
        ("write", json!({ "path": "/a", "content": "x" })),
        ("append", json!({ "path": "/a", "content": "x" })),
        (
            "edit",
            json!({ "path": "/a", "edits": [{ "old": "x", "new": "y" }] }),
        ),
        ("stat", json!({ "path": "/" })),
        ("ls", json!({})),
        ("mkdir", json!({ "path": "/d" })),
        ("rm", json!({ "path": "/a", "force": true })),
        ("mv", json!({ "from": "/a", "to": "/b" })),
        ("cp", json!({ "from": "/a", "to": "/b" })),
        ("symlink", json!({ "target": "/a", "path": "/l" })),
        ("readlink", json!({ "path": "/l" })),
        ("chmod", json!({ "path": "/", "mode": "755" })),
        ("glob", json!({ "pattern": "**" })),
        ("grep", json!({ "pattern": "x" })),
        ("changes", json!({})),
        ("exec", json!({ "command": "true" })),
    ];
    assert_eq!(bodies.len(), 17, "one body per tool, and exec");
    for (tool, body) in bodies {
        routes.push(("POST", format!("/{tool}"), body));
    }
    routes
}

#[test]
fn unknown_agent_is_not_found_everywhere_and_left_absent() {
    let ghost = Agent::existing("never-created-ghost");
    for (method, rest, body) in agent_routes() {
        let body = match &body {
            Value::Null => Vec::new(),
            Value::String(text) => text.as_bytes().to_vec(),
            json => json.to_string().into_bytes(),
        };
        let reply = ghost.send(method, &rest, &body);
        let error = expect_error(&reply, 404, "AGENT_NOT_FOUND");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("never-created-ghost"),
            "{method} {rest}: {error}"
        );
        expect_error(&ghost.send("GET", "", b""), 404, "AGENT_NOT_FOUND");
    }
    // Nothing was left behind: creating it now really creates it, empty.
    let created = Agent::create_on(ghost.client.clone(), &ghost.id);
    assert!(created.tree().is_empty());
}

/// Local development answers with where a request's time and statements
/// went: the object's stages (`desc` = SQL statements) and the Worker's
/// front and hop, in the order a request passes them.
#[test]
fn local_development_answers_with_a_server_timing_breakdown() {
    let agent = Agent::new("local_development_answers_with_a_server_timing_breakdown");
    agent.write("/d/f.txt", "hello");
    let stat = agent.call("stat", json!({ "path": "/d/f.txt" }));
    expect_ok(&stat);
    let timing: Vec<&str> = stat
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("server-timing"))
        .flat_map(|(_, value)| value.split(','))
        .map(str::trim)
        .collect();
    let names: Vec<&str> = timing
        .iter()
        .map(|entry| entry.split(';').next().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "admission",
            "operation",
            "audit",
            "notify",
            "live",
            "glue",
            "agent",
            "front",
            "hop"
        ],
        "{timing:?}"
    );
    // A stat is its two lookups, and nothing after them.
    assert!(
        timing[1].ends_with("desc=\"2 sql\""),
        "operation: {}",
        timing[1]
    );
    for stage in &timing[2..5] {
        assert!(stage.ends_with("desc=\"0 sql\""), "{stage}");
    }
    // The bare round trip to the object: answered there, before any agent
    // code, and without a credential (local development only).
    let bare = common::raw("POST", &format!("/_bench/bare/{}", agent.id), &[], b"");
    expect_status(&bare, 200);
    assert!(bare.body.is_empty(), "{:?}", bare.body);
}
