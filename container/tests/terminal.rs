//! Terminal sessions on the real binary: a real `bash -l` on a real pty,
//! driven over the session's WebSocket as the Worker's bridge will (keys
//! as binary frames, resizes as JSON text frames, on one ordered stream),
//! and the session's HTTP routes with their refusals.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

/// How long any one expected output may take.
const PATIENCE: Duration = Duration::from_secs(20);

fn create(client: &Client, spec: Value) -> Value {
    let answer = client.post("/v1/terminals", &spec);
    answer.expect(201);
    answer.json()
}

/// Starts a session and gives its id.
fn started(client: &Client, spec: Value) -> String {
    create(client, spec)["id"].as_str().unwrap().to_string()
}

fn delete(client: &Client, path: &str) -> Answer {
    let mut response = agent()
        .delete(format!("{}{path}", client.base))
        .header("authorization", format!("Bearer {SECRET}"))
        .call()
        .unwrap();
    Answer {
        status: response.status().as_u16(),
        body: response.body_mut().read_to_vec().unwrap(),
    }
}

/// One client's socket on a session: what it received so far.
struct Attached {
    socket: WebSocket<TcpStream>,
    /// The offset the output below starts at (from the `attached` frame).
    from: u64,
    output: Vec<u8>,
    /// Where the next [`Attached::until`] starts looking.
    looked: usize,
    /// Text frames after `attached`.
    events: Vec<Value>,
    closed: bool,
}

/// The socket's handshake request for `path`, with the bearer secret.
fn handshake(client: &Client, path: &str) -> tungstenite::handshake::client::Request {
    let url = format!("{}{path}", client.base.replacen("http://", "ws://", 1));
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {SECRET}").parse().unwrap());
    request
}

fn tcp(client: &Client) -> TcpStream {
    let stream = TcpStream::connect(client.base.trim_start_matches("http://")).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
}

fn attach(client: &Client, id: &str, from: u64) -> Attached {
    let path = format!("/v1/terminals/{id}/attach?from={from}");
    let (mut socket, _) = tungstenite::client(handshake(client, &path), tcp(client)).unwrap();
    let first = match socket.read().unwrap() {
        Message::Text(text) => serde_json::from_str::<Value>(&text).unwrap(),
        other => panic!("the first frame is not `attached`: {other:?}"),
    };
    assert_eq!(first["type"], "attached", "{first}");
    Attached {
        socket,
        from: first["from"].as_u64().unwrap(),
        output: Vec::new(),
        looked: 0,
        events: Vec::new(),
        closed: false,
    }
}

/// The handshake's refusal: status and structured error code.
fn refused_attach(client: &Client, path: &str) -> (u16, String) {
    match tungstenite::client(handshake(client, path), tcp(client)) {
        Ok(_) => panic!("{path} was upgraded"),
        Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(response))) => {
            let body: Value = serde_json::from_slice(response.body().as_deref().unwrap()).unwrap();
            (
                response.status().as_u16(),
                body["error"]["code"].as_str().unwrap().to_string(),
            )
        }
        Err(other) => panic!("not an HTTP refusal: {other:?}"),
    }
}

impl Attached {
    fn send(&mut self, keys: &[u8]) {
        self.socket.send(Message::binary(keys.to_vec())).unwrap();
    }

    fn resize(&mut self, cols: u32, rows: u32) {
        let frame = json!({"type": "resize", "cols": cols, "rows": rows});
        self.socket.send(Message::text(frame.to_string())).unwrap();
    }

    /// Reads one frame; `false` once the socket is closed.
    fn read_one(&mut self) -> bool {
        if self.closed {
            return false;
        }
        match self.socket.read() {
            Ok(Message::Binary(bytes)) => self.output.extend_from_slice(&bytes),
            Ok(Message::Text(text)) => self.events.push(serde_json::from_str(&text).unwrap()),
            Ok(Message::Close(_)) | Err(tungstenite::Error::ConnectionClosed) => {
                self.closed = true;
            }
            Ok(_) => {}
            Err(error) => panic!(
                "reading the terminal: {error}; so far: {:?}",
                String::from_utf8_lossy(&self.output)
            ),
        }
        !self.closed
    }

