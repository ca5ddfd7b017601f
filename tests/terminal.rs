//! End-to-end: the interactive terminal (`GET /agents/{id}/terminal`)
//! against the real Worker, with a real WebSocket client. The light
//! backend: a prompt with the cwd, line editing and completion, shell
//! state that survives a reconnect and a restart of the runtime, Ctrl-C,
//! writes that reach the workspace; a client that drops reattaches from
//! its last offset and gets exactly the bytes it missed; tickets open one
//! upgrade, once, for one agent, for a while; scopes and bad frames.
//! The computer backend (a real pty on the agent's computer, in either
//! `STEAD_COMPUTER_MODE`): `stty size` follows a resize, a `python3` REPL
//! answers, Ctrl-C stops `sleep 100`, what the shell writes reaches the
//! workspace, a dropped client gets exactly what it missed, and a lost
//! computer ends the session with a reason, its transcript still readable.

mod common;

use std::time::Duration;

use common::{base, client, expect_error, expect_ok, expect_status, Agent};
use serde_json::{json, Value};
use stead_harness::terminal::{Frame, Terminal};
use stead_harness::{temp_state, Runtime, DEV_TOKEN};

const WAIT: Duration = Duration::from_secs(30);

fn open(agent: &Agent, query: &str) -> Terminal {
    Terminal::open(base(), &agent.id, query, Some(DEV_TOKEN)).expect("terminal opens")
}

/// Types `line` and Enter, and reads up to the prompt that follows its
/// output; returns what came after the echo of the line.
fn run(terminal: &mut Terminal, line: &str, prompt: &str) -> String {
    terminal.clear();
    terminal.keys(format!("{line}\r").as_bytes());
    let echoed = format!("{line}\r\n");
    let screen = terminal.expect(&echoed, WAIT);
    let start = screen.find(&echoed).unwrap() + echoed.len();
    loop {
        let screen = String::from_utf8_lossy(&terminal.received).into_owned();
        if let Some(end) = screen[start..].rfind(prompt) {
            if screen.ends_with(prompt) {
                return screen[start..start + end].to_string();
            }
        }
        match terminal.next(WAIT) {
            Some(Frame::Close(code)) => panic!("closed ({code}); received {screen:?}"),
            None => panic!("no prompt {prompt:?} after {line:?}; received {screen:?}"),
            Some(_) => {}
        }
    }
}

/// Mints a token for `agent` with `scopes`.
fn token(agent: &str, scopes: &[&str]) -> String {
    let reply = client().send(
        "POST",
        "/tokens",
        json!({ "agent": agent, "scopes": scopes, "ttl_seconds": 600 })
            .to_string()
            .as_bytes(),
    );
    expect_status(&reply, 201);
    reply.json()["token"].as_str().unwrap().to_string()
}

/// Mints a terminal ticket for `agent` with `bearer`.
fn ticket(agent: &str, bearer: &str, body: Value) -> String {
    let reply = client().with_token(Some(bearer)).send(
        "POST",
        &format!("/agents/{agent}/tickets"),
        body.to_string().as_bytes(),
    );
    expect_status(&reply, 201);
    let minted = reply.json();
    assert_eq!(minted["purpose"], "terminal");
    minted["ticket"].as_str().unwrap().to_string()
}

/// The refusal of the terminal upgrade `query` of agent `agent` with
/// `token` (and the WebSocket client's headers): its status and body. (A
/// WebSocket client's handshake error does not always hold the body.)
fn refusal(agent: &str, query: &str, token: Option<&str>) -> (u16, Value) {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let mut headers = vec![
        ("Connection", "Upgrade"),
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];
    if let Some(bearer) = &bearer {
        headers.push(("Authorization", bearer));
    }
    let reply = common::raw(
        "GET",
        &format!("/agents/{agent}/terminal?{query}"),
        &headers,
        b"",
    );
    assert_ne!(reply.status, 101, "the upgrade of {query:?} was accepted");
    (reply.status, reply.json())
}

/// [`refusal`], checked to be `status` with `code` and a message.
#[track_caller]
fn refused_with(agent: &str, query: &str, token: Option<&str>, status: u16, code: &str) {
    let (got, body) = refusal(agent, query, token);
    assert_eq!(
        (got, body["error"]["code"].as_str()),
        (status, Some(code)),
        "{query}: {body}"
    );
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
}

