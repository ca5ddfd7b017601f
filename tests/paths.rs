//! End-to-end: one workspace, one set of paths. The same script runs with
//! `"backend": "shell"` on one agent and `"backend": "computer"` on another
//! holding the same workspace (the computer in real containers or as the
//! local process, whichever mode the harness runs), and both must print
//! the same, exit the same and leave the same workspace: absolute and
//! relative paths, `cd /`, `pwd`, the requested cwd, globbing from the
//! root, `find /notes`, redirections to absolute paths, and symlinks with
//! absolute targets. Each test also states the expected output, so the two
//! backends cannot agree on a wrong answer.
//!
//! Devices read the same on both; where the light shell's emulation
//! differs (README's table), each backend's answer is asserted.
//!
//! Writes outside the workspace (under the system's directories, or `..`
//! of `/`, which is `/`) reach neither the host nor another agent's
//! workspace, in either computer mode.

mod common;

use common::{with_runtime, Agent};
use serde_json::{json, Value};

/// The workspace both agents start from.
fn seed(agent: &Agent) {
    agent.write("/README.md", "readme\n");
    agent.write("/notes/plan.md", "plan\n");
    agent.write("/notes/todo.md", "todo\n");
    agent.write("/notes/deep/idea.txt", "idea\n");
    agent.write("/src/main.py", "print('main')\n");
    // A symlink with an absolute target, made through the file API.
    agent.ok("symlink", json!({ "target": "/notes", "path": "/docs" }));
}

/// Every node of the workspace: path, type, and a file's bytes or a
/// symlink's target (no times, no revision: the two backends write in
/// different numbers of steps).
fn contents(agent: &Agent) -> Vec<(String, String, String)> {
    let page = agent.ok("glob", json!({ "pattern": "**", "limit": 10000 }));
    assert_eq!(page["truncated"], false);
    let mut nodes: Vec<(String, String, String)> = page["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|node| {
            let path = node["path"].as_str().expect("path").to_string();
            let kind = node["type"].as_str().expect("type").to_string();
            let what = match kind.as_str() {
                "file" => String::from_utf8_lossy(&agent.download(&path)).into_owned(),
                "symlink" => agent.ok("readlink", json!({ "path": path }))["target"]
                    .as_str()
                    .expect("target")
                    .to_string(),
                _ => String::new(),
            };
            (path, kind, what)
        })
        .collect();
    nodes.sort();
    nodes
}

/// Runs `script` in `cwd` on a fresh light-shell agent and a fresh
/// computer agent, both seeded alike; asserts they agree on stdout, exit
/// code and the resulting workspace, and returns the light shell's answer.
#[track_caller]
fn same_on_both(name: &str, cwd: &str, script: &str) -> Value {
    let mut answers = Vec::new();
    let mut workspaces = Vec::new();
    for backend in ["shell", "computer"] {
        let agent = Agent::new(&format!("paths-{name}-{backend}"));
        seed(&agent);
        let out = agent.ok(
            "exec",
            json!({ "command": script, "cwd": cwd, "backend": backend, "timeout_ms": 30_000 }),
        );
        assert_eq!(out["backend"], backend, "{out}");
        answers.push(out);
        workspaces.push(contents(&agent));
    }
    let (shell, computer) = (&answers[0], &answers[1]);
    assert_eq!(
        (&shell["stdout"], &shell["exit_code"]),
        (&computer["stdout"], &computer["exit_code"]),
        "{script}\nshell: {shell}\ncomputer: {computer}"
    );
    assert_eq!(workspaces[0], workspaces[1], "{script}");
    answers.swap_remove(0)
}

#[test]
fn absolute_and_relative_paths_cd_and_pwd() {
    let out = same_on_both(
        "cd",
        "/",
        "cat /notes/plan.md notes/todo.md; cd /notes; pwd; echo \"$PWD\"; \
         cat plan.md ../README.md deep/../todo.md; cd deep && pwd; cd / && pwd; \
         cd notes/deep/../.. && pwd; cd ~ && pwd; echo ~",
    );
    assert_eq!(
        out["stdout"],
        "plan\ntodo\n/notes\n/notes\nplan\nreadme\ntodo\n/notes/deep\n/\n/\n/\n/\n"
    );
    assert_eq!(out["exit_code"], 0);
}

#[test]
fn the_requested_cwd_is_a_workspace_path() {
    let out = same_on_both(
        "cwd",
        "/notes/deep",
        "pwd; echo \"$PWD\"; cat idea.txt ../plan.md /src/main.py; ls ..",
    );
    assert_eq!(
        out["stdout"],
        "/notes/deep\n/notes/deep\nidea\nplan\nprint('main')\ndeep\nplan.md\ntodo.md\n"
    );
}

