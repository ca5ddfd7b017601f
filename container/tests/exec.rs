//! Running commands: streaming, reports, chunks, acks, limits, cancel,
//! environment and what a command may not smuggle out.

mod common;

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use common::*;
use serde_json::json;
use stead_sync::{frame, hash_content, Entry, ExecEvent, CHUNK_SIZE};

fn spec(id: &str, command: &str) -> serde_json::Value {
    json!({ "id": id, "command": command, "cwd": "/", "timeout_ms": 30_000 })
}

#[test]
fn output_streams_before_the_command_ends() {
    let computer = Computer::start();
    let client = computer.client();
    let started = Instant::now();
    let (status, mut reader) = client.exec_stream(&spec("s", "echo a; sleep 3; echo b"));
    assert_eq!(status, 200);
    let first = next_event(&mut reader).unwrap();
    let first_at = started.elapsed();
    assert_eq!(
        first,
        ExecEvent::Stdout {
            data: BASE64.encode("a\n")
        }
    );
    assert!(
        first_at < Duration::from_secs(2),
        "the first line came after {first_at:?}"
    );
    let mut events = vec![first];
    while let Some(event) = next_event(&mut reader) {
        events.push(event);
    }
    assert!(started.elapsed() >= Duration::from_secs(3));
    let (out, _, exit) = collect(events);
    assert_eq!(out, "a\nb\n");
    assert_eq!(exit.code, Some(0));
}

