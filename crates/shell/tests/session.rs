//! A shell session across lines (`stead_shell::session`): each line runs in
//! a fresh exec over the workspace, and what one line leaves (variables,
//! arrays, functions, aliases, options, traps, the cwd, `$?`) the next one
//! sees, as it would in one bash process. Checked against real bash running
//! the same lines as one script, and through storage (the session is
//! serialized between lines, as the terminal keeps it).

mod common;

use common::{db, text, HostClock};
use stead_shell::session::Session;
use stead_shell::{LimitKind, Limits};
use stead_vfs::Vfs;

/// Runs `lines` one by one, the session read back from JSON before each
/// (as storage would); returns what each printed.
fn run_lines(lines: &[&str]) -> Vec<String> {
    let db = db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    let mut stored = serde_json::to_string(&Session::default()).unwrap();
    let mut outputs = Vec::new();
    for line in lines {
        let mut session: Session = serde_json::from_str(&stored).unwrap();
        let ran = session.run(&vfs, &HostClock, line, &[], Limits::default());
        assert!(!ran.ended, "{line:?} ended the shell");
        outputs.push(text(&ran.output));
        stored = serde_json::to_string(&session).unwrap();
    }
    outputs
}

/// What real bash prints for `lines` run as one script, each line's output
/// apart (lines separated by a marker).
fn bash_lines(lines: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut script = String::from("shopt -s expand_aliases\n");
    for line in lines {
        script.push_str(line);
        // The marker keeps the line's status for the next one.
        script.push_str("\n__s=$?; printf '\\036'; (exit $__s)\n");
    }
    let out = std::process::Command::new("bash")
        .arg("--norc")
        .arg("--noprofile")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("bash runs");
    let all =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    all.split('\u{1e}')
        .take(lines.len())
        .map(str::to_string)
        .collect()
}

#[test]
fn state_carries_from_line_to_line_as_in_one_bash() {
    let lines = [
        "A=1; declare -a arr=(x 'y z'); declare -A map=([k]=v)",
        "f() { echo \"f:$1:$A\"; }",
        "alias greet='echo hello'",
        "greet; f one",
        "echo \"${arr[1]}\" \"${map[k]}\" ${#arr[@]}",
        "false",
        "echo status=$?",
        "set -o noglob; echo /*",
        "set +o noglob; shopt -s nullglob; echo /nothing-here*; echo end",
        "export E=exported; bash -c 'echo $E'",
        "readonly R=fixed; echo $R",
        "i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i",
        "echo $i $A",
    ];
    let ours = run_lines(&lines);
    let bash = bash_lines(&lines);
    assert_eq!(ours, bash);
}

#[test]
fn the_cwd_and_writes_persist() {
    let db = db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    let mut session = Session::default();
    let run = |session: &mut Session, line: &str| {
        text(
            &session
                .run(&vfs, &HostClock, line, &[], Limits::default())
                .output,
        )
    };
    run(&mut session, "mkdir -p /x/y && cd /x/y && echo hi > f");
    assert_eq!(session.cwd, "/x/y");
    assert_eq!(
        run(&mut session, "pwd; cat f; cd ..; echo $OLDPWD"),
        "/x/y\nhi\n/x/y\n"
    );
    assert_eq!(run(&mut session, "cd -"), "/x/y\n");
    // The cwd removed meanwhile: the next line starts at `/`.
    run(&mut session, "rm -r /x");
    assert_eq!(run(&mut session, "pwd"), "/\n");
    // Stdout and stderr both show, in the order written.
    assert_eq!(
        run(&mut session, "echo out; echo err >&2; echo out2"),
        "out\nerr\nout2\n"
    );
}

#[test]
fn the_environment_given_wins_over_the_state() {
    let db = db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    let mut session = Session::default();
    let size = |cols: &str| [("COLUMNS", cols.to_string())];
    session.run(&vfs, &HostClock, "true", &size("80"), Limits::default());
    let ran = session.run(
        &vfs,
        &HostClock,
        "echo $COLUMNS",
        &size("132"),
        Limits::default(),
    );
    assert_eq!(text(&ran.output), "132\n");
}

#[test]
fn exit_ends_the_session_and_a_limit_ends_only_the_line() {
    let db = db();
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    let mut session = Session::default();
    session.run(
        &vfs,
        &HostClock,
        "K=kept; trap 'echo bye' EXIT",
        &[],
        Limits::default(),
    );
    // The EXIT trap runs when the shell exits, not after every line.
    let ran = session.run(&vfs, &HostClock, "echo $K", &[], Limits::default());
    assert_eq!(text(&ran.output), "kept\n");
    let limits = Limits {
        max_loop_iterations: 100,
        ..Limits::default()
    };
    let ran = session.run(&vfs, &HostClock, "K=lost; while :; do :; done", &[], limits);
    assert_eq!(ran.limit, Some(LimitKind::LoopIterations));
    assert!(!ran.ended);
    let ran = session.run(&vfs, &HostClock, "echo $K", &[], Limits::default());
    assert_eq!(text(&ran.output), "kept\n");
    let ran = session.run(&vfs, &HostClock, "exit 4", &[], Limits::default());
    assert!(ran.ended);
    assert_eq!(ran.status, 4);
    assert_eq!(text(&ran.output), "bye\n");
    // `set -e` ends the session at the first failure, as in bash.
    let mut strict = Session::default();
    strict.run(&vfs, &HostClock, "set -e", &[], Limits::default());
    let ran = strict.run(&vfs, &HostClock, "echo fine", &[], Limits::default());
    assert!(!ran.ended && text(&ran.output) == "fine\n");
    let ran = strict.run(
        &vfs,
        &HostClock,
        "false; echo never",
        &[],
        Limits::default(),
    );
    assert!(ran.ended);
    assert_eq!(ran.status, 1);
}

#[test]
fn completion_offers_commands_and_paths() {
    let db = db();
    common::write_files(&db, &[("/proj/alpha.txt", b"a"), ("/proj/also/x", b"x")]);
    let vfs = Vfs::new(&db, 1_700_000_000_000);
    let mut session = Session::default();
    session.run(
        &vfs,
        &HostClock,
        "cd /proj; myfunc() { :; }",
        &[],
        Limits::default(),
    );
    assert_eq!(
        session.complete(&vfs, &HostClock, "al", false),
        ["alpha.txt", "also/"]
    );
    assert_eq!(
        session.complete(&vfs, &HostClock, "/proj/al", false),
        ["/proj/alpha.txt", "/proj/also/"]
    );
    let commands = session.complete(&vfs, &HostClock, "myf", true);
    assert_eq!(commands, ["myfunc"]);
    let commands = session.complete(&vfs, &HostClock, "base", true);
    assert!(commands.iter().any(|c| c == "basename"), "{commands:?}");
    assert!(session.complete(&vfs, &HostClock, "zzz", true).is_empty());
}