#[test]
fn globbing_from_the_root() {
    let out = same_on_both(
        "glob",
        "/",
        "echo /*.md; echo /notes/*; echo /n*/*.md; echo /n*/deep/*; \
         for f in /notes/*.md; do echo \"$f: $(cat \"$f\")\"; done; cd / && echo n*/*.md; \
         ls -d /notes/*/",
    );
    assert_eq!(
        out["stdout"],
        "/README.md\n/notes/deep /notes/plan.md /notes/todo.md\n/notes/plan.md /notes/todo.md\n\
         /notes/deep/idea.txt\n/notes/plan.md: plan\n/notes/todo.md: todo\n\
         notes/plan.md notes/todo.md\n/notes/deep/\n"
    );
}

#[test]
fn find_lists_the_same_paths() {
    let out = same_on_both(
        "find",
        "/",
        "find /notes | sort; find /notes -name '*.md' -type f | sort; \
         cd / && find notes/deep; find /docs/ -name plan.md; cd /src && find ../notes -type d | sort",
    );
    assert_eq!(
        out["stdout"],
        "/notes\n/notes/deep\n/notes/deep/idea.txt\n/notes/plan.md\n/notes/todo.md\n\
         /notes/plan.md\n/notes/todo.md\n\
         notes/deep\nnotes/deep/idea.txt\n\
         /docs/plan.md\n\
         ../notes\n../notes/deep\n"
    );
}

#[test]
fn redirections_to_absolute_paths() {
    let out = same_on_both(
        "redirect",
        "/src",
        "mkdir -p /out; echo one > /out/a.txt; echo two >> /out/a.txt; cat /out/a.txt; \
         printf 'new\\n' > /notes/new.md; echo rel > ../out/rel.txt; \
         cat < /notes/plan.md > /out/copy.md; wc -l < /out/a.txt; rm /notes/todo.md; \
         echo err >&2 2> /out/err.txt; ls /out",
    );
    assert_eq!(
        out["stdout"],
        "one\ntwo\n2\na.txt\ncopy.md\nerr.txt\nrel.txt\n"
    );
}

#[test]
fn symlinks_with_absolute_targets_inside_the_workspace() {
    let out = same_on_both(
        "links",
        "/",
        "cat /docs/plan.md; ln -s /notes/plan.md /plan-link; cat /plan-link; readlink /plan-link; \
         cd /docs && pwd && cat todo.md; mkdir -p /l && ln -s /src/main.py /l/main; cat /l/main; \
         ln -s ../notes/deep /l/deep; cat /l/deep/idea.txt; echo more >> /plan-link; cat /notes/plan.md",
    );
    assert_eq!(
        out["stdout"],
        "plan\nplan\n/notes/plan.md\n/docs\ntodo\nprint('main')\nidea\nplan\nmore\n"
    );
}

#[test]
fn the_readme_example_means_the_same() {
    // README, "Running commands: one workspace, one set of paths".
    let out = same_on_both(
        "readme",
        "/",
        "cd / && cat notes/plan.md && ls /notes/*.md && pwd && echo ok > /notes/status",
    );
    assert_eq!(out["stdout"], "plan\n/notes/plan.md\n/notes/todo.md\n/\n");
    assert_eq!(out["exit_code"], 0);
}

#[test]
fn devices_read_the_same() {
    let out = same_on_both(
        "devices",
        "/",
        "head -c 3 /dev/zero | wc -c; head -c 16 /dev/urandom | wc -c; echo in | cat /dev/stdin; \
         echo out > /dev/stdout; echo gone > /dev/null; cat /dev/null; test -e /dev/null && echo null; \
         echo err > /dev/stderr",
    );
    assert_eq!(out["stdout"], "3\n16\nin\nout\nnull\n");
    assert_eq!(out["stderr"], "err\n");
}

/// What README's "Where the light shell's emulation differs" table says,
/// row by row: each backend's answer is stated, so a change on either side
/// shows up here and in the table.
#[test]
fn the_light_shells_differences_are_the_documented_ones() {
    let script = "cd / && cd .. 2>/dev/null; echo \"cd=$? $(pwd)\"; \
                  echo x 2>/dev/null > ../up.txt; echo \"up=$?\"; \
                  ls /proc/self > /dev/null 2>&1; echo \"proc=$?\"; \
                  echo t 2>/dev/null > /tmp/t; echo \"tmp=$?\"; \
                  ls / | grep -cx -e usr -e etc -e proc";
    for (backend, stdout, tree) in [
        (
            "shell",
            "cd=1 /\nup=1\nproc=2\ntmp=1\n0\n",
            vec!["/README.md"],
        ),
        (
            "computer",
            "cd=0 /\nup=0\nproc=0\ntmp=0\n3\n",
            vec!["/README.md", "/up.txt"],
        ),
    ] {
        let agent = Agent::new(&format!("paths-differences-{backend}"));
        agent.write("/README.md", "readme\n");
        let out = agent.ok(
            "exec",
            json!({ "command": script, "backend": backend, "timeout_ms": 30_000 }),
        );
        assert_eq!(out["stdout"], stdout, "{backend}: {out}");
        assert_eq!(agent.tree(), tree, "{backend}");
    }
}

