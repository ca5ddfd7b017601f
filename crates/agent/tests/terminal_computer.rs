//! The terminal's computer backend on the fake host, against a real
//! `stead-computer` (a real pty, a real `bash -l`): keys and resizes reach
//! the shell, its output lands in the transcript, a restarted instance
//! reopens the stream where the transcript ends, what the shell writes
//! comes back by live sync, and a lost computer ends the session with a
//! reason while its transcript stays.

mod common;

use std::time::{Duration, Instant};

use common::{agent_with_computer, block_on, pause, tick_until, FakeHost, FakeSocket};
use futures::future::LocalBoxFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use serde_json::Value;
use stead_agent::auth::Caller;
use stead_agent::socket::Incoming;
use stead_agent::{Action, Agent};
use stead_vfs::VPath;

const WAIT: Duration = Duration::from_secs(20);

/// The followers of the agent's terminal streams, polled while a test
/// waits (as the Workspace glue runs them beside its other work).
struct Followers<'a> {
    agent: &'a Agent<FakeHost>,
    running: FuturesUnordered<LocalBoxFuture<'a, ()>>,
}

impl<'a> Followers<'a> {
    fn new(agent: &'a Agent<FakeHost>) -> Self {
        Followers {
            agent,
            running: FuturesUnordered::new(),
        }
    }

    /// Follows the streams for about `ms`.
    fn run_for(&mut self, ms: u64) {
        for follower in self.agent.take_followers() {
            self.running
                .push(Box::pin(self.agent.follow_terminal(follower)));
        }
        let running = &mut self.running;
        block_on(async {
            let deadline = Instant::now() + Duration::from_millis(ms);
            while Instant::now() < deadline {
                if running.is_empty() {
                    pause(10).await;
                    continue;
                }
                let tick = std::pin::pin!(pause(10));
                futures::future::select(running.next(), tick).await;
            }
        });
    }

    /// Follows the streams until `screen` (what `socket` was sent, kept
    /// in `seen`) holds `text`.
    #[track_caller]
    fn expect(&mut self, socket: &FakeSocket, seen: &mut String, text: &str) {
        let start = Instant::now();
        while start.elapsed() < WAIT {
            seen.push_str(&String::from_utf8_lossy(&socket.take_bytes()));
            if seen.contains(text) {
                return;
            }
            self.run_for(25);
        }
        panic!("no {text:?} on the terminal; it shows {seen:?}");
    }

    /// Follows the streams until nothing more comes to `socket` for a
    /// while, keeping it in `seen`.
    fn settle(&mut self, socket: &FakeSocket, seen: &mut String) {
        loop {
            self.run_for(200);
            let more = String::from_utf8_lossy(&socket.take_bytes()).into_owned();
            if more.is_empty() {
                return;
            }
            seen.push_str(&more);
        }
    }

    /// Follows the streams until `socket` was sent a message of `kind`.
    #[track_caller]
    fn expect_message(&mut self, socket: &FakeSocket, kind: &str) -> Value {
        let start = Instant::now();
        while start.elapsed() < WAIT {
            if let Some(message) = socket.take().into_iter().find(|m| m["type"] == kind) {
                return message;
            }
            self.run_for(25);
        }
        panic!("no {kind} message on the terminal");
    }
}

/// Opens the terminal with `query` as the admin.
fn open(agent: &Agent<FakeHost>, query: &[(&str, &str)]) -> FakeSocket {
    common::open_terminal(agent, Caller::Admin, query).expect("the terminal opens")
}

fn keys(agent: &Agent<FakeHost>, socket: &FakeSocket, bytes: &[u8]) {
    block_on(agent.socket_message(socket, Incoming::Binary(bytes.to_vec())));
}

fn control(agent: &Agent<FakeHost>, socket: &FakeSocket, text: &str) {
    block_on(agent.socket_message(socket, Incoming::Text(text.to_string())));
}

/// The session a socket was made ready for.
fn ready_session(socket: &FakeSocket) -> String {
    let ready = socket.take();
    assert_eq!(ready[0]["type"], "ready", "{ready:?}");
    ready[0]["session"].as_str().unwrap().to_string()
}

/// The session's transcript from `from`, read through a socket attached
/// there (as a client that reattaches).
fn transcript(agent: &Agent<FakeHost>, session: &str, from: i64) -> Vec<u8> {
    let from = from.to_string();
    let socket = open(agent, &[("session", session), ("from", from.as_str())]);
    socket.take_bytes()
}

