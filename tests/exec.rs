//! End-to-end: the light shell over HTTP. Commands edit the same workspace
//! the file tools see, their writes survive a restart, and every limit ends
//! a runaway script with its name while the agent stays healthy.

mod common;

use common::{expect_error, expect_made, expect_ok, raw, Agent};
use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stead_harness::{temp_state, Runtime};

fn exec(agent: &Agent, command: &str) -> Value {
    agent.ok("exec", json!({ "command": command }))
}

#[test]
fn pipeline_edits_files_seen_by_the_file_api_and_survives_restart() {
    let state = temp_state();
    let first = Runtime::start(state.path());
    let agent = Agent::create_on(first.client(), "shell-durable");
    agent.write("/src/app.conf", "mode=debug\nport=8080\nmode=debug\n");
    agent.write("/src/other.conf", "mode=debug\n");

    let out = exec(
        &agent,
        "cd /src && sed -i 's/mode=debug/mode=release/' *.conf && grep -c release app.conf other.conf | sort",
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["stdout"], "app.conf:2\nother.conf:1\n");
    assert_eq!(out["backend"], "shell");
    // The file API sees the shell's edit at once...
    assert_eq!(
        agent.read("/src/app.conf"),
        "mode=release\nport=8080\nmode=release\n"
    );
    // ...and the shell sees the file API's writes.
    agent.write("/src/new.txt", "one\ntwo\nthree\n");
    let out = exec(&agent, "wc -l < /src/new.txt; cat /src/*.txt | tr a-z A-Z");
    assert_eq!(out["stdout"], "3\nONE\nTWO\nTHREE\n");
    let out = exec(
        &agent,
        "mkdir -p /out && for i in 1 2 3; do echo \"n=$i\" > /out/f$i.txt; done",
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    first.stop();

    let second = Runtime::start(state.path());
    let agent = Agent {
        client: second.client(),
        ..agent
    };
    assert_eq!(
        agent.read("/src/app.conf"),
        "mode=release\nport=8080\nmode=release\n"
    );
    assert_eq!(agent.read("/out/f2.txt"), "n=2\n");
    assert_eq!(exec(&agent, "cat /out/f*.txt | wc -l")["stdout"], "3\n");
}

#[test]
fn each_exec_starts_with_fresh_state_but_the_same_files() {
    let agent = Agent::new("shell-fresh");
    let out = exec(
        &agent,
        "X=1; f() { echo in-f; }; echo kept > /state.txt; echo $X",
    );
    assert_eq!(out["stdout"], "1\n");
    let out = exec(
        &agent,
        "echo \"X=[$X]\"; type f >/dev/null 2>&1 || echo no-f; cat /state.txt",
    );
    assert_eq!(out["stdout"], "X=[]\nno-f\nkept\n");
}

#[test]
fn exec_options_and_unknown_commands() {
    let agent = Agent::new("shell-options");
    agent.ok("mkdir", json!({ "path": "/work" }));
    let out = agent.ok(
        "exec",
        json!({ "command": "pwd; echo \"$GREETING\"; cat", "cwd": "/work",
                "env": { "GREETING": "hi" }, "stdin": "from stdin\n" }),
    );
    assert_eq!(out["stdout"], "/work\nhi\nfrom stdin\n");
    let out = agent.ok(
        "exec",
        json!({ "command": "cargo build", "backend": "shell" }),
    );
    assert_eq!(out["exit_code"], 127);
    let stderr = out["stderr"].as_str().unwrap();
    assert!(stderr.contains("cargo"), "{stderr}");
    assert!(stderr.contains("computer"), "{stderr}");
    // Bad requests are refused before anything runs.
    expect_error(
        &agent.call("exec", json!({ "command": "" })),
        400,
        "INVALID_REQUEST",
    );
    expect_error(
        &agent.call("exec", json!({ "command": "true", "cwd": "/missing" })),
        404,
        "ENOENT",
    );
    expect_error(
        &agent.call("exec", json!({ "cmd": "true" })),
        400,
        "INVALID_REQUEST",
    );
}

/// Runs `command`, expects it to be stopped by `limit`, then checks the
/// agent still answers.
fn assert_limit(agent: &Agent, command: &str, limit: &str) {
    // The most wall time the shell allows, so that a loaded machine does
    // not change which limit ends the script.
    let out = agent.ok("exec", json!({ "command": command, "timeout_ms": 30_000 }));
    assert_eq!(out["limit"], limit, "{command}: {out}");
    assert_eq!(out["exit_code"], 124, "{command}: {out}");
    let stderr = out["stderr"].as_str().unwrap();
    assert!(stderr.contains(limit), "{command}: stderr {stderr:?}");
    assert_eq!(exec(agent, "echo alive")["stdout"], "alive\n");
}

#[test]
fn runaway_scripts_end_with_a_named_limit() {
    let agent = Agent::new("shell-limits");
    assert_limit(&agent, "while true; do :; done", "max_loop_iterations");
    assert_limit(
        &agent,
        "while :; do :; :; :; :; :; :; :; :; :; :; :; done",
        "max_commands",
    );
    assert_limit(&agent, "f() { f; }; f", "max_call_depth");
    assert_limit(&agent, "yes", "max_output_bytes");
    assert_limit(
        &agent,
        "s=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; \
         s=$s$s$s$s$s$s$s$s$s$s; s=$s$s$s$s$s$s$s$s$s$s; s=$s$s$s$s$s$s$s$s$s$s; \
         while :; do echo \"$s\" >> /big.txt; done",
        "max_bytes_written",
    );
    let out = agent.ok(
        "exec",
        json!({ "command": "while :; do :; done", "timeout_ms": 50 }),
    );
    assert!(
        ["max_wall_ms", "max_commands"].contains(&out["limit"].as_str().unwrap_or("")),
        "{out}"
    );
    expect_ok(&agent.send("GET", "", b""));
}

#[test]
fn cpu_budget_ends_work_over_big_data() {
    let agent = Agent::new("shell-cpu");
    // 16 MiB, read 100 times: past the 1e9-unit CPU budget.
    expect_made(&agent.upload("/big.bin", "", std::io::repeat(b'x').take(16 << 20)));
    assert_limit(
        &agent,
        "for i in $(seq 100); do cat /big.bin > /dev/null; done",
        "max_cpu_units",
    );
}

/// Issue 21: a runaway awk (a doubling string) held the isolate for
/// minutes, and `a{1000}{1000}` through the `grep` file tool left the
/// runtime answering nothing, not even `/health`. Both now end at once
/// with the bound named, and the runtime answers right after.
#[test]
fn runaway_awk_and_a_regex_bomb_end_with_the_bound_named() {
    let agent = Agent::new("shell-runaway");
    let started = Instant::now();
    assert_limit(
        &agent,
        "awk 'BEGIN { s = \"x\"; while (1) s = s s }'",
        "max_memory_bytes",
    );
    assert_limit(
        &agent,
        "awk 'BEGIN { printf \"%s\", sprintf(\"%*d\", 1e9, 1) }'",
        "max_memory_bytes",
    );
    expect_made(&agent.upload("/big.txt", "", std::io::repeat(b'a').take(2 << 20)));
    let reply = agent.call(
        "grep",
        json!({ "pattern": "a{1000}{1000}", "regex": true, "output": "count" }),
    );
    let error = expect_error(&reply, 400, "EINVAL");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("regular expression too large (compiled size over 2 MiB)"),
        "{error}"
    );
    let out = exec(&agent, "grep -cE 'a{1000}{1000}' /big.txt");
    assert_eq!(out["exit_code"], 2, "{out}");
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .contains("compiled size over 2 MiB"),
        "{out}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let after = Instant::now();
    expect_ok(&raw("GET", "/health", &[], b""));
    assert_eq!(exec(&agent, "echo alive")["stdout"], "alive\n");
    assert!(
        after.elapsed() < Duration::from_secs(5),
        "{:?}",
        after.elapsed()
    );
}