    /// Reads until `needle` appears in output not looked at yet; what was
    /// read up to its end.
    #[track_caller]
    fn until(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = String::from_utf8_lossy(&self.output[self.looked..]).into_owned();
            if let Some(at) = text.find(needle) {
                self.looked += text[..at + needle.len()].len();
                return text[..at + needle.len()].to_string();
            }
            assert!(
                Instant::now() < deadline && self.read_one(),
                "no {needle:?} in {text:?}"
            );
        }
    }

    /// Reads until a text frame of `kind` arrives.
    #[track_caller]
    fn event(&mut self, kind: &str) -> Value {
        loop {
            if let Some(event) = self.events.iter().find(|e| e["type"] == kind) {
                return event.clone();
            }
            assert!(self.read_one(), "closed without {kind}: {:?}", self.events);
        }
    }

    /// The output's end offset as this client saw it.
    fn end(&self) -> u64 {
        self.from + self.output.len() as u64
    }
}

/// The output's end offset once it stopped growing.
fn quiet_end(client: &Client, id: &str) -> u64 {
    let end = || {
        client.get(&format!("/v1/terminals/{id}")).json()["end"]
            .as_u64()
            .unwrap()
    };
    let mut last = end();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = end();
        if now == last {
            return now;
        }
        last = now;
    }
}

#[test]
fn stty_size_shows_the_size_and_each_resize_in_order() {
    let computer = Computer::start();
    let client = computer.client();
    let terminal = create(&client, json!({"cols": 80, "rows": 24}));
    let id = terminal["id"].as_str().unwrap();
    assert_eq!(
        (terminal["cols"].as_u64(), terminal["rows"].as_u64()),
        (Some(80), Some(24))
    );
    let mut term = attach(&client, id, 0);
    term.send(b"stty size\r");
    term.until("24 80");
    // Keys and resizes go on one stream, so the keys sent right after a
    // resize (without waiting for anything) reach a terminal of the new
    // size. (As in any terminal, the size is not queued with the keys:
    // a command sees the size when it runs.)
    term.resize(100, 30);
    term.send(b"stty size\r");
    term.until("30 100");
    term.resize(132, 43);
    term.send(b"stty size\r");
    term.until("43 132");
    let status = client.get(&format!("/v1/terminals/{id}"));
    status.expect(200);
    assert_eq!(status.json()["cols"], 132);
    assert_eq!(status.json()["rows"], 43);
}

#[test]
fn a_python_repl_answers() {
    let computer = Computer::start();
    let client = computer.client();
    let id = started(&client, json!({}));
    let mut term = attach(&client, &id, 0);
    term.send(b"python3 -q\r");
    term.until(">>> ");
    term.send(b"print(6*7)\r");
    term.until("\r\n42\r\n>>> ");
    term.send(b"exit()\r");
    term.send(b"echo back-in-$((40+2))\r");
    term.until("back-in-42");
}