#[test]
fn keys_resizes_and_interrupts_reach_the_shell_and_its_writes_come_back() {
    let (agent, _computer, _dir) = agent_with_computer();
    let mut followers = Followers::new(&agent);
    let socket = open(&agent, &[("backend", "computer"), ("cols", "100")]);
    let session = ready_session(&socket);
    let mut seen = String::new();

    keys(&agent, &socket, b"echo \"$TERM:$((6*7))\"\r");
    followers.expect(&socket, &mut seen, "xterm-256color:42");

    control(&agent, &socket, r#"{"type":"resize","cols":120,"rows":40}"#);
    keys(&agent, &socket, b"stty size\r");
    followers.expect(&socket, &mut seen, "40 120");

    keys(&agent, &socket, b"sleep 100\r");
    followers.run_for(300);
    keys(&agent, &socket, b"\x03");
    keys(&agent, &socket, b"echo \"status:$?\"\r");
    followers.expect(&socket, &mut seen, "status:130");

    keys(&agent, &socket, b"echo made-here > /made.txt\r");
    let path = VPath::parse("/made.txt").unwrap();
    tick_until(&agent, "the shell's file in the workspace", || {
        agent.vfs().read_file(&path).is_ok()
    });
    assert_eq!(agent.vfs().read_file(&path).unwrap(), b"made-here\n");

    // Everything shown is in the transcript, in order.
    followers.settle(&socket, &mut seen);
    let kept = String::from_utf8_lossy(&transcript(&agent, &session, 0)).into_owned();
    assert_eq!(kept, seen);

    // The shell ends: the session says how, and its transcript stays.
    keys(&agent, &socket, b"exit 3\r");
    let exit = followers.expect_message(&socket, "exit");
    assert_eq!(
        (exit["code"].as_i64(), exit["reason"].as_str()),
        (Some(3), Some("exited"))
    );
    assert!(!transcript(&agent, &session, 0).is_empty());
}

#[test]
fn a_restarted_instance_reads_on_where_the_transcript_ends() {
    let (agent, _computer, _dir) = agent_with_computer();
    let socket = open(&agent, &[("backend", "computer")]);
    let session = ready_session(&socket);
    {
        let mut followers = Followers::new(&agent);
        let mut seen = String::new();
        keys(&agent, &socket, b"echo one-$((1+0))\r");
        followers.expect(&socket, &mut seen, "one-1");
    }
    let offset = transcript(&agent, &session, 0).len() as i64;
    // The instance goes (its stream with it) while the shell prints on.
    let transport = agent.host().computer.borrow().clone();
    let db = agent.host().db.clone();
    drop(socket);
    drop(agent);
    let again = Agent::new(FakeHost::new(db));
    *again.host().computer.borrow_mut() = transport;
    let socket = open(
        &again,
        &[("session", &session), ("from", &offset.to_string())],
    );
    ready_session(&socket);
    let mut followers = Followers::new(&again);
    let mut seen = String::new();
    keys(&again, &socket, b"echo two-$((1+1))\r");
    followers.expect(&socket, &mut seen, "two-2");
    // What this client got is exactly the transcript from its offset.
    followers.settle(&socket, &mut seen);
    let kept = String::from_utf8_lossy(&transcript(&again, &session, offset)).into_owned();
    assert_eq!(kept, seen);
}

#[test]
fn a_lost_computer_ends_the_session_with_a_reason_and_keeps_its_transcript() {
    let (agent, mut computer, _dir) = agent_with_computer();
    let mut followers = Followers::new(&agent);
    let socket = open(&agent, &[("backend", "computer")]);
    let session = ready_session(&socket);
    let mut seen = String::new();
    keys(&agent, &socket, b"echo before-$((2*2))\r");
    followers.expect(&socket, &mut seen, "before-4");
    // A new instance of the program: the shell is gone with the old one.
    computer.restart();
    let exit = followers.expect_message(&socket, "exit");
    assert_eq!(exit["code"], Value::Null);
    let reason = exit["reason"].as_str().unwrap();
    assert!(reason.contains("the computer"), "{reason}");
    let kept = String::from_utf8_lossy(&transcript(&agent, &session, 0)).into_owned();
    assert!(kept.contains("before-4"), "{kept:?}");
    // Keys to it now are refused.
    keys(&agent, &socket, b"echo after\r");
    let refused = socket.take();
    assert!(
        refused.iter().any(|m| m["code"] == "TERMINAL_ENDED"),
        "{refused:?}"
    );
    let listed = common::ok(&agent, "a", Action::Terminals, "");
    assert_eq!(listed["terminals"][0]["state"], "ended");
}
