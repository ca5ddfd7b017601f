//! The terminal's core on the fake host: opening and attaching through the
//! dispatch, the light backend's keys and shell, the transcript replayed
//! from an offset by another instance over the same database (a restart),
//! tickets, and bad frames.

mod common;

use common::{agent, create, failure, ok, request, FakeHost, FakeSocket};
use futures::executor::block_on;
use serde_json::Value;
use stead_agent::auth::{Caller, Scope};
use stead_agent::socket::Incoming;
use stead_agent::{Action, Agent, Host, Socket};

/// Opens the terminal with `query` as `caller`: the accepted socket, or
/// the refusal's status and body.
fn open(
    agent: &Agent<FakeHost>,
    caller: Caller,
    query: &[(&str, &str)],
) -> Result<FakeSocket, (u16, Value)> {
    common::open_terminal(agent, caller, query)
}

/// The refusal of an upgrade that should be refused.
#[track_caller]
fn refused(opened: Result<FakeSocket, (u16, Value)>) -> (u16, Value) {
    match opened {
        Ok(_) => panic!("the upgrade was accepted"),
        Err(refusal) => refusal,
    }
}

fn keys(agent: &Agent<FakeHost>, socket: &FakeSocket, bytes: &[u8]) {
    block_on(agent.socket_message(socket, Incoming::Binary(bytes.to_vec())));
}

fn control(agent: &Agent<FakeHost>, socket: &FakeSocket, text: &str) {
    block_on(agent.socket_message(socket, Incoming::Text(text.to_string())));
}

fn screen(socket: &FakeSocket) -> String {
    String::from_utf8_lossy(&socket.take_bytes()).into_owned()
}

fn token(id: &str, scopes: &[Scope]) -> Caller {
    Caller::Token {
        id: id.into(),
        scopes: scopes.to_vec(),
        expires: i64::MAX / 2,
    }
}

#[test]
fn a_light_session_runs_lines_and_replays_after_a_restart() {
    let agent = agent();
    create(&agent, "a");
    let socket = open(&agent, Caller::Admin, &[("cols", "90")]).unwrap();
    let ready = socket.take();
    assert_eq!(ready[0]["type"], "ready");
    assert_eq!(ready[0]["offset"], 0);
    let session = ready[0]["session"].as_str().unwrap().to_string();
    assert_eq!(screen(&socket), "/$ ");
    keys(&agent, &socket, b"mkdir /x; cd /x; A=1\r");
    assert_eq!(screen(&socket), "mkdir /x; cd /x; A=1\r\n/x$ ");
    keys(&agent, &socket, b"echo $A $COLUMNS\rprintf 'a\\nb\\n'\r");
    assert_eq!(
        screen(&socket),
        "echo $A $COLUMNS\r\n1 90\r\n/x$ printf 'a\\nb\\n'\r\na\r\nb\r\n/x$ "
    );
    let listed = ok(&agent, "a", Action::Terminals, "");
    let end = listed["terminals"][0]["end"].as_i64().unwrap();
    assert_eq!(listed["terminals"][0]["attached"], 1);

    // Another instance over the same database: a restart.
    let db = agent.host().db.clone();
    let restarted = Agent::new(FakeHost::new(db));
    let again = open(
        &restarted,
        Caller::Admin,
        &[("session", &session), ("from", "3"), ("cols", "70")],
    )
    .unwrap();
    assert_eq!(again.take()[0]["offset"], 3);
    let replayed = screen(&again);
    assert!(replayed.starts_with("mkdir /x;"), "{replayed:?}");
    assert_eq!(replayed.len() as i64, end - 3);
    keys(&restarted, &again, b"pwd; echo $A $COLUMNS\r");
    assert_eq!(
        screen(&again),
        "pwd; echo $A $COLUMNS\r\n/x\r\n1 70\r\n/x$ "
    );
    // The line is in the audit log, and undo takes it back.
    keys(&restarted, &again, b"echo hi > /x/f\r");
    screen(&again);
    let audit = ok(&restarted, "a", Action::Audit, "");
    let lines: Vec<&str> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "terminal.line")
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    assert_eq!(lines[0], "echo hi > /x/f");
    ok(&restarted, "a", Action::Undo, "{}");
    let (status, body) = common::call(
        &restarted,
        request(
            "a",
            Action::Tool(stead_agent::Tool::Stat),
            Caller::Admin,
            r#"{"path":"/x/f"}"#,
        ),
    );
    assert_eq!(failure(status, &body), (404, "ENOENT"));
    // Ctrl-D ends it: exit with the last status, and the socket closes.
    keys(&restarted, &again, b"false\r\x04");
    let sent = again.take();
    let exit = sent.iter().find(|m| m["type"] == "exit").expect("exit");
    assert_eq!(
        (exit["code"].as_i64(), exit["reason"].as_str()),
        (Some(1), Some("exited"))
    );
    assert_eq!(again.closed(), Some(1000));
    assert!(screen(&again).ends_with("exit\r\n"));
}