#[test]
fn the_light_shell_keeps_its_state_across_lines_and_reconnects() {
    let agent = Agent::new("term-state");
    agent.ok("mkdir", json!({ "path": "/x" }));
    let mut terminal = open(&agent, "backend=light&cols=100&rows=30");
    assert_eq!(terminal.offset, 0);
    terminal.expect("/$ ", WAIT);
    assert_eq!(run(&mut terminal, "cd /x; A=1", "/x$ "), "");
    assert_eq!(
        run(
            &mut terminal,
            "f() { echo \"f:$1\"; }; alias ll='echo listed'; set -o noglob",
            "/x$ "
        ),
        ""
    );
    assert_eq!(run(&mut terminal, "f a; ll", "/x$ "), "f:a\r\nlisted\r\n");
    assert_eq!(run(&mut terminal, "false", "/x$ "), "");
    assert_eq!(
        run(&mut terminal, "echo $? $COLUMNS $LINES", "/x$ "),
        "1 100 30\r\n"
    );
    let session = terminal.session.clone();
    terminal.close();

    // Reattached: the same shell.
    let mut again = open(&agent, &format!("session={session}"));
    again.expect("/x$ ", WAIT);
    assert_eq!(
        run(&mut again, "pwd; echo $A; f b; ll; echo /*", "/x$ "),
        "/x\r\n1\r\nf:b\r\nlisted\r\n/*\r\n"
    );
    // A file written in the terminal is in the workspace.
    run(&mut again, "echo from-the-terminal > note.txt", "/x$ ");
    assert_eq!(agent.read("/x/note.txt"), "from-the-terminal\n");
    // `exit` ends the session with its status.
    again.clear();
    again.keys(b"exit 3\r");
    let exit = again.expect_message("exit", WAIT);
    assert_eq!(
        (exit["code"].as_i64(), exit["reason"].as_str()),
        (Some(3), Some("exited"))
    );
    let listed = expect_ok(&agent.send("GET", "/terminals", b""));
    let listed = listed["terminals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == session.as_str())
        .cloned()
        .expect("the session is listed");
    assert_eq!(listed["state"], "ended");
    assert_eq!(listed["exit_code"], 3);
    // Its transcript stays readable.
    let replay = open(&agent, &format!("session={session}&from=0"));
    let mut replay = replay;
    replay.expect("from-the-terminal", WAIT);
    assert_eq!(replay.expect_message("exit", WAIT)["code"], 3);
}

#[test]
fn the_shell_state_survives_a_restart_of_the_runtime() {
    let state = temp_state();
    let first = Runtime::start(state.path());
    let agent = Agent::create_on(first.client(), "term-restart");
    agent.ok("mkdir", json!({ "path": "/x" }));
    let mut terminal = Terminal::open(first.base(), &agent.id, "", Some(DEV_TOKEN)).unwrap();
    terminal.expect("/$ ", WAIT);
    run(&mut terminal, "cd /x; A=1", "/x$ ");
    let (session, offset) = (terminal.session.clone(), terminal.offset);
    terminal.close();
    first.stop();

    let second = Runtime::start(state.path());
    let mut terminal = Terminal::open(
        second.base(),
        &agent.id,
        &format!("session={session}&from={offset}"),
        Some(DEV_TOKEN),
    )
    .unwrap();
    assert_eq!(terminal.offset, offset);
    assert!(terminal.received.is_empty(), "{:?}", terminal.received);
    assert_eq!(run(&mut terminal, "pwd; echo $A", "/x$ "), "/x\r\n1\r\n");
    second.stop();
}

#[test]
fn a_client_that_drops_gets_exactly_the_bytes_it_missed() {
    let agent = Agent::new("term-reattach");
    let mut typist = open(&agent, "");
    typist.expect("/$ ", WAIT);
    let session = typist.session.clone();
    let mut watcher = open(&agent, &format!("session={session}&from=0"));
    watcher.expect("/$ ", WAIT);
    run(&mut typist, "echo one", "/$ ");
    watcher.expect("one\r\n/$ ", WAIT);
    let (seen, at) = (watcher.received.clone(), watcher.offset);
    watcher.drop_connection();
    // Printed while the watcher is away.
    run(&mut typist, "seq 1 2000", "/$ ");
    run(&mut typist, "echo two", "/$ ");
    let mut back = open(&agent, &format!("session={session}&from={at}"));
    assert_eq!(back.offset, at);
    back.expect("two\r\n/$ ", WAIT);
    // Nothing more comes: the replay is exactly what the typist saw after `at`.
    assert!(back.next(Duration::from_millis(300)).is_none());
    let mut whole = seen;
    whole.extend_from_slice(&back.received);
    let everything = open(&agent, &format!("session={session}&from=0"));
    let mut everything = everything;
    everything.expect("two\r\n/$ ", WAIT);
    assert_eq!(
        String::from_utf8_lossy(&whole),
        String::from_utf8_lossy(&everything.received)
    );
    assert!(String::from_utf8_lossy(&whole).contains("1999\r\n2000\r\n"));
    // An attach frame on an open socket replays too.
    back.clear();
    back.control(&json!({ "type": "attach", "session": session, "from": at }));
    let ready = back.expect_message("ready", WAIT);
    assert_eq!(ready["offset"], at);
    back.expect("two\r\n/$ ", WAIT);
}

#[test]
fn line_editing_history_completion_and_ctrl_c() {
    let agent = Agent::new("term-keys");
    agent.write("/proj/some-long-name.txt", "contents\n");
    let mut terminal = open(&agent, "");
    terminal.expect("/$ ", WAIT);
    // Left arrow and insert, Ctrl-A/E, Ctrl-U, Ctrl-W.
    terminal.clear();
    terminal.keys(b"eho\x1b[D\x1b[Dc\x05 hi\r");
    terminal.expect("ho hi\r\nhi\r\n/$ ", WAIT);
    terminal.clear();
    terminal.keys(b"rm -rf /proj\x15echo x y\x17z\r");
    terminal.expect("z\r\n/$ ", WAIT);
    // Up arrow brings the last line back.
    terminal.clear();
    terminal.keys(b"\x1b[A\r");
    terminal.expect("z\r\n/$ ", WAIT);
    // Tab completes a path and a command.
    terminal.clear();
    terminal.keys(b"cat /proj/so\t");
    terminal.expect("me-long-name.txt ", WAIT);
    terminal.keys(b"\r");
    terminal.expect("contents\r\n/$ ", WAIT);
    terminal.clear();
    terminal.keys(b"basen\t/a/b.c\r");
    terminal.expect("b.c\r\n/$ ", WAIT);
    // Ctrl-C cancels a line being typed, and interrupts a running sleep.
    terminal.clear();
    terminal.keys(b"echo never\x03");
    terminal.expect("^C\r\n/$ ", WAIT);
    terminal.clear();
    let started = std::time::Instant::now();
    terminal.keys(b"sleep 100\r");
    std::thread::sleep(Duration::from_millis(500));
    // Typed while it runs: dropped by the interrupt, as a terminal does.
    terminal.keys(b"echo typed-ahead");
    terminal.keys(b"\x03");
    let screen = terminal.expect("^C\r\n/$ ", WAIT);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(!screen.contains("typed-ahead"), "{screen:?}");
    assert!(
        !screen.contains("limit"),
        "a terminal's sleep is not an exec's: {screen:?}"
    );
    assert_eq!(run(&mut terminal, "echo $?", "/$ "), "130\r\n");
    // Ctrl-D on an empty line ends the session.
    // with the last status.
    terminal.keys(b"false\r\x04");
    assert_eq!(terminal.expect_message("exit", WAIT)["code"], 1);
}

#[test]
fn tickets_open_one_upgrade_once_for_one_agent() {
    let agent = Agent::new("term-ticket");
    let other = Agent::new("term-ticket-other");
    let bearer = token(&agent.id, &["exec:shell"]);
    let first = ticket(&agent.id, &bearer, json!({ "purpose": "terminal" }));
    let mut terminal = Terminal::open(base(), &agent.id, &format!("ticket={first}"), None)
        .expect("a ticket opens the terminal");
    terminal.expect("/$ ", WAIT);
    assert_eq!(run(&mut terminal, "echo ok", "/$ "), "ok\r\n");
    // Used once.
    refused_with(
        &agent.id,
        &format!("ticket={first}"),
        None,
        401,
        "TICKET_USED",
    );
    // Another agent's ticket opens nothing here.
    let others = ticket(&other.id, DEV_TOKEN, json!({ "purpose": "terminal" }));
    refused_with(
        &agent.id,
        &format!("ticket={others}"),
        None,
        401,
        "TICKET_INVALID",
    );
    // It expires.
    let short = ticket(
        &agent.id,
        &bearer,
        json!({ "purpose": "terminal", "ttl_seconds": 1 }),
    );
    std::thread::sleep(Duration::from_millis(1500));
    refused_with(
        &agent.id,
        &format!("ticket={short}"),
        None,
        401,
        "TICKET_EXPIRED",
    );
    // A ticket opens the terminal route only.
    let fresh = ticket(&agent.id, &bearer, json!({ "purpose": "terminal" }));
    let reply = client().with_token(None).send(
        "GET",
        &format!("/agents/{}/terminals?ticket={fresh}", agent.id),
        b"",
    );
    expect_error(&reply, 401, "UNAUTHORIZED");
    // Bad ticket requests.
    for body in [
        json!({ "purpose": "shell" }),
        json!({ "purpose": "terminal", "ttl_seconds": 61 }),
    ] {
        let reply = client().with_token(Some(&bearer)).send(
            "POST",
            &format!("/agents/{}/tickets", agent.id),
            body.to_string().as_bytes(),
        );
        expect_error(&reply, 400, "INVALID_REQUEST");
    }
    // Minting needs an exec scope.
    let reader = token(&agent.id, &["read"]);
    let reply = client().with_token(Some(&reader)).send(
        "POST",
        &format!("/agents/{}/tickets", agent.id),
        br#"{"purpose":"terminal"}"#,
    );
    expect_error(&reply, 403, "FORBIDDEN");
}

#[test]
fn scopes_and_agents_are_checked_before_the_upgrade() {
    let agent = Agent::new("term-scopes");
    let reader = token(&agent.id, &["read"]);
    refused_with(&agent.id, "", Some(&reader), 403, "FORBIDDEN");
    refused_with(&agent.id, "", None, 401, "UNAUTHORIZED");
    // Another agent's token.
    let other = Agent::new("term-scopes-other");
    let foreign = token(&other.id, &["exec:shell", "exec:computer"]);
    refused_with(&agent.id, "", Some(&foreign), 403, "FORBIDDEN");
    refused_with(
        &agent.id,
        "backend=computer",
        Some(&foreign),
        403,
        "FORBIDDEN",
    );
    // A light-shell token opens no computer terminal.
    let shell_only = token(&agent.id, &["exec:shell"]);
    refused_with(
        &agent.id,
        "backend=computer",
        Some(&shell_only),
        403,
        "FORBIDDEN",
    );
    // Another agent's session is unknown here.
    let mut theirs = open(&other, "");
    theirs.expect("/$ ", WAIT);
    refused_with(
        &agent.id,
        &format!("session={}", theirs.session),
        Some(DEV_TOKEN),
        404,
        "TERMINAL_NOT_FOUND",
    );
    // Without an upgrade.
    let reply = agent.send("GET", "/terminal", b"");
    expect_error(&reply, 426, "UPGRADE_REQUIRED");
}

#[test]
fn bad_frames_get_an_error_and_leave_the_session_unharmed() {
    let agent = Agent::new("term-bad");
    let mut terminal = open(&agent, "");
    terminal.expect("/$ ", WAIT);
    run(&mut terminal, "B=kept", "/$ ");
    let bad: [(&str, &str); 6] = [
        ("{nope", "MALFORMED_JSON"),
        (r#"{"type":"jump"}"#, "INVALID_REQUEST"),
        (r#"{"type":"resize","cols":0,"rows":10}"#, "INVALID_REQUEST"),
        (
            r#"{"type":"resize","cols":100000,"rows":10}"#,
            "INVALID_REQUEST",
        ),
        (
            r#"{"type":"attach","session":"nope"}"#,
            "TERMINAL_NOT_FOUND",
        ),
        (
            r#"{"type":"attach","session":"nope","from":1}"#,
            "TERMINAL_NOT_FOUND",
        ),
    ];
    for (frame, code) in bad {
        terminal.text(frame);
        let error = terminal.expect_message("error", WAIT);
        assert_eq!(error["code"], code, "{frame}: {error}");
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let session = terminal.session.clone();
    terminal.control(&json!({ "type": "attach", "session": session, "from": 1_000_000 }));
    assert_eq!(
        terminal.expect_message("error", WAIT)["code"],
        "OFFSET_BEYOND_END"
    );
    // An oversized frame types nothing.
    terminal.keys(&vec![b'x'; 65 * 1024]);
    assert_eq!(
        terminal.expect_message("error", WAIT)["code"],
        "BODY_TOO_LARGE"
    );
    terminal.control(&json!({ "type": "resize", "cols": 132, "rows": 50 }));
    assert_eq!(
        run(&mut terminal, "echo $B $COLUMNS", "/$ "),
        "kept 132\r\n"
    );
    // Refused before the upgrade.
    for (query, status, code) in [
        ("cols=0", 400, "INVALID_REQUEST"),
        ("cols=100000", 400, "INVALID_REQUEST"),
        ("session=nope", 404, "TERMINAL_NOT_FOUND"),
        ("backend=vm", 400, "INVALID_REQUEST"),
    ] {
        refused_with(&agent.id, query, Some(DEV_TOKEN), status, code);
    }
    refused_with(
        &agent.id,
        &format!("session={session}&from=999999"),
        Some(DEV_TOKEN),
        400,
        "OFFSET_BEYOND_END",
    );
    // Deleting ends it: attached clients get `exit`, and it is gone.
    let deleted = expect_ok(&agent.send("DELETE", &format!("/terminals/{session}"), b""));
    assert_eq!(deleted["deleted"], session.as_str());
    let exit = terminal.expect_message("exit", WAIT);
    assert_eq!(exit["reason"], "closed");
    expect_error(
        &agent.send("DELETE", &format!("/terminals/{session}"), b""),
        404,
        "TERMINAL_NOT_FOUND",
    );
}

#[test]
fn keys_and_resizes_sent_back_to_back_arrive_in_order() {
    let agent = Agent::new("term-order");
    let mut terminal = open(&agent, "cols=80&rows=24");
    terminal.expect("/$ ", WAIT);
    terminal.clear();
    // 200 distinct lines, each its own frame, sent without waiting, then a
    // resize, then a line that shows the size.
    for n in 0..200 {
        terminal.keys(format!("echo line-{n}\r").as_bytes());
    }
    terminal.control(&json!({ "type": "resize", "cols": 123, "rows": 45 }));
    terminal.keys(b"echo size=$COLUMNS,$LINES\r");
    let screen = terminal.expect("size=123,45\r\n/$ ", WAIT);
    let printed: Vec<&str> = screen
        .split("\r\n")
        .filter(|line| line.starts_with("line-"))
        .collect();
    let expected: Vec<String> = (0..200).map(|n| format!("line-{n}")).collect();
    assert_eq!(printed, expected);
    // Keys typed while a line waits out its sleep run after it, in order.
    terminal.clear();
    terminal.keys(b"sleep 1; echo slept\r");
    terminal.keys(b"echo after-1\r");
    terminal.keys(b"echo after-2\r");
    let screen = terminal.expect("after-2\r\n/$ ", WAIT);
    assert!(
        screen
            .ends_with("slept\r\n/$ echo after-1\r\nafter-1\r\n/$ echo after-2\r\nafter-2\r\n/$ "),
        "{screen:?}"
    );
}

/// Opens a computer session on `base` for `agent` and waits until its
/// shell answers.
fn open_computer_on(base: &str, agent: &Agent, query: &str) -> Terminal {
    let query = format!("backend=computer&{query}");
    let mut terminal = Terminal::open(base, &agent.id, &query, Some(DEV_TOKEN))
        .expect("a computer terminal opens");
    // The typed line echoes `$((40+2))`; only the shell prints 42.
    terminal.keys(b"echo ready-$((40+2))\r");
    terminal.expect("ready-42", Duration::from_secs(120));
    terminal
}

/// Types `keys` and reads until what follows shows `expected`.
fn answers(terminal: &mut Terminal, keys: &[u8], expected: &str) {
    terminal.clear();
    terminal.keys(keys);
    terminal.expect(expected, WAIT);
}

/// Reads `terminal` until nothing comes for half a second.
fn drain(terminal: &mut Terminal) {
    while terminal.next(Duration::from_millis(500)).is_some() {}
}

#[test]
fn the_computer_terminal_is_a_real_pty() {
    let agent = Agent::new("term-pty");
    let mut terminal = open_computer_on(base(), &agent, "cols=100&rows=30");
    answers(
        &mut terminal,
        b"echo $TERM; stty size\r",
        "xterm-256color\r\n30 100\r\n",
    );
    terminal.control(&json!({ "type": "resize", "cols": 132, "rows": 43 }));
    answers(&mut terminal, b"stty size\r", "43 132\r\n");
    // An interactive program reads its input from the pty.
    answers(&mut terminal, b"python3 -q\r", ">>> ");
    answers(&mut terminal, b"print(6 * 7)\r", "42\r\n>>> ");
    terminal.keys(b"exit()\r");

    // Ctrl-C reaches the foreground job.
    terminal.clear();
    terminal.keys(b"sleep 100\r");
    std::thread::sleep(Duration::from_millis(500));
    terminal.keys(b"\x03");
    terminal.keys(b"echo \"status:$?\"\r");
    terminal.expect("status:130", Duration::from_secs(10));

    // What the shell writes reaches the workspace.
    terminal.keys(b"echo from-the-pty > /pty.txt\r");
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let read = agent.call("read", json!({ "path": "/pty.txt" }));
        if read.status == 200 {
            assert_eq!(read.json()["content"], "from-the-pty\n");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the file never reached the workspace: {}",
            read.json()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // The shell ends: the session says how; its transcript stays.
    let session = terminal.session.clone();
    terminal.keys(b"exit 7\r");
    let exit = terminal.expect_message("exit", WAIT);
    assert_eq!(
        (exit["code"].as_i64(), exit["reason"].as_str()),
        (Some(7), Some("exited"))
    );
    let mut replay = open(&agent, &format!("session={session}&from=0"));
    replay.expect("status:130", WAIT);
    assert_eq!(replay.expect_message("exit", WAIT)["code"], 7);
}

#[test]
fn a_computer_terminal_client_that_drops_gets_exactly_the_bytes_it_missed() {
    let agent = Agent::new("term-pty-reattach");
    let mut terminal = open_computer_on(base(), &agent, "");
    drain(&mut terminal);
    let session = terminal.session.clone();
    let (seen, at) = (terminal.received.clone(), terminal.offset);
    // Printed while no client is there.
    terminal.keys(b"sleep 1; seq 1 3000; echo done-$((1+1))\r");
    terminal.drop_connection();
    std::thread::sleep(Duration::from_secs(3));
    let mut back = open(&agent, &format!("session={session}&from={at}"));
    assert_eq!(back.offset, at);
    back.expect("3000\r\ndone-2\r\n", WAIT);
    drain(&mut back);
    let mut whole = seen;
    whole.extend_from_slice(&back.received);
    let mut everything = open(&agent, &format!("session={session}&from=0"));
    everything.expect("done-2", WAIT);
    drain(&mut everything);
    assert_eq!(
        String::from_utf8_lossy(&whole),
        String::from_utf8_lossy(&everything.received)
    );
    // The shell lived on meanwhile: it still answers.
    back.clear();
    back.keys(b"echo still-$((3*3))\r");
    back.expect("still-9", WAIT);
}

#[test]
fn a_lost_computer_ends_its_terminal_with_a_reason_and_keeps_the_transcript() {
    // A runtime of its own: the computer is killed.
    let state = temp_state();
    let runtime = Runtime::start(state.path());
    let agent = Agent::create_on(runtime.client(), "term-pty-lost");
    let mut terminal = open_computer_on(runtime.base(), &agent, "");
    let session = terminal.session.clone();
    runtime.machine(&agent.id).kill();
    let exit = terminal.expect_message("exit", Duration::from_secs(60));
    assert_eq!(exit["code"], Value::Null, "{exit}");
    let reason = exit["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("computer"), "{exit}");
    let listed = expect_ok(&agent.send("GET", "/terminals", b""));
    assert_eq!(listed["terminals"][0]["state"], "ended", "{listed}");
    let query = format!("session={session}&from=0");
    let mut replay = Terminal::open(runtime.base(), &agent.id, &query, Some(DEV_TOKEN)).unwrap();
    replay.expect("ready-42", WAIT);
    assert_eq!(replay.expect_message("exit", WAIT)["reason"], reason);
}
