//! End-to-end: the computer's durable environment. A venv with a wheel the
//! test builds (installed with `pip --no-index`, no index reached) and a
//! `node_modules` tree are saved outside the workspace (the workspace's
//! stored bytes do not grow by them), shown in `GET /computer`, over the
//! size limit refused with a clear error while the computer keeps working,
//! and dropped. In real containers the computer is then released and a
//! fresh one finds them back before its first command, without
//! re-installing; the local-process mode never releases its one program,
//! so there the save and the answers are what is checked. The setup
//! script `/.stead/setup.sh` builds the environment once, again when a
//! lock file it names changes, and a failing one leaves its log while
//! commands run on. An idle release saves it first (real containers).

mod common;

use common::{expect_error, expect_ok, with_runtime, Agent};
use serde_json::{json, Value};
use stead_harness::ComputerMode;

/// Builds `demo-1.0-py3-none-any.whl` (a module `demo` with `X = 42`),
/// makes a venv and installs the wheel into it without any index, and
/// writes a package into `node_modules`.
fn install() -> String {
    let wheel = common::wheel_maker("demo", "1.0", "X = 42\n");
    format!(
        "set -e\n\
         cd /tmp\n\
         python3 - <<'PY'\n{wheel}PY\n\
         cd /\n\
         python3 -m venv .venv\n\
         .venv/bin/pip install --no-index --quiet /tmp/demo-1.0-py3-none-any.whl\n\
         mkdir -p node_modules/left-pad\n\
         echo 'module.exports = \"padded\"' > node_modules/left-pad/index.js\n\
         .venv/bin/python -c 'import demo; print(\"installed\", demo.X)'\n"
    )
}