#[test]
fn exit_codes_stderr_stdin_and_cwd() {
    let computer = Computer::start();
    let client = computer.client();
    std::fs::create_dir(client.disk("/sub")).unwrap();
    let answer = client.exec_spec(&json!({
        "id": "io", "command": "cat; pwd; echo oops >&2; exit 3", "cwd": "/sub",
        "stdin": BASE64.encode("from stdin\n"), "timeout_ms": 10_000
    }));
    let (out, err, exit) = collect(parse_events(&answer.body));
    // The command sees the workspace as `/`.
    assert_eq!(out, "from stdin\n/sub\n");
    assert_eq!(err, "oops\n");
    assert_eq!(
        (exit.code, exit.signal, exit.timed_out, exit.cancelled),
        (Some(3), None, false, false)
    );

    // A command that exits while a background child holds its pipes open
    // still ends promptly.
    let started = Instant::now();
    let (out, _, exit) = client.exec("bg", "sleep 5 & echo done");
    assert_eq!(out, "done\n");
    assert_eq!(exit.code, Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    for cwd in ["/nope", "/../", "sub", "/sub/\0"] {
        let answer = client.exec_spec(
            &json!({"id": format!("cwd{cwd}"), "command": "true", "cwd": cwd, "timeout_ms": 1000}),
        );
        assert_eq!(answer.status, 400, "{cwd}");
        assert_eq!(answer.code(), "BAD_PATH", "{cwd}");
    }
    std::os::unix::fs::symlink("/tmp", client.disk("/out")).unwrap();
    let answer = client
        .exec_spec(&json!({"id": "cwd-out", "command": "true", "cwd": "/out", "timeout_ms": 1000}));
    assert_eq!(answer.code(), "BAD_PATH");
}

#[test]
fn exec_reports_changes_with_chunk_hashes_and_serves_the_chunks() {
    let computer = Computer::start();
    let client = computer.client();
    client.sync(
        false,
        &[
            file("/keep.txt", 0o644, b"keep\n"),
            file("/mod.txt", 0o644, b"old\n"),
            file("/del.txt", 0o644, b"del\n"),
        ],
        &[b"keep\n", b"old\n", b"del\n"],
    );
    let size = CHUNK_SIZE + 100;
    let command = format!(
        "echo new > new.txt; mkdir -m 700 d; head -c {size} /dev/zero | tr '\\0' x > d/big; \
         echo changed > mod.txt; chmod 600 mod.txt; rm del.txt; mkdir -p node_modules/x; touch node_modules/x/y"
    );
    let (_, _, exit) = client.exec("e1", &command);
    assert_eq!(exit.code, Some(0));
    let big = vec![b'x'; size];
    let expected = vec![
        dir("/d", 0o700),
        file("/d/big", 0o644, &big),
        gone("/del.txt"),
        file("/mod.txt", 0o600, b"changed\n"),
        file("/new.txt", 0o644, b"new\n"),
    ];
    assert_eq!(untimed(&exit.changes), expected);
    assert!(exit.skipped.is_empty());

    let mut wanted = hash_content(&big);
    wanted.extend(hash_content(b"changed\n"));
    let answer = client.fetch_chunks("e1", &wanted);
    assert_eq!(answer.status, 200);
    let got = frame::decode_all(&answer.body).unwrap();
    assert_eq!(got.iter().map(|(h, _)| *h).collect::<Vec<_>>(), wanted);
    assert_eq!(got[0].1, big[..CHUNK_SIZE]);
    assert_eq!(got[1].1, big[CHUNK_SIZE..]);
    assert_eq!(got[2].1, b"changed\n");

    // Chunks no longer on disk as reported are gone; unknown execs unknown.
    std::fs::write(client.disk("/mod.txt"), "again\n").unwrap();
    let answer = client.fetch_chunks("e1", &hash_content(b"changed\n"));
    assert_eq!((answer.status, answer.code().as_str()), (409, "CHUNK_GONE"));
    let answer = client.fetch_chunks("nope", &hash_content(b"changed\n"));
    assert_eq!(
        (answer.status, answer.code().as_str()),
        (404, "UNKNOWN_EXEC")
    );
    let answer = client.fetch_chunks("e1", &hash_content(b"keep\n"));
    assert_eq!(answer.status, 400, "not part of the report");
}

#[test]
fn changes_are_reported_until_acknowledged() {
    let computer = Computer::start();
    let client = computer.client();
    let (_, _, first) = client.exec("one", "echo hi > a.txt; ln -s a.txt link");
    let expected = vec![file("/a.txt", 0o644, b"hi\n"), symlink("/link", "a.txt")];
    assert_eq!(untimed(&first.changes), expected);

    let (_, _, second) = client.exec("two", "true");
    assert_eq!(
        untimed(&second.changes),
        expected,
        "not acknowledged: reported again"
    );

    assert_eq!(client.ack("two").json(), json!({"acked": true}));
    assert_eq!(
        client.ack("two").json(),
        json!({"acked": true}),
        "acking twice is fine"
    );
    let unknown = client.ack("never");
    assert_eq!(
        (unknown.status, unknown.code().as_str()),
        (404, "UNKNOWN_EXEC")
    );
    let answer = client.fetch_chunks("two", &hash_content(b"hi\n"));
    assert_eq!(answer.status, 404, "an acknowledged report is dropped");
    let answer = client.fetch_chunks("one", &hash_content(b"hi\n"));
    assert_eq!(
        answer.status, 404,
        "an older report is superseded by the ack of a newer one"
    );
    assert_eq!(client.ack("one").json(), json!({"acked": true}));

    let (_, _, third) = client.exec("three", "touch a.txt");
    assert!(third.changes.is_empty(), "{:?}", third.changes);
    let (_, _, fourth) = client.exec("four", "rm a.txt");
    assert_eq!(untimed(&fourth.changes), vec![gone("/a.txt")]);
    client.ack("four");
    let (_, _, fifth) = client.exec("five", "true");
    assert!(fifth.changes.is_empty());
}

#[test]
fn an_exec_id_never_runs_twice() {
    let computer = Computer::start();
    let client = computer.client();
    client.exec("once", "echo x >> count");
    let again = client.exec_spec(&spec("once", "echo x >> count"));
    assert_eq!(
        (again.status, again.code().as_str()),
        (409, "ALREADY_STARTED")
    );
    assert_eq!(
        std::fs::read_to_string(client.disk("/count")).unwrap(),
        "x\n"
    );
}

#[test]
fn an_exec_planned_for_another_instance_is_refused_and_runs_nothing() {
    let computer = Computer::start();
    let client = computer.client();
    let instance = client.instance();
    let param = stead_sync::EXEC_INSTANCE_PARAM;
    // Digits only: an id is compared as sent, never read as a number.
    let other = format!("/v1/exec?{param}=0123456789");
    let refused = client.post(&other, &spec("stale", "echo ran > ran.txt"));
    assert_eq!(
        (refused.status, refused.code().as_str()),
        (409, "STALE_INSTANCE")
    );
    assert!(!client.disk("/ran.txt").exists(), "nothing ran");
    // Refused before it started: the id is still free on this instance.
    let planned = format!("/v1/exec?{param}={instance}");
    let ran = client.post(&planned, &spec("stale", "echo ran > ran.txt"));
    assert_eq!(ran.status, 200, "{}", String::from_utf8_lossy(&ran.body));
    let (_, _, exit) = collect(parse_events(&ran.body));
    assert_eq!(exit.code, Some(0));
    // Without the parameter (an older workspace) an exec runs as before.
    let (stdout, _, exit) = client.exec("unnamed", "cat ran.txt");
    assert_eq!((stdout.as_str(), exit.code), ("ran\n", Some(0)));
}

#[test]
fn timeout_kills_the_whole_group_and_a_second_command_is_busy() {
    let computer = Computer::start();
    let client = computer.client();
    let runner = client.clone();
    let started = Instant::now();
    let background = format!("101.{}", unique_number());
    let script = format!("sleep {background} & echo started > bg; sleep 100");
    let handle = std::thread::spawn(move || {
        let answer = runner.exec_spec(&json!({
            "id": "slow", "command": script, "cwd": "/", "timeout_ms": 700
        }));
        collect(parse_events(&answer.body))
    });
    wait_until("running", Duration::from_secs(5), || {
        client.get("/v1/status").json()["running"] == "slow"
    });
    let busy = client.exec_spec(&spec("other", "true"));
    assert_eq!((busy.status, busy.code().as_str()), (409, "BUSY"));
    let busy = client.push(false, &[]);
    assert_eq!(busy.code(), "BUSY", "no push while a command runs");

    let (_, _, exit) = handle.join().unwrap();
    assert!(exit.timed_out);
    assert!(!exit.cancelled);
    assert_eq!(exit.code, None);
    assert_eq!(exit.signal, Some(libc_sigterm()));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(client.disk("/bg").exists(), "the background child started");
    // Commands run in a PID namespace of their own: found by what they run.
    wait_until(
        "the background child to die",
        Duration::from_secs(5),
        || pid_of(&["sleep", &background]).is_none(),
    );
    assert_eq!(
        client.get("/v1/status").json()["running"],
        serde_json::Value::Null
    );
    // "other" was refused, not started: it may run now.
    let (_, _, exit) = client.exec("other", "true");
    assert_eq!(exit.code, Some(0));
}

fn libc_sigterm() -> i32 {
    15
}

#[test]
fn cancel_stops_a_running_command() {
    let computer = Computer::start();
    let client = computer.client();
    let runner = client.clone();
    let handle = std::thread::spawn(move || {
        let answer = runner.exec_spec(&spec("c", "trap '' TERM; sleep 100"));
        collect(parse_events(&answer.body))
    });
    wait_until("running", Duration::from_secs(5), || {
        client.get("/v1/status").json()["running"] == "c"
    });
    let started = Instant::now();
    let unknown = client.post("/v1/exec/zzz/cancel", &json!({}));
    assert_eq!(
        (unknown.status, unknown.code().as_str()),
        (404, "UNKNOWN_EXEC")
    );
    let answer = client.post("/v1/exec/c/cancel", &json!({}));
    assert_eq!(answer.status, 200);
    let (_, _, exit) = handle.join().unwrap();
    assert!(exit.cancelled);
    assert!(!exit.timed_out);
    assert!(exit.signal.is_some());
    assert!(started.elapsed() < Duration::from_secs(6));
    let answer = client.post("/v1/exec/c/cancel", &json!({}));
    assert_eq!(answer.status, 404, "no longer running");
}

#[test]
fn a_disconnect_kills_the_command() {
    let computer = Computer::start();
    let client = computer.client();
    let seconds = format!("102.{}", unique_number());
    let (status, mut reader) =
        client.exec_stream(&spec("d", &format!("echo started; exec sleep {seconds}")));
    assert_eq!(status, 200);
    let Some(ExecEvent::Stdout { .. }) = next_event(&mut reader) else {
        panic!("expected output");
    };
    // Commands run in a PID namespace of their own: found by what they run.
    let pid = running(&["sleep", &seconds]);
    drop(reader);
    wait_until("the command to die", Duration::from_secs(5), || {
        process_gone(pid)
    });
    wait_until("the container to be free", Duration::from_secs(5), || {
        client.get("/v1/status").json()["running"].is_null()
    });
    let answer = client.fetch_chunks("d", &[]);
    assert_eq!(answer.status, 404, "no report for a disconnected exec");
}

#[test]
fn a_detached_command_outlives_its_client_and_its_log_is_read_from_any_offset() {
    let computer = Computer::start();
    let client = computer.client();
    let mut detached = spec("det", "echo one; sleep 1; echo two; echo made > made.txt");
    detached["detach"] = json!(true);
    let (status, mut reader) = client.exec_stream(&detached);
    assert_eq!(status, 200);
    let first = next_event(&mut reader).unwrap();
    assert_eq!(
        first,
        ExecEvent::Stdout {
            data: BASE64.encode("one\n")
        }
    );
    drop(reader);
    wait_until("the command to end", Duration::from_secs(10), || {
        client.get("/v1/status").json()["running"].is_null()
    });
    // Read on from offset 4 (after "one\n"): the rest, then the report.
    let answer = client.get("/v1/exec/det/output?from=4");
    answer.expect(200);
    let (out, _, exit) = collect(parse_events(&answer.body));
    assert_eq!(out, "two\n");
    assert_eq!(exit.code, Some(0));
    assert!(
        exit.changes.iter().any(|c| c.path == "/made.txt"),
        "{exit:?}"
    );
    // From inside a piece: the piece is cut there.
    let (out, _, _) = collect(parse_events(&client.get("/v1/exec/det/output?from=2").body));
    assert_eq!(out, "e\ntwo\n");
    // Bad offsets and ids are refused with the protocol's errors.
    let beyond = client.get("/v1/exec/det/output?from=99");
    assert_eq!(
        (beyond.status, beyond.code()),
        (400, "INVALID_REQUEST".to_string())
    );
    let unknown = client.get("/v1/exec/nope/output?from=0");
    assert_eq!(
        (unknown.status, unknown.code()),
        (404, "UNKNOWN_EXEC".to_string())
    );
    let junk = client.get("/v1/exec/det/output?from=x&y=1");
    assert_eq!(junk.status, 400);
    // Acknowledged, the report and its log are gone.
    assert_eq!(client.ack("det").status, 200);
    assert_eq!(client.get("/v1/exec/det/output?from=0").status, 404);
}

#[test]
fn the_environment_is_clean() {
    let computer = Computer::start();
    let client = computer.client();
    let answer = client.exec_spec(&json!({
        "id": "env", "command": "env; cat /proc/$$/environ | tr '\\0' '\\n'", "cwd": "/", "timeout_ms": 10_000,
        "env": {"FOO": "bar baz"}
    }));
    let (out, _, _) = collect(parse_events(&answer.body));
    assert!(!out.contains(SECRET), "{out}");
    assert!(!out.contains("STEAD_COMPUTER"), "{out}");
    // Home is the workspace's root, as in the light shell; what programs
    // keep per user goes to the computer's own directory.
    for line in [
        "HOME=/",
        "XDG_CACHE_HOME=/var/tmp/home/.cache",
        "PYTHONUSERBASE=/var/tmp/home/.local",
        "GIT_CONFIG_GLOBAL=/var/tmp/home/.gitconfig",
        "WORKSPACE=/",
        "PWD=/",
        "LANG=C.UTF-8",
        "PYTHONUNBUFFERED=1",
        "FOO=bar baz",
    ] {
        assert!(out.lines().any(|l| l == line), "{line} missing in {out}");
    }
    assert!(out
        .lines()
        .any(|l| l.starts_with("PATH=/var/tmp/home/.local/bin:") && l.contains("/usr/bin")));
    // The program's own environment (the test runner's) is not passed on.
    assert!(!out.contains("CARGO_"), "{out}");
}

#[test]
fn git_commits_without_set_up_and_its_global_config_stays_out_of_the_workspace() {
    let computer = Computer::start();
    let client = computer.client();
    let script = "set -e; mkdir /repo; cd /repo; git init -q; echo x > f; git add f; \
                  git commit -qm first; git log -1 --format='%an <%ae>'; \
                  git config --global core.editor true; git config --global core.editor; \
                  git config user.name 'Someone Else'; echo y >> f; git commit -qam second; \
                  git log -1 --format='%an'";
    let (out, err, exit) = client.exec("git", script);
    assert_eq!(exit.code, Some(0), "{err}");
    assert_eq!(
        out,
        "stead agent <agent@stead.invalid>\ntrue\nSomeone Else\n"
    );
    // `git config --global` wrote the computer's file, not `/.gitconfig`.
    assert!(!client.disk("/.gitconfig").exists());
    let (out, _, _) = client.exec("home", "cat \"$GIT_CONFIG_GLOBAL\"");
    assert!(out.contains("editor = true"), "{out}");
    let (out, _, _) = client.exec("ls", "ls -A /");
    assert!(!out.lines().any(|name| name == ".gitconfig"), "{out}");
}

#[test]
fn symlinks_come_back_as_they_are_and_special_files_are_skipped() {
    let computer = Computer::start();
    let client = computer.client();
    let (out, _, exit) = client.exec(
        "links",
        "ln -s /etc/passwd pw; mkdir d; ln -s ../../ok.txt d/up; ln -s ../ok.txt d/fine; \
         ln -s /ok.txt abs; mkfifo fifo; echo ok > ok.txt; cat abs d/up",
    );
    // The workspace is `/` for the command, so an absolute target or `..`
    // at the root means the workspace's path, as it does in the workspace.
    assert_eq!(out, "ok\nok\n");
    let skipped: Vec<_> = exit.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(skipped, ["/fifo"]);
    assert!(exit.skipped.iter().all(|s| !s.reason.is_empty()));
    let links: Vec<_> = exit
        .changes
        .iter()
        .filter_map(|c| match &c.entry {
            Some(Entry::Symlink { target }) => Some((c.path.as_str(), target.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        links,
        [
            ("/abs", "/ok.txt"),
            ("/d/fine", "../ok.txt"),
            ("/d/up", "../../ok.txt"),
            ("/pw", "/etc/passwd")
        ]
    );
}

#[test]
fn a_client_that_does_not_read_does_not_delay_the_timeout() {
    let computer = Computer::start();
    let client = computer.client();
    let word = format!("flood-{}", unique_number());
    let (status, mut reader) = client.exec_stream(&json!({
        "id": "flood", "command": format!("echo started > pid; exec yes {word}"), "cwd": "/", "timeout_ms": 500
    }));
    assert_eq!(status, 200);
    wait_until("the pid file", Duration::from_secs(5), || {
        std::fs::read_to_string(client.disk("/pid")).is_ok_and(|s| s.ends_with('\n'))
    });
    let pid = running(&["yes", &word]);
    // Nothing is read while the output piles up: the command still ends.
    wait_until("the flood to be stopped", Duration::from_secs(5), || {
        process_gone(pid)
    });
    let mut last = None;
    while let Some(event) = next_event(&mut reader) {
        last = Some(event);
    }
    let Some(ExecEvent::Exit(exit)) = last else {
        panic!("no exit event");
    };
    assert!(exit.timed_out);
}

#[test]
fn sigterm_stops_commands_but_delivers_their_output_and_changes() {
    // A drain far longer than the test waits: only the ack can end it.
    let mut computer = Computer::start_with_args(false, &["--drain-ms", "30000"]);
    let client = computer.client();
    let (status, mut reader) = client.exec_stream(&spec(
        "t",
        "echo started; echo partial > p.txt; (sleep 60; echo late > late.txt) & sleep 60",
    ));
    assert_eq!(status, 200);
    assert_eq!(
        next_event(&mut reader).unwrap(),
        ExecEvent::Stdout {
            data: BASE64.encode("started\n")
        }
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.disk("/p.txt").exists() {
        assert!(Instant::now() < deadline, "the command never wrote p.txt");
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped_at = Instant::now();
    computer.signal(libc_sigterm());

    let mut events = Vec::new();
    while let Some(event) = next_event(&mut reader) {
        events.push(event);
    }
    let (out, _, exit) = collect(events);
    assert_eq!(out, "", "the output before the stop went out first");
    assert!(exit.shutdown, "{exit:?}");
    assert!(!exit.cancelled && !exit.timed_out);
    assert_eq!(exit.signal, Some(libc_sigterm()), "{exit:?}");
    assert_eq!(
        untimed(&exit.changes),
        vec![file("/p.txt", 0o644, b"partial\n")]
    );
    assert!(
        stopped_at.elapsed() < Duration::from_secs(5),
        "stopping took {:?}",
        stopped_at.elapsed()
    );

    // Nothing new starts, but the report can still be pulled and acked.
    let refused = client.exec_spec(&spec("u", "true"));
    assert_eq!(
        (refused.status, refused.code().as_str()),
        (503, "SHUTTING_DOWN")
    );
    let refused = client.get("/v1/status");
    assert_eq!(
        (refused.status, refused.code().as_str()),
        (503, "SHUTTING_DOWN"),
        "whoever plans new work learns at once"
    );
    let refused = client.post(
        "/v1/sync/apply",
        &json!({ "instance": "any", "full": false, "changes": [], "ignore": "" }),
    );
    assert_eq!(refused.code(), "SHUTTING_DOWN");
    let chunks = client.fetch_chunks("t", &hash_content(b"partial\n"));
    assert_eq!(chunks.status, 200);
    assert_eq!(
        frame::decode_all(&chunks.body).unwrap()[0].1,
        b"partial\n".to_vec()
    );
    assert_eq!(client.ack("t").status, 200);

    // The ack ends the drain: the program exits well before 30 s.
    let exited = computer.wait_exit(Duration::from_secs(10));
    assert!(exited.is_some_and(|status| status.success()), "{exited:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !client.disk("/late.txt").exists(),
        "the background child outlived the stop"
    );
}

#[test]
fn a_scan_that_fails_ends_the_stream_with_an_error_event() {
    // Commands run as the program's own user here, so one can make the
    // workspace unreadable to the program.
    let computer = Computer::start_unprivileged();
    let client = computer.client();
    let answer = client.exec_spec(&spec("s", "echo kept > kept.txt; chmod 000 \"$WORKSPACE\""));
    assert_eq!(answer.status, 200);
    let events = parse_events(&answer.body);
    let Some(ExecEvent::Error(error)) = events.last() else {
        panic!("the stream did not end with an error event: {events:?}");
    };
    assert_eq!(error.code, stead_sync::ErrorCode::Io);
    assert!(error.message.contains("scanning"), "{}", error.message);
    assert!(
        !events.iter().any(|e| matches!(e, ExecEvent::Exit(_))),
        "{events:?}"
    );
    // Nothing was reported for it; the next command reports its change.
    assert_eq!(client.fetch_chunks("s", &[]).code(), "UNKNOWN_EXEC");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(computer.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (_, _, exit) = client.exec("next", "true");
    assert_eq!(
        untimed(&exit.changes),
        vec![file("/kept.txt", 0o644, b"kept\n")]
    );
}
