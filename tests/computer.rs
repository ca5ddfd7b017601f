//! End-to-end: the computer backend. The real Worker under `wrangler dev`
//! drives the real container-side program (`stead-computer`, run as a local
//! process because no Docker engine runs here) through the sync protocol:
//! files written through the API are there for real binaries, what they
//! write comes back, a warm container receives only what changed, conflicts
//! keep both versions, and a computer that dies mid-command changes nothing.

mod common;

use std::time::Duration;

use common::{expect_error, Agent};
use serde_json::{json, Value};
use stead_harness::{temp_state, Runtime};

fn on_computer(agent: &Agent, command: &str) -> Value {
    let out = agent.ok(
        "exec",
        json!({ "command": command, "backend": "computer", "timeout_ms": 60_000 }),
    );
    assert_eq!(out["backend"], "computer", "{out}");
    out
}

fn sent(out: &Value) -> (u64, u64) {
    let sent = &out["sync"]["sent"];
    (
        sent["files"].as_u64().unwrap(),
        sent["bytes"].as_u64().unwrap(),
    )
}

fn received(out: &Value) -> (u64, u64) {
    let received = &out["sync"]["received"];
    (
        received["files"].as_u64().unwrap(),
        received["bytes"].as_u64().unwrap(),
    )
}

#[test]
fn python_cc_and_git_work_on_workspace_files() {
    let agent = Agent::new("computer-tools");
    agent.write(
        "/src/hello.c",
        "#include <stdio.h>\nint main(void) { puts(\"hello from C\"); return 0; }\n",
    );
    agent.write(
        "/tools/sum.py",
        "import sys\nprint(sum(int(x) for x in open(sys.argv[1])))\n",
    );
    agent.write("/data/numbers.txt", "1\n2\n3\n4\n");

    let out = on_computer(
        &agent,
        "python3 tools/sum.py data/numbers.txt > data/sum.txt && \
         cc -o hello src/hello.c && ./hello > hello.txt && \
         git init -q repo && cd repo && echo tracked > f.txt && git add f.txt && \
         git -c user.name=t -c user.email=t@e commit -qm first && git log --format=%s",
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["status"], "exited");
    assert_eq!(out["stdout"], "first\n");
    assert_eq!(agent.read("/data/sum.txt"), "10\n");
    assert_eq!(agent.read("/hello.txt"), "hello from C\n");
    assert_eq!(agent.read("/repo/f.txt"), "tracked\n");
    assert_eq!(agent.stat("/hello")["mode"], "0755");
    assert!(agent.stat("/repo/.git/HEAD")["size"].as_u64().unwrap() > 0);
    // The workspace took the command's changes in one revision.
    assert_eq!(out["revision"], agent.revision());
    let (files, bytes) = received(&out);
    assert!(files >= 5 && bytes > 0, "{out}");

    // A failing command reports its exit code; stderr comes back.
    let out = on_computer(&agent, "echo oops >&2; exit 3");
    assert_eq!(out["exit_code"], 3);
    assert_eq!(out["stderr"], "oops\n");
}

#[test]
fn auto_runs_in_the_light_shell_unless_a_command_needs_linux() {
    let agent = Agent::new("computer-auto");
    agent.write("/n.txt", "a\nb\n");
    let out = agent.ok("exec", json!({ "command": "wc -l < n.txt" }));
    assert_eq!(out["backend"], "shell");
    assert_eq!(out["stdout"], "2\n");
    let out = agent.ok(
        "exec",
        json!({ "command": "python3 -c 'print(open(\"n.txt\").read().count(\"\\n\"))'" }),
    );
    assert_eq!(out["backend"], "computer", "{out}");
    assert_eq!(out["stdout"], "2\n");
    expect_error(
        &agent.call("exec", json!({ "command": "true", "backend": "vm" })),
        400,
        "INVALID_REQUEST",
    );
}