#[test]
fn the_issue_script_means_the_same_with_auto() {
    // `auto` sends this to the computer (python3), where /notes/plan.md is
    // the workspace's file, as it is for the file API and the light shell.
    let agent = Agent::new("paths-auto");
    seed(&agent);
    let out = agent.ok(
        "exec",
        json!({ "command": "cat /notes/plan.md; python3 -c 'print(2**10)' > /notes/n.txt; \
                             cat /notes/n.txt; pwd", "timeout_ms": 60_000 }),
    );
    assert_eq!(out["backend"], "computer", "{out}");
    assert_eq!(out["stdout"], "plan\n1024\n/\n", "{out}");
    assert_eq!(agent.read("/notes/n.txt"), "1024\n");
}

#[test]
fn writes_outside_the_workspace_reach_neither_the_host_nor_another_agent() {
    let other = Agent::new("paths-outside-other");
    other.write("/f.txt", "the other's\n");
    let first = other.ok(
        "exec",
        json!({ "command": "cat /f.txt", "backend": "computer", "timeout_ms": 60_000 }),
    );
    assert_eq!(first["stdout"], "the other's\n", "{first}");

    let writer = Agent::new("paths-outside-writer");
    let marker = format!("stead-paths-outside-{}", std::process::id());
    let script = format!(
        "echo a > /outside.txt; echo b > ../up.txt; echo c > /../../x.txt; \
         cd / && cd .. && echo d > up2.txt; \
         echo e > /usr/{marker} 2>/dev/null; echo f > /etc/{marker} 2>/dev/null; \
         echo g > /tmp/{marker}; echo h > /var/tmp/{marker}; \
         echo i > ../paths-outside-other/f.txt 2>/dev/null; \
         echo j > /paths-outside-other/new.txt 2>/dev/null; ls /*.txt"
    );
    let out = writer.ok(
        "exec",
        json!({ "command": script, "backend": "computer", "timeout_ms": 60_000 }),
    );
    // `/` is the workspace, and `..` of `/` is `/`, as on any Linux.
    assert_eq!(
        out["stdout"], "/outside.txt\n/up.txt\n/up2.txt\n/x.txt\n",
        "{out}"
    );
    assert_eq!(
        out["changed"],
        json!(["/outside.txt", "/up.txt", "/up2.txt", "/x.txt"]),
        "{out}"
    );
    assert_eq!(
        writer.tree(),
        ["/outside.txt", "/up.txt", "/up2.txt", "/x.txt"]
    );
    // The system's directories refused the writes or kept them: the next
    // command finds the scratch files, never the others, and none of it
    // became the workspace's.
    let out = writer.ok(
        "exec",
        json!({ "command": format!("cat /tmp/{marker} /var/tmp/{marker}; \
                                    ls /usr/{marker} /etc/{marker} 2>/dev/null; echo end"),
                "backend": "computer", "timeout_ms": 60_000 }),
    );
    assert_eq!(out["stdout"], "g\nh\nend\n", "{out}");
    assert_eq!(out["changed"], json!([]), "{out}");

    // The other agent's workspace and its computer's copy are untouched.
    let out = other.ok(
        "exec",
        json!({ "command": "cat /f.txt; ls /*.txt", "backend": "computer", "timeout_ms": 60_000 }),
    );
    assert_eq!(out["stdout"], "the other's\n/f.txt\n", "{out}");
    assert_eq!(out["changed"], json!([]), "{out}");
    assert_eq!(other.tree(), ["/f.txt"]);

    // Nothing reached the host running the computer: not its root, not
    // its system or scratch directories, not beside the workspaces.
    for name in ["outside.txt", "up.txt", "up2.txt", "x.txt"] {
        assert!(!std::path::Path::new("/").join(name).exists(), "/{name}");
    }
    for dir in ["/usr", "/etc", "/tmp", "/var/tmp"] {
        let planted = std::path::Path::new(dir).join(&marker);
        assert!(!planted.exists(), "{}", planted.display());
    }
    with_runtime(|runtime| {
        if let Some(process) = runtime.computer_process() {
            let copy = process.workspace(&writer.id);
            let beside = copy.parent().unwrap();
            for name in [
                "outside.txt",
                "up.txt",
                "x.txt",
                "paths-outside-other/new.txt",
            ] {
                assert!(!beside.join(name).exists(), "{name} beside the workspaces");
            }
            assert_eq!(
                std::fs::read_to_string(process.workspace(&other.id).join("f.txt")).unwrap(),
                "the other's\n"
            );
            assert!(!process.workspace(&other.id).join("new.txt").exists());
        }
    });
}
