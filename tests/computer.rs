//! End-to-end: the computer backend. The real Worker under `wrangler dev`
//! drives the real container-side program through the sync protocol: in
//! real containers through the `Computer` object's Container binding
//! whenever a Docker engine runs (the harness says which mode ran), else as
//! a local process. Files written through the API are there for real
//! binaries (with their modification times), what they write comes back,
//! a warm container receives only what changed, conflicts keep both
//! versions, a command over a quota answers with its output and what was
//! refused without poisoning the next, a `cwd` under a system name is
//! refused before anything runs, a computer that dies
//! mid-command changes nothing, one stopped mid-command loses nothing, the
//! container gets its secret (and no command can read it), a wrong secret
//! is refused, one agent's commands cannot reach another's copy, and a
//! directory a process swaps for a symlink never leads the program outside
//! the workspace.
//!
//! Two tests need real containers (outbound network policy, idle release):
//! in the local-process mode they say so on standard error and check
//! nothing else.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::{expect_error, expect_ok, expect_status, with_runtime, Agent};
use serde_json::{json, Value};
use stead_harness::{temp_state, ComputerMode, Runtime};

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

    let out = agent.on_computer(
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
    let out = agent.on_computer("echo oops >&2; exit 3");
    assert_eq!(out["exit_code"], 3);
    assert_eq!(out["stderr"], "oops\n");
}

/// The image's Python has pip and venv: a project's venv installs a wheel
/// (made by the command, offline, as the computer's network is off by
/// default) and runs it; `pip install` as the user works too. What they
/// install stays out of the workspace: `.venv/` is kept on the computer by
/// the sync's defaults, and pip's cache and user installs go to the
/// computer's own user directory (home stays `/`, as in the light shell).
#[test]
fn pip_and_venv_install_into_the_project_and_the_computers_user_directory() {
    if !with_runtime(|runtime| needs_containers(runtime, "pip_and_venv")) {
        return;
    }
    let agent = Agent::new("computer-python");
    agent.write(
        "/proj/make_wheel.py",
        &common::wheel_maker("greet", "1.0", "def hi():\n    return 'hi from greet'\n"),
    );
    let before = agent.info()["usage"]["stored_bytes"].as_u64();
    let out = agent.on_computer("set -e; cd /proj; python3 make_wheel.py; python3 -m venv .venv; \
         .venv/bin/pip install -q --no-index greet-1.0-py3-none-any.whl; \
         .venv/bin/python -c 'import greet; print(greet.hi())'; \
         pip install -q --no-index greet-1.0-py3-none-any.whl; \
         cd /; python3 -c 'import greet, sys; print(greet.__file__.startswith(sys.argv[1]))' \"$PYTHONUSERBASE\"; \
         echo ~",
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["stdout"], "hi from greet\nTrue\n/\n", "{out}");
    let listed = agent.ok(
        "exec",
        json!({ "command": "ls -A / /proj", "backend": "shell" }),
    );
    let names: Vec<&str> = listed["stdout"].as_str().unwrap().lines().collect();
    for kept_out in [".venv", ".cache", ".local", ".gitconfig"] {
        assert!(!names.contains(&kept_out), "{kept_out} in {names:?}");
    }
    // What came back is the wheel, not the installed trees.
    let after = agent.info()["usage"]["stored_bytes"].as_u64();
    assert!(
        after.unwrap() - before.unwrap() < 1 << 20,
        "{before:?} -> {after:?}"
    );
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
    let cold = agent.on_computer("true");
    let (files, bytes) = sent(&cold);
    assert!(files >= 21, "{cold}");
    assert_eq!(bytes, 20 * 100_000, "{cold}");

    let warm = agent.on_computer("true");
    assert_eq!(sent(&warm), (0, 0), "nothing changed: {warm}");

    agent.write("/tree/f07.txt", "changed\n");
    let warm = agent.on_computer("cat tree/f07.txt");
    assert_eq!(warm["stdout"], "changed\n");
    assert_eq!(sent(&warm), (1, 8), "{warm}");
    assert_eq!(received(&warm), (0, 0), "{warm}");

    // What a command changed is already on the computer afterwards.
    let out = agent.on_computer("echo made-there > tree/new.txt");
    assert_eq!(received(&out).0, 1, "{out}");
    let next = agent.on_computer("cat tree/new.txt");
    assert_eq!(next["stdout"], "made-there\n");
    assert_eq!(sent(&next).1, 0, "no content goes back: {next}");
}

