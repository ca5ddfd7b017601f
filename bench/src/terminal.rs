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
//! 5 ms, as a ratio of this run's floor. Then the same on a computer
//! terminal (a real pty on the agent's computer; aim: the floor plus
//! 20 ms), and `cat` of a 50 MB file through it (8 MB with `--quick`),
//! in MiB/s against the aim of 20.

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
/// What the computer backend may add to the floor.
const COMPUTER_ALLOWANCE_MS: f64 = 20.0;
/// The file `cat` prints through the computer's pty (the quick run's is
/// smaller, to stay quick).
const CAT_BYTES: usize = 50 << 20;
const QUICK_CAT_BYTES: usize = 8 << 20;
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
    let computer = computer_keystrokes(base, agent, token, rounds);
    for (stat, ping) in [("p50", floor.p50), ("p99", floor.p99)] {
        let floor_ms = millis(ping);
        let figure = match &computer {
            Ok(keys) => Ok(millis(if stat == "p50" { keys.p50 } else { keys.p99 })),
            Err(error) => Err(error.clone()),
        };
        report.rows.push(Row {
            section: section.clone(),
            measure: format!("computer terminal keystroke {stat}"),
            figure,
            unit: Unit::Millis,
            baseline: Ok(floor_ms),
            baseline_label: format!("ping {stat}"),
            aim: Some(Aim::AtMost((floor_ms + COMPUTER_ALLOWANCE_MS) / floor_ms)),
        });
    }
    let bytes = if quick_rounds(rounds) {
        QUICK_CAT_BYTES
    } else {
        CAT_BYTES
    };
    report.rows.push(Row {
        section: "cat of a file through the computer's pseudo-terminal".into(),
        measure: format!("cat {} MB", bytes >> 20),
        figure: cat_through_pty(base, agent, token, bytes),
        unit: Unit::MibPerSec,
        baseline: Ok(20.0),
        baseline_label: "the aim, 20 MiB/s".into(),
        aim: Some(Aim::AtLeast(1.0)),
    });
}

/// Whether this is the quick run (CI's smoke run).
fn quick_rounds(rounds: usize) -> bool {
    rounds < 100
}

/// Opens a computer terminal and waits until its shell answers.
fn open_computer(base: &str, agent: &Agent, token: &str) -> Result<Terminal, String> {
    let mut terminal = Terminal::open(base, agent.id(), "backend=computer", Some(token))?;
    // The echo of the line shows `$((40+2))`; only the shell prints 42.
    terminal.keys(b"echo ready-$((40+2))\r");
    terminal.expect("ready-42", Duration::from_secs(120));
    while terminal.next(Duration::from_millis(300)).is_some() {}
    Ok(terminal)
}

/// Keystrokes on a computer terminal (against the light rows' pings to the
/// same agent, measured just before).
fn computer_keystrokes(
    base: &str,
    agent: &Agent,
    token: &str,
    rounds: usize,
) -> Result<Latency, String> {
    let mut terminal = open_computer(base, agent, token)?;
    let mut keys = Vec::new();
    for round in 0..WARM_UP + rounds {
        if round % LINE == LINE - 1 {
            clear_line(&mut terminal);
        }
        let key = keystroke(&mut terminal);
        if round >= WARM_UP {
            keys.push(key);
        }
    }
    clear_line(&mut terminal);
    terminal.keys(b"exit\r");
    terminal.close();
    Ok(Latency::of(&keys))
}

/// `cat` of a `bytes`-long file on the computer through its terminal,
/// timed from the Enter to the marker printed after it: MiB/s. The file is
/// made first, in an ignored directory (`target/`), so live sync leaves it
/// on the computer.
fn cat_through_pty(base: &str, agent: &Agent, token: &str, bytes: usize) -> Result<f64, String> {
    let mut terminal = open_computer(base, agent, token)?;
    let make = format!(
        "mkdir -p /target && yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS | \
         head -c {bytes} > /target/big.txt && echo made-$((1+1))\r"
    );
    terminal.keys(make.as_bytes());
    terminal.expect("made-2", Duration::from_secs(120));
    while terminal.next(Duration::from_millis(300)).is_some() {}
    terminal.clear();
    let started = Instant::now();
    terminal.keys(b"cat /target/big.txt; echo cat-$((2+2))-done\r");
    let marker = b"cat-4-done";
    loop {
        let tail = &terminal.received[terminal.received.len().saturating_sub(256)..];
        if tail.windows(marker.len()).any(|w| w == marker) {
            break;
        }
        match terminal.next(WAIT) {
            Some(Frame::Close(code)) => return Err(format!("the terminal closed ({code})")),
            Some(_) => {}
            None => return Err(format!("no end of the cat within {WAIT:?}")),
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    terminal.keys(b"exit\r");
    terminal.close();
    Ok(bytes as f64 / (1 << 20) as f64 / seconds)
}