#[test]
fn tickets_carry_their_minters_scopes_once() {
    let agent = agent();
    create(&agent, "a");
    let shell = token("t1", &[Scope::ExecShell]);
    let minted = {
        let (status, body) = common::call(
            &agent,
            request(
                "a",
                Action::TicketCreate,
                shell.clone(),
                r#"{"purpose":"terminal"}"#,
            ),
        );
        assert_eq!(status, 201, "{body}");
        body["ticket"].as_str().unwrap().to_string()
    };
    let socket = open(&agent, Caller::Anonymous, &[("ticket", &minted)]).unwrap();
    assert_eq!(socket.take()[0]["type"], "ready");
    assert_eq!(socket.state().unwrap().caller, shell);
    let (status, body) = refused(open(&agent, Caller::Anonymous, &[("ticket", &minted)]));
    assert_eq!(failure(status, &body), (401, "TICKET_USED"));
    let (status, body) = refused(open(
        &agent,
        Caller::Anonymous,
        &[("ticket", "stt_made_up")],
    ));
    assert_eq!(failure(status, &body), (401, "TICKET_INVALID"));
    // No ticket, no credential.
    let (status, _) = refused(open(&agent, Caller::Anonymous, &[]));
    assert_eq!(status, 401);
    // Its scopes decide: a shell ticket opens no computer terminal.
    let (status, body) = common::call(
        &agent,
        request(
            "a",
            Action::TicketCreate,
            shell,
            r#"{"purpose":"terminal","ttl_seconds":5}"#,
        ),
    );
    let second = body["ticket"].as_str().unwrap().to_string();
    assert_eq!(status, 201);
    let (status, body) = refused(open(
        &agent,
        Caller::Anonymous,
        &[("ticket", &second), ("backend", "computer")],
    ));
    assert_eq!(failure(status, &body), (403, "FORBIDDEN"));
    // A reader mints none.
    let (status, body) = common::call(
        &agent,
        request(
            "a",
            Action::TicketCreate,
            token("r", &[Scope::Read]),
            r#"{"purpose":"terminal"}"#,
        ),
    );
    assert_eq!(failure(status, &body), (403, "FORBIDDEN"));
}