#[test]
fn ctrl_c_stops_the_foreground_job() {
    let computer = Computer::start();
    let client = computer.client();
    let id = started(&client, json!({}));
    let mut term = attach(&client, &id, 0);
    let started = Instant::now();
    term.send(b"echo sleep-$((1+1)); sleep 100\r");
    term.until("sleep-2");
    std::thread::sleep(Duration::from_millis(300));
    term.send(b"\x03");
    // The job died of SIGINT (128 + 2) and the shell is still there.
    term.send(b"echo code=$?\r");
    term.until("code=130");
    term.send(b"echo alive-$((2+3))\r");
    term.until("alive-5");
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_reader_resuming_from_an_offset_gets_exactly_the_missed_bytes() {
    let computer = Computer::start();
    let client = computer.client();
    let id = started(&client, json!({}));

    let mut first = attach(&client, &id, 0);
    assert_eq!(first.from, 0);
    first.send(b"echo one-$((0+1))\r");
    first.until("one-1");
    let mark = first.end();
    // The client goes away; the shell lives on.
    drop(first);

    let mut typist = attach(&client, &id, mark);
    assert_eq!(typist.from, mark);
    typist.send(b"echo two-$((1+1)); echo done-$((1+2))\r");
    typist.until("done-3");
    drop(typist);

    // Nothing more is typed: once the prompt is out the whole output is
    // known. Read it all from the start, then resume from the mark.
    let end = quiet_end(&client, &id);
    let mut whole = attach(&client, &id, 0);
    while whole.end() < end {
        assert!(whole.read_one());
    }
    let mut resumed = attach(&client, &id, mark);
    assert_eq!(resumed.from, mark);
    while resumed.end() < end {
        assert!(resumed.read_one());
    }
    assert_eq!(resumed.output, whole.output[mark as usize..]);
    let missed = String::from_utf8_lossy(&resumed.output);
    assert!(
        missed.contains("two-2") && missed.contains("done-3"),
        "{missed:?}"
    );
    assert!(!missed.contains("one-1"), "{missed:?}");

    // An offset past the end is refused before the upgrade.
    let (status, code) = refused_attach(
        &client,
        &format!("/v1/terminals/{id}/attach?from={}", end + 1000),
    );
    assert_eq!((status, code.as_str()), (400, "INVALID_REQUEST"));
}

#[test]
fn a_file_written_in_the_terminal_is_in_the_workspace() {
    let computer = Computer::start();
    let client = computer.client();
    // The shell is a login shell: the workspace's `/.profile` (home is `/`)
    // runs, once.
    std::fs::write(client.root.join(".profile"), "echo profile-$((5+5))\n").unwrap();
    let id = started(&client, json!({}));
    let mut term = attach(&client, &id, 0);
    term.send(b"echo \"[$TERM $(pwd) $HOME]\"; echo hello > made-here.txt; echo wrote-$?\r");
    let seen = term.until("[xterm-256color / /]");
    term.until("wrote-0");
    assert_eq!(seen.matches("profile-10").count(), 1, "{seen:?}");
    assert_eq!(
        std::fs::read_to_string(client.root.join("made-here.txt")).unwrap(),
        "hello\n"
    );
    // The terminal is the shell's user's, as after a login.
    term.send(b"[ -O /proc/self/fd/0 ] && echo tty-$((1+1))-owned\r");
    term.until("tty-2-owned");
    if running_as_root() {
        // The shell runs as the unprivileged user, never as root.
        term.send(b"echo uid-$(id -u)-end\r");
        term.until(&format!("uid-{NOBODY}-end"));
    }
}

#[test]
fn close_kills_the_shell_and_its_jobs() {
    let computer = Computer::start();
    let client = computer.client();
    let id = started(&client, json!({}));
    let mut term = attach(&client, &id, 0);
    // A background job in its own process group (job control) that beats
    // into a file while it lives.
    term.send(b"(while :; do date +%s%N > beat; sleep 0.05; done) & echo job-$((3*3))\r");
    term.until("job-9");
    let beat = client.root.join("beat");
    let deadline = Instant::now() + PATIENCE;
    while !beat.exists() {
        assert!(Instant::now() < deadline, "the job never beat");
        std::thread::sleep(Duration::from_millis(20));
    }

    let closed = delete(&client, &format!("/v1/terminals/{id}"));
    closed.expect(200);
    assert!(!closed.json()["exit"].is_null(), "{}", closed.json());
    // The attached client is told, after the last output.
    let exit = term.event("exit");
    assert!(
        exit["code"].is_number() || exit["signal"].is_number(),
        "{exit}"
    );
    while term.read_one() {}

    let last = std::fs::read_to_string(&beat).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::read_to_string(&beat).unwrap(),
        last,
        "the job lives on"
    );
    let gone = client.get(&format!("/v1/terminals/{id}"));
    gone.expect(404);
    assert_eq!(gone.code(), "UNKNOWN_PROCESS");
}