#[test]
fn a_warm_computer_receives_only_what_changed() {
    let agent = Agent::new("computer-warm");
    let file = |i: usize| format!("{i:04}-").repeat(20_000); // 100 KB each
    for i in 0..20 {
        agent.write(&format!("/tree/f{i:02}.txt"), &file(i));
    }
    let cold = on_computer(&agent, "true");
    let (files, bytes) = sent(&cold);
    assert!(files >= 21, "{cold}");
    assert_eq!(bytes, 20 * 100_000, "{cold}");

    let warm = on_computer(&agent, "true");
    assert_eq!(sent(&warm), (0, 0), "nothing changed: {warm}");

    agent.write("/tree/f07.txt", "changed\n");
    let warm = on_computer(&agent, "cat tree/f07.txt");
    assert_eq!(warm["stdout"], "changed\n");
    assert_eq!(sent(&warm), (1, 8), "{warm}");
    assert_eq!(received(&warm), (0, 0), "{warm}");

    // What a command changed is already on the computer afterwards.
    let out = on_computer(&agent, "echo made-there > tree/new.txt");
    assert_eq!(received(&out).0, 1, "{out}");
    let next = on_computer(&agent, "cat tree/new.txt");
    assert_eq!(next["stdout"], "made-there\n");
    assert_eq!(sent(&next).1, 0, "no content goes back: {next}");
}

#[test]
fn container_side_deletions_modes_links_and_ignored_trees() {
    let agent = Agent::new("computer-kinds");
    agent.write("/gone.txt", "x");
    agent.write("/run.sh", "echo ran\n");
    let out = on_computer(
        &agent,
        "rm gone.txt && chmod 755 run.sh && ln -s run.sh link && mkdir -p empty/dir && \
         mkdir -p node_modules/pkg && echo big > node_modules/pkg/index.js",
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    agent.rejects(404, "ENOENT", || {
        agent.call("stat", json!({ "path": "/gone.txt" }))
    });
    assert_eq!(agent.stat("/run.sh")["mode"], "0755");
    assert_eq!(
        agent.ok("readlink", json!({ "path": "/link" }))["target"],
        "run.sh"
    );
    assert_eq!(agent.stat("/empty/dir")["type"], "dir");
    // node_modules/ stays container-side by default...
    agent.rejects(404, "ENOENT", || {
        agent.call("stat", json!({ "path": "/node_modules" }))
    });
    // ...but is still there for the next command.
    let out = on_computer(&agent, "cat node_modules/pkg/index.js");
    assert_eq!(out["stdout"], "big\n");
    // /.steadignore replaces the defaults.
    agent.write("/.steadignore", "*.log\n");
    let out = on_computer(
        &agent,
        "echo kept > node_modules/pkg/b.js; echo no > build.log",
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(agent.read("/node_modules/pkg/b.js"), "kept\n");
    agent.rejects(404, "ENOENT", || {
        agent.call("stat", json!({ "path": "/build.log" }))
    });
}

#[test]
fn a_conflict_keeps_both_versions() {
    let agent = Agent::new("computer-conflict");
    agent.write("/notes.txt", "base\n");
    on_computer(&agent, "true");
    let command = {
        let agent = agent.clone();
        std::thread::spawn(move || {
            on_computer(
                &agent,
                "sleep 2; echo from-container > notes.txt; echo new > other.txt",
            )
        })
    };
    std::thread::sleep(Duration::from_millis(800));
    agent.write("/notes.txt", "from-agent\n");
    let out = command.join().unwrap();
    let conflicts = out["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{out}");
    assert_eq!(conflicts[0]["path"], "/notes.txt");
    let copy = conflicts[0]["container_copy"].as_str().unwrap();
    assert!(copy.starts_with("/notes.txt.conflict-"), "{copy}");
    assert_eq!(agent.read("/notes.txt"), "from-agent\n");
    assert_eq!(agent.read(copy), "from-container\n");
    assert_eq!(agent.read("/other.txt"), "new\n");
    // The next command sees the workspace's version again.
    let out = on_computer(&agent, "cat notes.txt");
    assert_eq!(out["stdout"], "from-agent\n");
}

#[test]
fn a_computer_killed_mid_command_changes_nothing() {
    let state = temp_state();
    let runtime = Runtime::start(state.path());
    let agent = Agent::create_on(runtime.client(), "computer-killed");
    agent.write("/keep.txt", "kept\n");
    let machine = runtime.machine(&agent.id);
    let before = agent.snapshot();
    let revision = agent.revision();
    let command = {
        let agent = agent.clone();
        std::thread::spawn(move || {
            on_computer(&agent, "echo partial > partial.txt; rm keep.txt; sleep 30")
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    machine.kill();
    let out = command.join().unwrap();
    assert_eq!(out["status"], "lost", "{out}");
    assert!(out["exit_code"].is_null());
    assert_eq!(agent.revision(), revision);
    assert_eq!(agent.snapshot(), before);
    // The next command gets a fresh computer with the whole workspace.
    let out = on_computer(&agent, "cat keep.txt; ls");
    assert_eq!(out["stdout"], "kept\nkeep.txt\n", "{out}");
}