#[test]
fn the_environment_is_kept_outside_the_workspace_and_comes_back() {
    with_runtime(|runtime| {
        let agent = Agent::create_on(runtime.client(), "environment");
        agent.write("/app.py", "import demo\nprint(demo.X)\n");
        agent.on_computer("true");
        let stored = || agent.info()["usage"]["stored_bytes"].as_u64().unwrap();
        let before = stored();
        let out = agent.on_computer(&install());
        assert_eq!(out["exit_code"], 0, "{out}");
        assert_eq!(out["stdout"], "installed 42\n", "{out}");

        // Over its limit: a clear error, nothing kept, the computer works.
        expect_ok(&agent.send(
            "PUT",
            "/settings",
            br#"{"computer":{"environment_max_bytes":1000}}"#,
        ));
        let refused = agent.send("POST", "/computer/environment", b"");
        expect_error(&refused, 413, "ENVIRONMENT_TOO_LARGE");
        let shown = expect_ok(&agent.send("GET", "/computer", b""));
        assert_eq!(shown["environment"]["state"], "failed", "{shown}");
        assert_eq!(agent.on_computer("echo still")["stdout"], "still\n");
        expect_ok(&agent.send("PUT", "/settings", br#"{"computer":{}}"#));

        let saved = match runtime.mode() {
            ComputerMode::Container => {
                expect_ok(&agent.send("POST", "/computer/stop", b""));
                expect_ok(&agent.send("GET", "/computer", b""))["environment"].clone()
            }
            ComputerMode::LocalProcess => {
                expect_ok(&agent.send("POST", "/computer/environment", b""))["environment"].clone()
            }
        };
        assert_eq!(saved["state"], "ready", "{saved}");
        assert!(saved["files"].as_u64().unwrap() > 100, "a venv: {saved}");
        assert!(saved["bytes"].as_u64().unwrap() > 1_000_000, "{saved}");
        assert!(
            saved["stored_bytes"].as_u64().unwrap() > 1_000_000,
            "{saved}"
        );
        assert!(saved["built_from"]["instance"].is_string(), "{saved}");
        // The venv is not workspace content.
        let grown = stored() - before;
        assert!(grown < 64 * 1024, "the workspace grew by {grown} bytes");
        assert!(!agent.tree().iter().any(|p| p.contains(".venv")));

        if runtime.mode() == ComputerMode::Container {
            // A fresh computer: restored before the first command, which
            // uses the venv without installing anything.
            let out =
                agent.on_computer(".venv/bin/python app.py && cat node_modules/left-pad/index.js");
            assert_eq!(out["exit_code"], 0, "{out}");
            assert_eq!(out["stdout"], "42\nmodule.exports = \"padded\"\n", "{out}");
            assert_eq!(out["changed"], json!([]), "{out}");
        }

        let dropped = expect_ok(&agent.send("DELETE", "/computer/environment", b""));
        assert_eq!(dropped["environment"], Value::Null);
        let shown = expect_ok(&agent.send("GET", "/computer", b""));
        assert_eq!(shown["environment"], Value::Null, "{shown}");
    });
}

/// A setup script that installs as [`install`] does and counts its runs
/// in the venv.
fn setup_script() -> String {
    format!(
        "# stead-lock: requirements.lock\n{}\necho \"run $(cat /requirements.lock)\" >> /.venv/runs\n",
        install()
    )
}

fn environment(agent: &Agent) -> Value {
    expect_ok(&agent.send("GET", "/computer", b""))["environment"].clone()
}

#[test]
fn the_setup_script_builds_once_and_again_when_a_lock_file_changes() {
    with_runtime(|runtime| {
        let agent = Agent::create_on(runtime.client(), "environment-setup");
        agent.write("/requirements.lock", "demo==1.0\n");
        agent.write("/.stead/setup.sh", &setup_script());
        let out = agent.on_computer("cat /.venv/runs");
        assert_eq!(
            out["stdout"], "run demo==1.0\n",
            "set up before the first command: {out}"
        );
        let built = environment(&agent);
        assert_eq!(built["state"], "ready", "{built}");
        assert_eq!(built["built_from"]["reason"], "setup", "{built}");
        let setup = &built["built_from"]["setup"];
        assert_eq!(setup["setup"]["path"], "/.stead/setup.sh", "{built}");
        assert_eq!(setup["locks"][0]["path"], "/requirements.lock", "{built}");
        let first_lock = setup["locks"][0]["hash"].clone();

        // Once per environment: the next command does not run it again.
        let out = agent.on_computer("cat /.venv/runs");
        assert_eq!(out["stdout"], "run demo==1.0\n", "{out}");

        // A changed lock file rebuilds it before the next command.
        agent.write("/requirements.lock", "demo==1.0 # pinned\n");
        let out = agent.on_computer("cat /.venv/runs");
        assert_eq!(
            out["stdout"], "run demo==1.0\nrun demo==1.0 # pinned\n",
            "{out}"
        );
        let rebuilt = environment(&agent);
        assert_eq!(rebuilt["state"], "ready", "{rebuilt}");
        assert_ne!(
            rebuilt["built_from"]["setup"]["locks"][0]["hash"],
            first_lock
        );

        if runtime.mode() == ComputerMode::Container {
            // Released: the fresh computer gets the snapshot back instead
            // of running the script.
            expect_ok(&agent.send("POST", "/computer/stop", b""));
            let out = agent.on_computer("cat /.venv/runs && .venv/bin/python -c 'import demo'");
            assert_eq!(
                out["stdout"], "run demo==1.0\nrun demo==1.0 # pinned\n",
                "{out}"
            );
        }
    });
}

#[test]
fn a_failing_setup_leaves_its_log_and_commands_run_without_it() {
    with_runtime(|runtime| {
        let agent = Agent::create_on(runtime.client(), "environment-failing");
        agent.write(
            "/.stead/setup.sh",
            "mkdir -p .venv && echo half > .venv/x\necho boom >&2\nexit 3\n",
        );
        let out = agent.on_computer("echo still works");
        assert_eq!(out["exit_code"], 0, "{out}");
        assert_eq!(out["stdout"], "still works\n", "{out}");
        let failed = environment(&agent);
        assert_eq!(failed["state"], "failed", "{failed}");
        let log = failed["log"].as_str().unwrap();
        assert!(
            log.contains("exited with code 3") && log.contains("boom"),
            "{log}"
        );
        // Nothing of it was kept.
        assert_eq!(failed["stored_bytes"], 0, "{failed}");
    });
}

#[test]
fn an_idle_release_saves_the_environment_first() {
    with_runtime(|runtime| {
        if runtime.mode() != ComputerMode::Container {
            eprintln!("idle release needs real containers: the local program is never released");
            return;
        }
        let agent = Agent::create_on(runtime.client(), "environment-idle");
        expect_ok(&agent.send("PUT", "/settings", br#"{"computer":{"idle_ms":10000}}"#));
        let out = agent
            .on_computer("mkdir -p node_modules/kept && echo here > node_modules/kept/index.js");
        assert_eq!(out["exit_code"], 0, "{out}");
        // Saved shortly before the release, which still comes.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let shown = expect_ok(&agent.send("GET", "/computer", b""));
            let saved = shown["environment"]["built_from"]["reason"] == "release";
            if saved && shown["computer"]["state"] == "stopped" {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "not saved and released: {shown}"
            );
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        let out = agent.on_computer("cat node_modules/kept/index.js");
        assert_eq!(out["stdout"], "here\n", "{out}");
    });
}
