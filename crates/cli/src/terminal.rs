//! `stead shell` on a terminal: the agent's interactive terminal
//! (`GET /agents/{id}/terminal`) with the local terminal in raw mode, so
//! every key (arrows, Tab, Ctrl-C) goes to the agent's line editor or
//! pseudo-terminal and the screen shows what it prints.
//!
//! Keys are read on a thread and sent as binary frames in the order typed;
//! the window's size is sent as `resize` whenever it changes. After a
//! dropped connection it reattaches to the same session from the offset
//! after the last byte it printed, so nothing is lost or shown twice. It
//! ends with the session (`exit`: its status is stead's) or when standard
//! input ends (which types Ctrl-D).

use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use tungstenite::Message;

use crate::client::{agent_path, Api, WebSocket};
use crate::error::{CliError, Failure, Result};

/// How long a read waits before keys and the window size are looked at.
const POLL: Duration = Duration::from_millis(10);

/// Reattaches after a drop, at most this many times in a row.
const RECONNECTS: u32 = 5;

/// What `stead shell` asks of the terminal.
pub struct Options {
    /// `light` or `computer`.
    pub backend: &'static str,
    /// Attach to this session instead of starting one.
    pub session: Option<String>,
    /// Put the local terminal in raw mode and follow its size.
    pub raw: bool,
}

/// The local terminal in raw mode until dropped.
struct Raw;

impl Raw {
    fn enable() -> Result<Raw> {
        crossterm::terminal::enable_raw_mode().map_err(|e| {
            CliError::new(
                Failure::Local,
                format!("cannot put the terminal in raw mode: {e}"),
            )
        })?;
        Ok(Raw)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// What the keyboard thread reads.
enum Typed {
    Keys(Vec<u8>),
    End,
}

/// Runs the terminal; its exit status.
pub fn run(api: &Api, agent: &str, options: Options) -> Result<i32> {
    let size = || {
        options
            .raw
            .then(|| crossterm::terminal::size().ok())
            .flatten()
    };
    let mut shown = size();
    let mut query = format!("backend={}", options.backend);
    if let Some((cols, rows)) = shown {
        query.push_str(&format!("&cols={cols}&rows={rows}"));
    }
    if let Some(session) = &options.session {
        query = format!("session={session}");
    }
    let path = |query: &str| format!("{}/terminal?{query}", agent_path(agent));
    let mut ws = api.connect(&path(&query), POLL)?;
    let _raw = match options.raw {
        true => Some(Raw::enable()?),
        false => None,
    };
    let typed = keyboard();
    let mut stdout = std::io::stdout();
    // Where to reattach from: the session and the offset after the last
    // byte shown.
    let (mut session, mut offset) = (String::new(), 0i64);
    let mut failures = 0;
    loop {
        loop {
            match typed.try_recv() {
                Ok(Typed::Keys(keys)) => send(&mut ws, Message::binary(keys)),
                // The end of the input types Ctrl-D (once).
                Ok(Typed::End) => send(&mut ws, Message::binary(vec![0x04])),
                Err(_) => break,
            }
        }
        let now = size();
        if now != shown {
            if let Some((cols, rows)) = now {
                let resize = json!({ "type": "resize", "cols": cols, "rows": rows });
                send(&mut ws, Message::text(resize.to_string()));
            }
            shown = now;
        }
        match ws.read() {
            Ok(Message::Binary(bytes)) => {
                offset += bytes.len() as i64;
                let _ = stdout.write_all(&bytes);
                let _ = stdout.flush();
                failures = 0;
            }
            Ok(Message::Text(text)) => {
                let message: Value = serde_json::from_str(&text).unwrap_or_default();
                match message["type"].as_str() {
                    Some("ready") => {
                        session = message["session"].as_str().unwrap_or_default().to_string();
                        offset = message["offset"].as_i64().unwrap_or(offset);
                    }
                    Some("exit") => {
                        drop(_raw);
                        return Ok(message["code"].as_i64().unwrap_or(0) as i32);
                    }
                    Some("error") => {
                        let line = format!(
                            "\r\nstead: {} ({})\r\n",
                            message["message"].as_str().unwrap_or(""),
                            message["code"].as_str().unwrap_or("")
                        );
                        let _ = std::io::stderr().write_all(line.as_bytes());
                    }
                    _ => {}
                }
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(error) => {
                // Dropped: reattach where we were.
                failures += 1;
                if failures > RECONNECTS || session.is_empty() {
                    return Err(CliError::new(
                        Failure::Network,
                        format!("the terminal's connection broke ({error}); `stead shell --session {session}` reattaches"),
                    ));
                }
                std::thread::sleep(Duration::from_millis(200 * u64::from(failures)));
                let again = path(&format!("session={session}&from={offset}"));
                if let Ok(fresh) = api.connect(&again, POLL) {
                    ws = fresh;
                }
            }
        }
    }
}

/// Sends a frame; a failure shows at the next read.
fn send(ws: &mut WebSocket, message: Message) {
    let _ = ws.send(message);
}

/// Reads standard input on a thread, as it comes.
fn keyboard() -> mpsc::Receiver<Typed> {
    let (keys, typed) = mpsc::channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buffer = [0u8; 4096];
        loop {
            match stdin.read(&mut buffer) {
                Ok(0) | Err(_) => {
                    let _ = keys.send(Typed::End);
                    return;
                }
                Ok(n) => {
                    if keys.send(Typed::Keys(buffer[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });
    typed
}