#[test]
fn container_side_deletions_modes_links_and_ignored_trees() {
    let agent = Agent::new("computer-kinds");
    agent.write("/gone.txt", "x");
    agent.write("/run.sh", "echo ran\n");
    let out = agent.on_computer(
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
    let out = agent.on_computer("cat node_modules/pkg/index.js");
    assert_eq!(out["stdout"], "big\n");
    // /.steadignore extends the defaults...
    agent.write("/.steadignore", "*.log\n");
    let out = agent.on_computer(
        "echo no > build.log; mkdir -p app/__pycache__ && echo pyc > app/__pycache__/m.pyc",
    );
    assert_eq!(out["exit_code"], 0, "{out}");
    for ignored in ["/build.log", "/app/__pycache__", "/node_modules"] {
        agent.rejects(404, "ENOENT", || {
            agent.call("stat", json!({ "path": ignored }))
        });
    }
    // ...and `!` re-includes a default: the tree comes back.
    agent.write("/.steadignore", "*.log\n!node_modules/\n");
    let out = agent.on_computer("echo kept > node_modules/pkg/b.js");
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(agent.read("/node_modules/pkg/b.js"), "kept\n");
    assert_eq!(agent.read("/node_modules/pkg/index.js"), "big\n");
}

#[test]
fn a_command_over_a_quota_answers_with_its_output_and_does_not_poison_the_next() {
    let agent = Agent::new("computer-quota");
    agent.write("/keep.txt", "kept\n");
    let quotas = json!({ "quotas": { "max_nodes": 6, "max_file_bytes": 1000 } });
    expect_ok(&agent.send("PUT", "/settings", quotas.to_string().as_bytes()));
    // The root and /keep.txt: 2 of 6; /out and three files fit.
    let out = agent.on_computer(
        "mkdir out && for i in 1 2 3 4 5 6 7 8; do echo $i > out/f$i; done; \
         head -c 5000 /dev/zero > keep.txt; echo made; exit 3",
    );
    assert_eq!(
        (out["status"].clone(), out["exit_code"].clone()),
        (json!("exited"), json!(3)),
        "{out}"
    );
    assert_eq!(out["stdout"], "made\n");
    let rejected: Vec<(&str, &str)> = out["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), r["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rejected,
        [
            ("/keep.txt", "EFBIG"),
            ("/out/f4", "ENOSPC"),
            ("/out/f5", "ENOSPC"),
            ("/out/f6", "ENOSPC"),
            ("/out/f7", "ENOSPC"),
            ("/out/f8", "ENOSPC"),
        ],
        "{out}"
    );
    assert!(
        out["message"].as_str().unwrap().contains("max_nodes = 6"),
        "{out}"
    );
    assert_eq!(agent.read("/out/f3"), "3\n");
    assert_eq!(agent.read("/keep.txt"), "kept\n");
    // The next command sees the workspace's state at the refused paths,
    // and its own result comes back.
    let out = agent.on_computer("ls out; cat keep.txt; rm out/f1; echo later > out/later");
    assert_eq!(out["stdout"], "f1\nf2\nf3\nkept\n", "{out}");
    assert!(out.get("rejected").is_none(), "{out}");
    assert_eq!(agent.read("/out/later"), "later\n");
}

#[test]
fn a_cwd_under_a_system_name_is_refused_and_mtimes_travel() {
    let agent = Agent::new("computer-cwd");
    agent.write("/etc/app/conf", "x\n");
    for (cwd, backend) in [
        ("/tmp", "computer"),
        ("/etc/app", "computer"),
        ("/tmp", "auto"),
    ] {
        agent.rejects(400, "INVALID_REQUEST", || {
            agent.call(
                "exec",
                json!({ "command": "python3 -V", "cwd": cwd, "backend": backend }),
            )
        });
    }
    agent.write("/src/main.c", "int main(void) { return 0; }\n");
    let mtime = agent.stat("/src/main.c")["mtime"].as_i64().unwrap();
    let out = agent.on_computer("date -r src/main.c +%s%3N");
    assert_eq!(out["stdout"], format!("{mtime}\n"), "{out}");
}

#[test]
fn a_conflict_keeps_both_versions() {
    let agent = Agent::new("computer-conflict");
    agent.write("/notes.txt", "base\n");
    agent.on_computer("true");
    let command = {
        let agent = agent.clone();
        std::thread::spawn(move || {
            agent.on_computer("sleep 2; echo from-container > notes.txt; echo new > other.txt")
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
    let out = agent.on_computer("cat notes.txt");
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
            agent.on_computer("echo partial > partial.txt; rm keep.txt; sleep 30")
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
    let out = agent.on_computer("cat keep.txt; ls /*.txt");
    assert_eq!(out["stdout"], "kept\n/keep.txt\n", "{out}");
    assert_eq!(sent(&out), (1, 5), "the full manifest: {out}");
}

#[test]
fn a_computer_stopped_mid_command_loses_nothing() {
    let state = temp_state();
    let runtime = Runtime::start(state.path());
    let agent = Agent::create_on(runtime.client(), "computer-stopped");
    agent.write("/keep.txt", "kept\n");
    let machine = runtime.machine(&agent.id);
    let command = {
        let agent = agent.clone();
        std::thread::spawn(move || {
            agent.on_computer(
                "echo started; echo partial > partial.txt; rm keep.txt; sleep 30; echo never",
            )
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    // As the platform stops a container: SIGTERM.
    machine.ask_to_stop(Duration::from_secs(30));
    let out = command.join().unwrap();
    // The command was stopped, but its output and its changes came back.
    assert_eq!(out["status"], "stopped", "{out}");
    assert_eq!(out["signal"], 15, "{out}");
    assert_eq!(out["stdout"], "started\n", "{out}");
    assert_eq!(
        out["changed"],
        json!(["/keep.txt", "/partial.txt"]),
        "{out}"
    );
    assert_eq!(agent.read("/partial.txt"), "partial\n");
    // At once, while the stopped program may still be draining, the next
    // command runs on a fresh computer holding the workspace.
    let out = agent.on_computer("ls /*.txt");
    assert_eq!(out["stdout"], "/partial.txt\n", "{out}");
    assert_eq!(sent(&out), (1, 8), "the full manifest: {out}");
}

/// The secret the agent's computer was started with.
fn secret_of(environment: &[(String, String)]) -> String {
    let secrets: Vec<&str> = environment
        .iter()
        .filter(|(k, _)| k == "STEAD_COMPUTER_SECRET")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(secrets.len(), 1, "{environment:?}");
    secrets[0].to_string()
}

#[test]
fn the_computer_gets_its_secret_and_commands_get_only_their_env() {
    let agent = Agent::new("computer-env");
    let (secret, right, wrong) = with_runtime(|runtime| {
        let machine = runtime.machine(&agent.id);
        let environment = machine.environment();
        let secret = secret_of(&environment);
        // A fresh secret per start in both modes: from the Computer object
        // for a container, from whoever starts the local program (never
        // one written in the repository, which any command could use).
        assert_eq!(secret.len(), 64, "{secret}");
        assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()), "{secret}");
        let right = machine.status_with_secret("/v1/status", &secret);
        let wrong = ["not-the-secret", "dev-computer-secret"]
            .map(|guess| machine.status_with_secret("/v1/status", guess));
        (secret, right, wrong)
    });
    // The program read exactly the secret it was started with.
    assert_eq!((right, wrong), (200, [401, 401]));

    let out = agent.ok(
        "exec",
        json!({
            "command": "echo \"$GREETING|$HOME|$WORKSPACE\"; id -u; env | sort | cut -d= -f1 | tr '\\n' ' '; \
                        cat /proc/1/environ /proc/$PPID/environ /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
            "backend": "computer",
            "env": { "GREETING": "hello from the request" },
        }),
    );
    let stdout = out["stdout"].as_str().unwrap();
    let mut lines = stdout.lines();
    // Home and $WORKSPACE are the workspace's root, `/`.
    assert_eq!(lines.next(), Some("hello from the request|/|/"), "{stdout}");
    assert_ne!(lines.next(), Some("0"), "commands never run as root");
    let names = lines.next().unwrap();
    assert!(
        names.contains("GREETING ") && names.contains("WORKSPACE "),
        "{names}"
    );
    assert!(!names.contains("STEAD_"), "{names}");
    assert!(
        !stdout.contains(&secret) && !out["stderr"].as_str().unwrap().contains(&secret),
        "a command read the secret: {out}"
    );
}

#[test]
fn one_agents_commands_cannot_reach_another_agents_copy() {
    let victim = Agent::new("computer-victim");
    let intruder = Agent::new("computer-intruder");
    victim.write("/f.txt", "the victim's\n");
    victim.on_computer("true");
    let out = intruder.on_computer(
        "echo x > ../computer-victim/f.txt; echo y > ../computer-victim/new.txt; \
         echo z > ../escape; mkdir -p ../computer-victim2; ls ..; echo done",
    );
    assert!(out["stdout"].as_str().unwrap().ends_with("done\n"), "{out}");
    // `..` of `/`, the intruder's workspace, is `/` itself: what it wrote
    // there is its own.
    assert_eq!(
        out["changed"],
        json!(["/computer-victim2", "/escape"]),
        "{out}"
    );
    // The victim's copy on its computer is untouched: its next command
    // brings nothing back and sees its own file.
    let out = victim.on_computer("cat f.txt; ls /*.txt");
    assert_eq!(out["stdout"], "the victim's\n/f.txt\n", "{out}");
    assert_eq!(out["changed"], json!([]), "{out}");
    assert_eq!(victim.tree(), vec!["/f.txt"]);
    with_runtime(|runtime| {
        if let Some(process) = runtime.computer_process() {
            // Nothing landed beside the workspaces on the host.
            let victim_copy = process.workspace(&victim.id);
            let beside = victim_copy.parent().unwrap();
            assert!(!beside.join("escape").exists());
            assert!(!beside.join("computer-victim2").exists());
            assert!(!victim_copy.join("new.txt").exists());
        }
    });
}

/// A name the host resolves, for the outbound network checks.
fn internet_host() -> String {
    std::env::var("STEAD_TEST_INTERNET_HOST").unwrap_or_else(|_| "deb.debian.org".into())
}

/// Says on standard error that `test` needs real containers (uncaptured,
/// so the run shows it); whether they run.
fn needs_containers(runtime: &Runtime, test: &str) -> bool {
    let real = runtime.mode() == ComputerMode::Container;
    if !real {
        let _ = writeln!(
            std::io::stderr(),
            "{test}: checks nothing in the local-process mode (it needs real containers)"
        );
    }
    real
}

#[test]
fn internet_off_blocks_dns_and_tcp_and_on_allows_them_after_the_next_start() {
    let state = temp_state();
    let runtime = Runtime::start(state.path());
    if !needs_containers(&runtime, "internet policy") {
        return;
    }
    let host = internet_host();
    let address = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), 80))
        .ok()
        .and_then(|mut addresses| addresses.find(|a| a.is_ipv4()))
        .unwrap_or_else(|| panic!("the host cannot resolve {host} (set STEAD_TEST_INTERNET_HOST)"));
    let probe = format!(
        "getent hosts {host} >/dev/null && echo dns-open || echo dns-blocked; \
         timeout 10 bash -c 'exec 3<>/dev/tcp/{ip}/80 && printf \"HEAD / HTTP/1.0\\r\\nHost: {host}\\r\\n\\r\\n\" >&3 && head -c 5 <&3' 2>/dev/null \
         | grep -q HTTP && echo tcp-open || echo tcp-blocked",
        ip = address.ip()
    );
    let agent = Agent::create_on(runtime.client(), "computer-internet");
    let out = agent.on_computer(&probe);
    assert_eq!(
        out["stdout"], "dns-blocked\ntcp-blocked\n",
        "internet off: {out}"
    );

    let settings = agent.send(
        "PUT",
        "/settings",
        json!({ "computer": { "internet": true } })
            .to_string()
            .as_bytes(),
    );
    assert_eq!(expect_ok(&settings)["computer"]["internet"], true);
    // The setting applies when the container next starts.
    let out = agent.on_computer(&probe);
    assert_eq!(
        out["stdout"], "dns-blocked\ntcp-blocked\n",
        "same container: {out}"
    );
    runtime.machine(&agent.id).kill();
    let out = agent.on_computer(&probe);
    assert_eq!(out["stdout"], "dns-open\ntcp-open\n", "internet on: {out}");
}

#[test]
fn an_idle_computer_is_released_and_the_next_command_gets_a_fresh_one() {
    let state = temp_state();
    // A short idle timeout from the workspace's settings, still longer than
    // the ~10 s after which an idle Durable Object, and its container with
    // it, would go.
    let idle = Duration::from_secs(14);
    let runtime = Runtime::start(state.path());
    if !needs_containers(&runtime, "idle release") {
        return;
    }
    let agent = Agent::create_on(runtime.client(), "computer-idle");
    let settings = json!({ "computer": { "idle_ms": idle.as_millis() as u64 } });
    expect_ok(&agent.send("PUT", "/settings", settings.to_string().as_bytes()));
    let computer = expect_ok(&agent.send("GET", "/computer", b""));
    assert_eq!(computer["computer"]["state"], "stopped", "{computer}");
    agent.write("/a.txt", "a\n");
    agent.on_computer("true");
    let machine = runtime.machine(&agent.id);
    assert!(machine.is_running());

    // Past the time an idle object would have been evicted, the computer
    // is still there and warm: the alarm keeps its owner alive.
    std::thread::sleep(Duration::from_secs(12));
    assert!(machine.is_running(), "released before its idle deadline");
    let warm = agent.on_computer("cat a.txt");
    assert_eq!(warm["stdout"], "a\n");
    assert_eq!(sent(&warm), (0, 0), "the same, warm container: {warm}");
    let last_used = Instant::now();
    let running = expect_ok(&agent.send("GET", "/computer", b""))["computer"].clone();
    assert_eq!(running["state"], "running", "{running}");
    assert_eq!(running["idle_ms"], idle.as_millis() as u64, "{running}");
    assert!(running["idle_deadline_ms"].as_i64().is_some(), "{running}");

    // Idle past the deadline (plus a heartbeat): released.
    let deadline = last_used + idle + Duration::from_secs(15);
    while machine.is_running() {
        assert!(
            Instant::now() < deadline,
            "not released after {idle:?} idle"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        last_used.elapsed() >= idle,
        "released {:?} after the last request, before its idle timeout",
        last_used.elapsed()
    );
    // The next command starts a fresh computer and pushes it everything.
    let out = agent.on_computer("cat a.txt");
    assert_eq!(out["stdout"], "a\n");
    assert_eq!(sent(&out), (1, 2), "the full manifest: {out}");
}

#[test]
fn the_computer_can_be_released_at_once() {
    with_runtime(|runtime| {
        let agent = Agent::create_on(runtime.client(), "computer-stop");
        agent.write("/a.txt", "a\n");
        agent.on_computer("true");
        // Found while it runs (finding it runs a command on it).
        let machine = runtime.machine(&agent.id);
        let stopped = expect_ok(&agent.send("POST", "/computer/stop", b""));
        if runtime.mode() == ComputerMode::LocalProcess {
            // One local program serves every agent; it is never stopped
            // from here (stead_agent::computer::owner), and the answer says so.
            assert_eq!(stopped["computer"]["provision"], "local-process");
            assert_eq!(stopped["computer"]["state"], "running", "{stopped}");
        } else {
            assert_eq!(stopped["computer"]["state"], "stopped", "{stopped}");
            // The platform removes the container soon after the stop.
            let deadline = Instant::now() + Duration::from_secs(30);
            while machine.is_running() {
                assert!(Instant::now() < deadline, "still running after the stop");
                std::thread::sleep(Duration::from_millis(250));
            }
            // The next command starts a fresh computer with everything.
            let out = agent.on_computer("cat a.txt");
            assert_eq!(out["stdout"], "a\n");
            assert_eq!(sent(&out), (1, 2), "the full manifest: {out}");
        }
        // Stopping needs the computer's scope.
        let reader = agent.client.with_token(None);
        let refused = reader.send("POST", &agent.url("/computer/stop"), b"");
        expect_error(&refused, 401, "UNAUTHORIZED");
    });
}

/// A process the agent started swaps workspace directory `/d` with `/link`,
/// a symlink to a directory outside the workspace, over and over, while the
/// agent writes and `chmod 6755`s files under `/d` (live sync pushes them)
/// and commands run (each scans). In a container the outside directory is
/// the container's own `/usr/bin`; as a local process, a directory of the
/// host no command can see, which the program (root on the host) would
/// reach through the link. Nothing there changes, and nothing of it comes
/// back into the workspace.
#[test]
fn a_directory_swapped_for_a_symlink_never_leads_the_computer_outside() {
    let agent = Agent::new("computer-swap");
    let mode = with_runtime(|runtime| runtime.mode());
    let host_outside = tempfile::tempdir().unwrap();
    let (target, watched) = match mode {
        ComputerMode::Container => ("/usr/bin".to_string(), None),
        ComputerMode::LocalProcess => {
            let dir = host_outside.path();
            std::fs::write(dir.join("python3"), "#!/bin/sh\n").unwrap();
            std::fs::write(dir.join("shadow"), "root-only\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            let program = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(dir.join("python3"), program).unwrap();
            let secret = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(dir.join("shadow"), secret).unwrap();
            let state = |dir: &std::path::Path| {
                use std::os::unix::fs::MetadataExt;
                let mut names: Vec<(String, u32, u64, Vec<u8>)> = std::fs::read_dir(dir)
                    .unwrap()
                    .map(|e| {
                        let e = e.unwrap();
                        let meta = std::fs::symlink_metadata(e.path()).unwrap();
                        let content = std::fs::read(e.path()).unwrap();
                        let name = e.file_name().to_string_lossy().into_owned();
                        (name, meta.mode(), meta.ino(), content)
                    })
                    .collect();
                names.sort();
                names
            };
            let before = state(dir);
            (dir.to_string_lossy().into_owned(), Some((before, state)))
        }
    };
    agent.write("/d/python3", "v0\n");
    agent.on_computer("test -d d");
    // `/link` points outside; `renameat2(RENAME_EXCHANGE)` swaps it with
    // `/d` atomically, so at any moment `/d` is one or the other. A push
    // that replaced the link (a symlink stands where a directory must be)
    // gets a new one.
    let swapper = format!(
        "exec python3 -c '\nimport ctypes, os, sys\n\
         libc = ctypes.CDLL(None)\n\
         n = 0\n\
         while True:\n    \
             n += 1\n    \
             try:\n        \
                 if not os.path.lexists(\"d\"):\n            os.mkdir(\"d\")\n        \
                 if not os.path.islink(\"d\") and not os.path.islink(\"link\"):\n            \
                     if os.path.lexists(\"link\"):\n                \
                         os.rename(\"link\", \"old-%d\" % n)\n            \
                     os.symlink(sys.argv[1], \"link\")\n    \
             except OSError:\n        pass\n    \
             libc.renameat2(-100, b\"d\", -100, b\"link\", 2)\n' {target}"
    );
    let reply = agent.send(
        "POST",
        "/processes",
        json!({ "command": swapper, "cwd": "/" })
            .to_string()
            .as_bytes(),
    );
    expect_status(&reply, 201);
    let process = reply.json()["process"]["id"].as_str().unwrap().to_string();

    let started = Instant::now();
    let mut round = 0;
    while started.elapsed() < Duration::from_secs(10) {
        round += 1;
        agent.write("/d/python3", &format!("round {round}\n"));
        let _ = agent.call("chmod", json!({ "path": "/d/python3", "mode": "6755" }));
        agent.write(&format!("/d/new-{round}"), "new\n");
        let _ = agent.call(
            "chmod",
            json!({ "path": format!("/d/new-{round}"), "mode": "6755" }),
        );
        // A command: a push of what is not there yet, and a scan.
        let _ = agent.call(
            "exec",
            json!({ "command": "true", "backend": "computer", "timeout_ms": 60_000 }),
        );
    }
    expect_ok(&agent.send("DELETE", &format!("/processes/{process}"), b""));

    // Nothing outside came back into the workspace (a listing of
    // `/usr/bin` or the host directory under `/d`).
    for path in agent.tree() {
        let name = path.rsplit('/').next().unwrap();
        assert!(
            !["bash", "ls", "env", "shadow"].contains(&name),
            "an outside file came back: {path}"
        );
    }
    match watched {
        Some((before, state)) => assert_eq!(state(host_outside.path()), before),
        None => {
            let out = agent.on_computer(
                "stat -L -c '%a %U' /usr/bin/python3 /usr/bin/env; \
                 ls -a /usr/bin | grep -c -e stead- -e '^new-' -e conflict-local",
            );
            assert_eq!(out["stdout"], "755 root\n755 root\n0\n", "{out}");
        }
    }
    assert!(round > 3, "only {round} rounds");
}
