//! The HTTP API's request decoding: routing, every file tool, and exec
//! planning, on arbitrary input against a real (rusqlite) workspace.
//!
//! This is the outermost layer an agent's bytes reach. The checks: no
//! panic; every failure is a structured error (a code, a 4xx status, a JSON
//! body naming the same code), never an internal error; a failed call, and
//! any call of a read-only tool, leaves every table of the database exactly
//! as it was (one transaction per operation); the router only hands out
//! agent ids that are valid.

use stead_agent::exec::{self, Run};
use stead_agent::{route::valid_agent_id, tools, ApiError, Route, Tool};
use stead_vfs::{VPath, Vfs, WriteOptions};

use crate::Target;

pub const TARGET: Target = Target {
    name: "api",
    about: "route, tools::call for every tool, exec::plan: no panic, structured 4xx errors, failed or read-only calls change no table",
    run,
    seeds,
    tokens: &[
        "{", "}", "[", "]", ",", ":", "\"", "null", "true", "false", "\"path\":", "\"/\"",
        "\"/a.txt\"", "\"/dir\"", "\"/link\"", "\"..\"", "\"/../x\"", "\"mode\":", "\"777\"",
        "\"recursive\":true", "\"parents\":false", "\"encoding\":\"base64\"", "\"offset\":",
        "\"limit\":", "\"byte_offset\":", "\"cursor\":", "\"edits\":", "\"old\":", "\"new\":",
        "\"replace_all\":true", "\"pattern\":", "\"regex\":true", "\"**\"", "\"[\"",
        "\"(a+)+$\"", "18446744073709551615", "-1", "0", "1e3", "\"\\u0000\"", "%2F", "%",
        "/agents/", "/files/", "GET", "POST", "PUT", "DELETE",
    ],
    bounds: None,
};

/// Byte 0 picks what to call: a tool of [`Tool::ALL`], then `exec::plan`, then
/// `route` (method and path split at the first `\n`). The rest is the body.
pub fn run(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let pick = pick as usize % (Tool::ALL.len() + 2);
    if pick == Tool::ALL.len() {
        plan(body);
    } else if pick == Tool::ALL.len() + 1 {
        route(body);
    } else {
        tool(Tool::ALL[pick], body);
    }
}

fn check_error(error: &ApiError, what: &str) {
    let code = error.code();
    let status = error.status();
    assert!(!code.is_empty(), "{what}: empty code");
    assert!(
        (400..500).contains(&status),
        "{what}: status {status} for {code}: {error}"
    );
    let body = error.body();
    assert_eq!(body["error"]["code"].as_str(), Some(code), "{what}: {body}");
    assert!(body["error"]["message"].is_string(), "{what}: {body}");
}

fn tool(tool: Tool, body: &[u8]) {
    let name = tool.name();
    let db = super::fresh_db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    fixture(&vfs);
    let before = super::dump(&db);
    // As the agent does: the body is parsed once, then the tool decodes it.
    let result = stead_agent::decode::parse(body).and_then(|value| tools::call(&vfs, tool, &value));
    let changed = super::dump(&db) != before;
    match &result {
        Ok(value) => {
            assert!(value.is_object(), "{name}: answer {value}");
            assert!(
                !changed || tool.mutates(),
                "read-only tool {name} changed the database"
            );
        }
        Err(error) => {
            check_error(error, name);
            assert!(
                !changed,
                "failed {name} ({}) changed the database",
                error.code()
            );
        }
    }
}

fn plan(body: &[u8]) {
    let db = super::fresh_db();
    // As dispatch does: the body parsed once, then planned from the value.
    let planned =
        stead_agent::decode::parse(body).and_then(|value| exec::plan(&value, &Vfs::new(&db, 0)));
    match planned.map(|plan| plan.run) {
        Ok(Run::Shell(request)) => {
            let cwd = request.cwd.as_str();
            assert_eq!(VPath::parse(cwd).ok().as_ref(), Some(&request.cwd));
            assert!(!request.command.trim().is_empty());
            assert!(request.limits.max_wall_ms >= 1);
        }
        Ok(Run::Computer(_)) => {}
        Err(error) => check_error(&error, "exec"),
    }
}

fn route(input: &[u8]) {
    let input = super::text(input);
    let (method, path) = input.split_once('\n').unwrap_or(("POST", &input));
    match stead_agent::route(method, path) {
        Ok(Route::Agent { id, .. }) => {
            assert!(valid_agent_id(&id), "routed to invalid agent id {id:?}");
        }
        Ok(_) => {}
        Err(error) => check_error(&error, "route"),
    }
}