#[test]
fn bad_frames_leave_the_session_as_it_was() {
    let agent = agent();
    create(&agent, "a");
    let socket = open(&agent, Caller::Admin, &[]).unwrap();
    socket.take();
    keys(&agent, &socket, b"B=kept\r");
    screen(&socket);
    for (frame, code) in [
        ("{nope", "MALFORMED_JSON"),
        (r#"{"type":"resize","cols":0,"rows":5}"#, "INVALID_REQUEST"),
        (
            r#"{"type":"resize","cols":100000,"rows":5}"#,
            "INVALID_REQUEST",
        ),
        (
            r#"{"type":"attach","session":"nope"}"#,
            "TERMINAL_NOT_FOUND",
        ),
        (r#"{"type":"ping"}"#, "INVALID_REQUEST"),
    ] {
        control(&agent, &socket, frame);
        let sent = socket.take();
        assert_eq!(sent[0]["type"], "error", "{frame}");
        assert_eq!(sent[0]["code"], code, "{frame}: {sent:?}");
    }
    keys(
        &agent,
        &socket,
        &vec![b'x'; stead_agent::terminal::MAX_INPUT + 1],
    );
    assert_eq!(socket.take()[0]["code"], "BODY_TOO_LARGE");
    assert_eq!(screen(&socket), "", "nothing of it was typed");
    control(&agent, &socket, r#"{"type":"resize","cols":40,"rows":10}"#);
    keys(&agent, &socket, b"echo $B $COLUMNS $LINES\r");
    assert_eq!(
        screen(&socket),
        "echo $B $COLUMNS $LINES\r\nkept 40 10\r\n/$ "
    );
}

#[test]
fn a_revoked_or_expired_token_ends_its_terminal_sockets() {
    let agent = agent();
    create(&agent, "a");
    let socket = open(&agent, token("t9", &[Scope::ExecShell]), &[]).unwrap();
    socket.take();
    ok(&agent, "a", Action::RevokeToken, r#"{"id":"t9"}"#);
    let sent = socket.take();
    assert_eq!(sent[0]["type"], "error");
    assert_eq!(sent[0]["code"], "TOKEN_REVOKED", "{sent:?}");
    assert_eq!(socket.closed(), Some(4401));
    // An expired one: the next frame is refused and types nothing.
    let short = Caller::Token {
        id: "t10".into(),
        scopes: vec![Scope::ExecShell],
        expires: agent.host().now_ms() / 1000 + 60,
    };
    let socket = open(&agent, short, &[]).unwrap();
    socket.take();
    screen(&socket);
    agent.host().advance(61_000);
    keys(&agent, &socket, b"echo no\r");
    assert_eq!(socket.take()[0]["code"], "TOKEN_EXPIRED");
    assert_eq!(screen(&socket), "");
    assert_eq!(socket.closed(), Some(4401));
}

/// A line waiting out its `sleep`: Ctrl-C (from any socket attached) cuts
/// the wait short; a restart during the wait owes the prompt, shown before
/// the next keys.
#[test]
fn a_sleeping_line_is_interrupted_and_a_restart_during_it_owes_the_prompt() {
    use futures::executor::LocalPool;
    use futures::task::LocalSpawnExt;
    use std::rc::Rc;

    let agent = Rc::new(agent());
    create(&agent, "a");
    let socket = open(&agent, Caller::Admin, &[]).unwrap();
    socket.take();
    screen(&socket);
    let mut pool = LocalPool::new();
    let (sleeper, on) = (agent.clone(), socket.clone());
    pool.spawner()
        .spawn_local(async move {
            sleeper
                .socket_message(&on, Incoming::Binary(b"sleep 30\r".to_vec()))
                .await
        })
        .unwrap();
    pool.run_until_stalled();
    assert_eq!(screen(&socket), "sleep 30\r\n", "the prompt waits");
    // Typed ahead, then Ctrl-C: the interrupt drops what was typed.
    keys(&agent, &socket, b"echo typed");
    keys(&agent, &socket, b"\x03");
    let started = std::time::Instant::now();
    pool.run();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(screen(&socket), "^C\r\n/$ ");
    keys(&agent, &socket, b"echo $?\r");
    assert_eq!(screen(&socket), "echo $?\r\n130\r\n/$ ");

    // A restart while a line sleeps: the next keys come after its prompt.
    let mut pool = LocalPool::new();
    let (sleeper, on) = (agent.clone(), socket.clone());
    pool.spawner()
        .spawn_local(async move {
            sleeper
                .socket_message(&on, Incoming::Binary(b"sleep 30\r".to_vec()))
                .await
        })
        .unwrap();
    pool.run_until_stalled();
    drop(pool);
    screen(&socket);
    let restarted = Agent::new(FakeHost::new(agent.host().db.clone()));
    let socket = restarted.host().accept(&socket.state().unwrap());
    keys(&restarted, &socket, b"echo back\r");
    assert_eq!(screen(&socket), "/$ echo back\r\nback\r\n/$ ");
}

#[test]
fn a_shell_state_too_large_to_keep_is_not_kept_and_the_session_goes_on() {
    let agent = agent();
    create(&agent, "a");
    let socket = open(&agent, Caller::Admin, &[]).unwrap();
    socket.take();
    screen(&socket);
    keys(&agent, &socket, b"SMALL=kept\r");
    screen(&socket);
    keys(&agent, &socket, b"BIG=$(seq 1 300000)\r");
    let shown = screen(&socket);
    assert!(shown.contains("was not kept"), "{shown:?}");
    keys(&agent, &socket, b"echo $SMALL ${#BIG}\r");
    assert_eq!(screen(&socket), "echo $SMALL ${#BIG}\r\nkept 0\r\n/$ ");
}

#[test]
fn a_command_that_goes_on_is_asked_for_with_the_continuation_prompt() {
    let agent = agent();
    create(&agent, "a");
    let socket = open(&agent, Caller::Admin, &[]).unwrap();
    socket.take();
    screen(&socket);
    keys(&agent, &socket, b"for i in 1 2; do\r");
    assert_eq!(screen(&socket), "for i in 1 2; do\r\n> ");
    keys(&agent, &socket, b"echo n$i\rdone\r");
    assert_eq!(screen(&socket), "echo n$i\r\n> done\r\nn1\r\nn2\r\n/$ ");
    // Ctrl-C drops what was typed of it.
    keys(&agent, &socket, b"echo 'open\r\x03echo fresh\r");
    assert_eq!(
        screen(&socket),
        "echo 'open\r\n> ^C\r\n/$ echo fresh\r\nfresh\r\n/$ "
    );
    // Ctrl-D ends the command unfinished, not the session.
    keys(&agent, &socket, b"if true; then\r\x04");
    let shown = screen(&socket);
    assert!(shown.contains("unexpected end of file"), "{shown:?}");
    assert!(shown.ends_with("/$ "), "{shown:?}");
    assert!(socket.closed().is_none());
}