#[test]
fn a_shell_that_exits_ends_the_stream_with_its_code() {
    let computer = Computer::start();
    let client = computer.client();
    let id = started(&client, json!({}));
    let mut term = attach(&client, &id, 0);
    term.send(b"echo bye-$((4+3)); exit 7\r");
    term.until("bye-7");
    let exit = term.event("exit");
    assert_eq!(exit["code"], 7, "{exit}");
    let status = client.get(&format!("/v1/terminals/{id}")).json();
    assert_eq!(status["exit"]["code"], 7, "{status}");
    // A late reader still gets the output, then the exit.
    let mut late = attach(&client, &id, 0);
    late.until("bye-7");
    assert_eq!(late.event("exit")["code"], 7);
}

#[test]
fn bad_requests_are_refused_with_structured_errors() {
    let computer = Computer::start();
    let client = computer.client();
    for spec in [
        json!({"cols": 0, "rows": 24}),
        json!({"cols": 80, "rows": 0}),
        json!({"cols": 100000, "rows": 24}),
        json!({"cols": 80, "rows": 24, "shell": "zsh"}),
        json!({"env": {"A=B": "c"}}),
    ] {
        let answer = client.post("/v1/terminals", &spec);
        answer.expect(400);
        assert_eq!(answer.code(), "INVALID_REQUEST", "{spec}");
    }
    let answer = client.post("/v1/terminals", &json!({"cwd": "/no/such/dir"}));
    assert_eq!(
        answer.status,
        400,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let unknown = client.get("/v1/terminals/t-nope");
    unknown.expect(404);
    assert_eq!(unknown.code(), "UNKNOWN_PROCESS");
    assert_eq!(
        refused_attach(&client, "/v1/terminals/t-nope/attach"),
        (404, "UNKNOWN_PROCESS".to_string())
    );
    assert_eq!(client.get_as("/v1/terminals/t-nope", None).status, 401);
    let unauthorized = client.post_raw("/v1/terminals", "application/json", b"{}", None);
    assert_eq!(unauthorized.status, 401);

    // A bad resize on the stream is answered there; the session goes on
    // at its size.
    let id = started(&client, json!({"cols": 90, "rows": 20}));
    let mut term = attach(&client, &id, 0);
    for (cols, rows) in [(0, 0), (80, 5000)] {
        term.resize(cols, rows);
        let error = term.event("error");
        assert_eq!(error["error"]["code"], "INVALID_REQUEST", "{error}");
        term.events.clear();
    }
    term.socket
        .send(Message::text(r#"{"type":"dance"}"#))
        .unwrap();
    assert_eq!(term.event("error")["error"]["code"], "INVALID_REQUEST");
    term.send(b"stty size\r");
    term.until("20 90");
}

#[test]
fn a_reader_from_before_the_ring_starts_at_the_first_kept_byte() {
    let computer = Computer::start();
    let client = computer.client();
    let id = started(&client, json!({}));
    let mut term = attach(&client, &id, 0);
    // 2 MB of output: more than the ring's 1 MiB.
    term.send(b"head -c 2000000 /dev/zero | tr '\\0' a; echo; echo big-$((6+6))\r");
    term.until("big-12");
    drop(term);
    let end = quiet_end(&client, &id);
    let status = client.get(&format!("/v1/terminals/{id}")).json();
    assert_eq!(
        status["first"].as_u64().unwrap(),
        end - (1 << 20),
        "{status}"
    );
    let mut late = attach(&client, &id, 0);
    assert_eq!(late.from, end - (1 << 20));
    late.until("big-12");
    assert!(late.output.starts_with(b"aaaa"));
}

#[test]
fn an_open_session_keeps_the_computer_busy() {
    let computer = Computer::start();
    let client = computer.client();
    let busy = || {
        let status = client.get("/v1/status");
        status.expect(200);
        status.json()["busy"].as_bool().unwrap()
    };
    assert!(!busy(), "nothing runs yet");
    let id = started(&client, json!({}));
    // No client attached: the shell is open all the same.
    assert!(busy(), "an open shell is activity");
    delete(&client, &format!("/v1/terminals/{id}")).expect(200);
    assert!(!busy(), "a closed one is not");
}