/// A small workspace: text, CRLF text, a binary file, nested directories, a
/// link to a file, a dangling link and a link loop.
fn fixture(vfs: &Vfs<'_, stead_sql::SqliteDb>) {
    let files: [(&str, &[u8]); 5] = [
        ("/a.txt", b"hello\nworld\nhello again\n"),
        ("/crlf.txt", b"one\r\ntwo\r\n"),
        ("/bin.dat", b"\x00\x01\xff\xfe"),
        ("/dir/b.txt", b"nested\n"),
        ("/dir/sub/c.md", b"# title\nbody\n"),
    ];
    for (path, content) in files {
        vfs.write(&p(path), content, WriteOptions::default())
            .expect("fixture write");
    }
    for (target, path) in [
        ("/a.txt", "/link"),
        ("/nowhere", "/dangling"),
        ("/loop", "/loop"),
    ] {
        vfs.symlink(target, &p(path)).expect("fixture symlink");
    }
}

fn p(path: &str) -> VPath {
    VPath::parse(path).expect("fixture path")
}

fn seeds() -> Vec<Vec<u8>> {
    let index = |name: &str| {
        Tool::ALL
            .iter()
            .position(|t| t.name() == name)
            .expect("a tool") as u8
    };
    let mut seeds = Vec::new();
    let mut add = |pick: u8, body: &str| {
        let mut seed = vec![pick];
        seed.extend_from_slice(body.as_bytes());
        seeds.push(seed);
    };
    let bodies: &[(&str, &str)] = &[
        (
            "read",
            r#"{"path":"/a.txt","offset":2,"limit":1,"line_numbers":true}"#,
        ),
        (
            "read",
            r#"{"path":"/bin.dat","byte_offset":1,"byte_length":2,"encoding":"base64"}"#,
        ),
        (
            "write",
            r#"{"path":"/new/x.txt","content":"aGk=","encoding":"base64","mode":"600"}"#,
        ),
        ("write", r#"{"path":"/dir","content":"x"}"#),
        (
            "append",
            r#"{"path":"/a.txt","content":"more\n","parents":false}"#,
        ),
        (
            "edit",
            r#"{"path":"/crlf.txt","edits":[{"old":"one\n","new":"uno\n"}],"dry_run":false}"#,
        ),
        (
            "edit",
            r#"{"path":"/a.txt","edits":[{"old":"hello","new":"bye","replace_all":true},{"old":"world","new":"w"}]}"#,
        ),
        ("stat", r#"{"path":"/link","follow":false}"#),
        ("ls", r#"{"path":"/dir","cursor":"b.txt","limit":1}"#),
        ("mkdir", r#"{"path":"/m/n","parents":true,"mode":493}"#),
        ("rm", r#"{"path":"/dir","recursive":true}"#),
        ("rm", r#"{"path":"/missing","force":true}"#),
        ("mv", r#"{"from":"/dir","to":"/dir/sub/x"}"#),
        ("cp", r#"{"from":"/dir","to":"/copy","recursive":true}"#),
        ("symlink", r#"{"target":"../../etc/passwd","path":"/evil"}"#),
        ("readlink", r#"{"path":"/dangling"}"#),
        ("chmod", r#"{"path":"/a.txt","mode":"4755"}"#),
        (
            "glob",
            r#"{"pattern":"**/*.{md,txt}","path":"/","exclude":["sub"],"limit":2}"#,
        ),
        (
            "grep",
            r#"{"pattern":"h(e|a)llo","regex":true,"path":"/","context":1,"output":"content"}"#,
        ),
        (
            "grep",
            r#"{"pattern":"HELLO","ignore_case":true,"include":["*.txt"],"output":"count"}"#,
        ),
        ("changes", r#"{"since":0,"limit":3}"#),
    ];
    for (name, body) in bodies {
        add(index(name), body);
    }
    let plan = Tool::ALL.len() as u8;
    add(
        plan,
        r#"{"command":"echo hi | wc -c","cwd":"/dir","env":{"A":"1"},"stdin":"x","timeout_ms":5}"#,
    );
    add(plan, r#"{"command":"python3 x.py","backend":"auto"}"#);
    add(
        plan,
        r#"{"command":"ls","backend":"computer","timeout_ms":0}"#,
    );
    let route = plan + 1;
    add(route, "POST\n/agents/alice/write");
    add(route, "GET\n/agents/al%69ce/files/dir/b%2Etxt");
    add(route, "PUT\n/agents/a/files/%2e%2e/x");
    add(route, "GET\n/health");
    add(route, "DELETE\n/agents/x/jobs/12");
    add(route, "POST\n/agents/%ZZ/ping");
    seeds
}
