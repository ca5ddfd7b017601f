//! The interactive terminal: keystroke-to-echo round trips against a
//! WebSocket ping to the same Durable Object.
//!
//! ```text
//! cargo run --release -p stead-bench -- terminal [--quick] [--url http://host:port]
//! ```
//!
//! One light terminal and one `/ws` socket on the same agent, each on its
//! own connection. In turn (rotating which goes first): a key (`x`) is
//! sent on the terminal and timed until its echo comes back, and
//! `{"type":"ping","id":N}` (which, having an id, reaches the agent rather
//! than the runtime's automatic answer) until its `pong`. Rows: the
//! keystroke's p50 and p99 against the ping's. Aim: at most the floor plus
//! 5 ms, as a ratio of this run's floor. The computer's rows (keystroke on
//! a pseudo-terminal, `cat` of 50 MB through it) are `n/a` until its
//! terminal exists.

use std::time::{Duration, Instant};

use serde_json::json;
use stead_harness::terminal::{Frame, Terminal};
use stead_harness::Socket;

use crate::agent::Agent;
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{millis, Latency};

const WAIT: Duration = Duration::from_secs(30);
const WARM_UP: usize = 50;
/// What the light backend may add to the floor.
const LIGHT_ALLOWANCE_MS: f64 = 5.0;
/// Keys typed before the line is cleared (Ctrl-U), so it stays short.
const LINE: usize = 100;

/// Sends one key and waits for its echo.
fn keystroke(terminal: &mut Terminal) -> Duration {
    let before = terminal.offset;
    let started = Instant::now();
    terminal.keys(b"x");
    while terminal.offset == before {
        match terminal.next(WAIT) {
            Some(Frame::Bytes(_) | Frame::Json(_)) => {}
            Some(Frame::Close(code)) => panic!("the terminal closed ({code})"),
            None => panic!("no echo within {WAIT:?}"),
        }
    }
    started.elapsed()
}

/// Sends a ping that reaches the agent and waits for its pong.
fn ping(socket: &mut Socket, id: usize) -> Duration {
    let started = Instant::now();
    socket.send(&json!({ "type": "ping", "id": id }));
    socket.recv_until(WAIT, |m| m["type"] == "pong" && m["id"] == id);
    started.elapsed()
}

/// Clears the line typed so far (Ctrl-U) and reads what that prints.
fn clear_line(terminal: &mut Terminal) {
    terminal.keys(b"\x15");
    let before = terminal.offset;
    while terminal.offset == before {
        if terminal.next(WAIT).is_none() {
            panic!("no answer to Ctrl-U");
        }
    }
}

pub fn run(agent: &Agent, base: &str, token: &str, rounds: usize, report: &mut Report) {
    let mut terminal =
        Terminal::open(base, agent.id(), "backend=light", Some(token)).expect("terminal opens");
    terminal.expect("/$ ", WAIT);
    let mut socket = Socket::connect(base, agent.id(), Some(token)).expect("socket opens");
    let (mut keys, mut pings) = (Vec::new(), Vec::new());
    for round in 0..WARM_UP + rounds {
        if round % LINE == LINE - 1 {
            clear_line(&mut terminal);
        }
        let (key, pong) = match round % 2 {
            0 => {
                let key = keystroke(&mut terminal);
                (key, ping(&mut socket, round))
            }
            _ => {
                let pong = ping(&mut socket, round);
                (keystroke(&mut terminal), pong)
            }
        };
        if round >= WARM_UP {
            keys.push(key);
            pings.push(pong);
        }
    }
    clear_line(&mut terminal);
    terminal.close();
    socket.close();
    let (keys, floor) = (Latency::of(&keys), Latency::of(&pings));
    let section = format!(
        "keystroke to echo vs a WebSocket ping to the same agent: {rounds} of each, in turn"
    );
    for (stat, key, ping) in [("p50", keys.p50, floor.p50), ("p99", keys.p99, floor.p99)] {
        let floor_ms = millis(ping);
        report.rows.push(Row {
            section: section.clone(),
            measure: format!("light terminal keystroke {stat}"),
            figure: Ok(millis(key)),
            unit: Unit::Millis,
            baseline: Ok(floor_ms),
            baseline_label: format!("ping {stat}"),
            aim: Some(Aim::AtMost((floor_ms + LIGHT_ALLOWANCE_MS) / floor_ms)),
        });
    }
    let missing = || Err("the computer's terminal is not available yet".to_string());
    for stat in ["p50", "p99"] {
        report.rows.push(Row {
            section: section.clone(),
            measure: format!("computer terminal keystroke {stat}"),
            figure: missing(),
            unit: Unit::Millis,
            baseline: Ok(millis(if stat == "p50" { floor.p50 } else { floor.p99 })),
            baseline_label: format!("ping {stat}"),
            aim: None,
        });
    }
    report.rows.push(Row {
        section: "cat of a 50 MB file through the computer's pseudo-terminal".into(),
        measure: "cat 50 MB".into(),
        figure: missing(),
        unit: Unit::MibPerSec,
        baseline: Ok(20.0),
        baseline_label: "the aim, 20 MiB/s".into(),
        aim: Some(Aim::AtLeast(1.0)),
    });
}
