//! Runs the real `stead-computer` binary on a free port and talks to it
//! over real HTTP, as the Worker will.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::{json, Value};
use stead_sync::{frame, hash_content, ApplyReply, Change, ChunkHash, Entry, ExecEvent, Exit};

pub const SECRET: &str = "test-secret-7f3a9c";

/// The uid and gid of `nobody`.
pub const NOBODY: u32 = 65534;

/// Whether the tests run as root (then commands run as `nobody`: the
/// program refuses to run them as root).
pub fn running_as_root() -> bool {
    // SAFETY: getuid(2) cannot fail and touches no memory.
    unsafe { libc::getuid() == 0 }
}

pub struct Computer {
    child: Child,
    pub base: String,
    pub dir: tempfile::TempDir,
    pub per_container: bool,
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

impl Computer {
    pub fn start() -> Computer {
        Computer::start_with(false)
    }

    pub fn start_with(per_container: bool) -> Computer {
        Computer::start_in(tempfile::tempdir().unwrap(), per_container)
    }

    /// Starts the program with `<dir>/root` and `<dir>/state`, on a port the
    /// program picks itself (read back from its start-up line, so no other
    /// socket can take the port in between).
    pub fn start_in(dir: tempfile::TempDir, per_container: bool) -> Computer {
        let mut command = Computer::command(&dir, per_container);
        if running_as_root() {
            command.args(["--run-as", "nobody"]);
        }
        Computer::launch(command, dir, per_container)
    }

    /// Starts the program with extra arguments.
    pub fn start_with_args(per_container: bool, args: &[&str]) -> Computer {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Computer::command(&dir, per_container);
        if running_as_root() {
            command.args(["--run-as", "nobody"]);
        }
        command.args(args);
        Computer::launch(command, dir, per_container)
    }

    /// Starts the program as an unprivileged user (`nobody` when the tests
    /// run as root, else the tests' own user), so its commands run as the
    /// same user it does.
    pub fn start_unprivileged() -> Computer {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Computer::command(&dir, false);
        if running_as_root() {
            std::os::unix::fs::chown(dir.path(), Some(NOBODY), Some(NOBODY)).unwrap();
            std::os::unix::process::CommandExt::uid(&mut command, NOBODY);
            std::os::unix::process::CommandExt::gid(&mut command, NOBODY);
        }
        Computer::launch(command, dir, false)
    }

    fn command(dir: &tempfile::TempDir, per_container: bool) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_stead-computer"));
        command
            .args(["--listen", "127.0.0.1:0", "--root"])
            .arg(dir.path().join("root"))
            .arg("--state")
            .arg(dir.path().join("state"))
            .env("STEAD_COMPUTER_SECRET", SECRET)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if per_container {
            command.arg("--per-container");
        }
        command
    }

    fn launch(mut command: Command, dir: tempfile::TempDir, per_container: bool) -> Computer {
        let mut child = command.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let addr = line
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no start-up line: {line:?}"))
            .to_string();
        // Keep forwarding the program's log to the test's output.
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                eprintln!("{line}");
            }
        });
        let computer = Computer {
            child,
            base: format!("http://{addr}"),
            dir,
            per_container,
        };
        assert_eq!(computer.client().get_as("/health", None).status, 200);
        computer
    }

    /// The workspace directory (of the single container).
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// The state directory.
    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to the program.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child; no memory is involved.
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
    }

    /// Waits at most `patience` for the program to exit.
    pub fn wait_exit(&mut self, patience: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn client(&self) -> Client {
        Client {
            base: self.base.clone(),
            container: None,
            root: self.root(),
        }
    }

    /// A client for container `name` (per-container mode).
    pub fn container(&self, name: &str) -> Client {
        Client {
            base: self.base.clone(),
            container: Some(name.to_string()),
            root: self.root().join(name),
        }
    }
}

impl Drop for Computer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone)]
pub struct Client {
    pub base: String,
    pub container: Option<String>,
    /// The workspace directory on disk.
    pub root: PathBuf,
}

/// A response: status and body.
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// Asserts the status is `status` (showing the body if not); the
    /// answer, to read on.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Answer {
        assert_eq!(
            self.status,
            status,
            "{}",
            String::from_utf8_lossy(&self.body)
        );
        self
    }

    /// The error code of an `ErrorBody`.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }
}

impl Client {
    pub fn disk(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    pub fn post_builder(
        &self,
        path: &str,
        auth: Option<&str>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        let mut request = agent().post(format!("{}{path}", self.base));
        if let Some(secret) = auth {
            request = request.header("authorization", format!("Bearer {secret}"));
        }
        if let Some(name) = &self.container {
            request = request.header(stead_sync::CONTAINER_HEADER, name);
        }
        request
    }

    pub fn get_as(&self, path: &str, auth: Option<&str>) -> Answer {
        let mut request = agent().get(format!("{}{path}", self.base));
        if let Some(secret) = auth {
            request = request.header("authorization", format!("Bearer {secret}"));
        }
        if let Some(name) = &self.container {
            request = request.header(stead_sync::CONTAINER_HEADER, name);
        }
        let mut response = request.call().unwrap();
        Answer {
            status: response.status().as_u16(),
            body: response.body_mut().read_to_vec().unwrap(),
        }
    }

    pub fn get(&self, path: &str) -> Answer {
        self.get_as(path, Some(SECRET))
    }

    pub fn post_raw(
        &self,
        path: &str,
        content_type: &str,
        body: &[u8],
        auth: Option<&str>,
    ) -> Answer {
        let mut response = self
            .post_builder(path, auth)
            .header("content-type", content_type)
            .send(body)
            .unwrap();
        Answer {
            status: response.status().as_u16(),
            body: response
                .body_mut()
                .with_config()
                .limit(200 << 20)
                .read_to_vec()
                .unwrap(),
        }
    }

    pub fn post(&self, path: &str, body: &Value) -> Answer {
        self.post_raw(
            path,
            "application/json",
            &serde_json::to_vec(body).unwrap(),
            Some(SECRET),
        )
    }

    pub fn instance(&self) -> String {
        let status = self.get("/v1/status");
        assert_eq!(status.status, 200);
        status.json()["instance"].as_str().unwrap().to_string()
    }

    pub fn push(&self, full: bool, changes: &[Change]) -> Answer {
        self.post(
            "/v1/sync/apply",
            &json!({
                "instance": self.instance(),
                "full": full,
                "changes": changes,
                "ignore": stead_sync::ignore::DEFAULT_RULES,
            }),
        )
    }

    pub fn push_reply(&self, full: bool, changes: &[Change]) -> ApplyReply {
        let answer = self.push(full, changes);
        serde_json::from_slice(&answer.expect(200).body).unwrap()
    }

    pub fn upload(&self, pieces: &[&[u8]]) -> Answer {
        let mut body = Vec::new();
        for piece in pieces {
            frame::encode(&mut body, piece);
        }
        self.post_raw(
            "/v1/sync/chunks",
            "application/octet-stream",
            &body,
            Some(SECRET),
        )
    }

    /// Pushes `changes`, sending whatever chunks of `contents` are asked
    /// for; returns how many files were written.
    pub fn sync(&self, full: bool, changes: &[Change], contents: &[&[u8]]) -> u64 {
        match self.push_reply(full, changes) {
            ApplyReply::Applied { written } => written,
            ApplyReply::Need { chunks } => {
                let mut pieces: Vec<&[u8]> = Vec::new();
                for content in contents {
                    for piece in content.chunks(stead_sync::CHUNK_SIZE) {
                        if chunks.contains(&stead_sync::hash_chunk(piece)) {
                            pieces.push(piece);
                        }
                    }
                }
                let stored = self.upload(&pieces);
                assert_eq!(stored.status, 200);
                match self.push_reply(full, changes) {
                    ApplyReply::Applied { written } => written,
                    other => panic!("still not applied: {other:?}"),
                }
            }
        }
    }

    /// Runs a command to its end: the output and the exit event.
    pub fn exec(&self, id: &str, command: &str) -> (String, String, Exit) {
        let answer = self.exec_spec(&json!({
            "id": id, "command": command, "cwd": "/", "timeout_ms": 30_000
        }));
        assert_eq!(
            answer.status,
            200,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        let events = parse_events(&answer.body);
        collect(events)
    }

    pub fn exec_spec(&self, spec: &Value) -> Answer {
        self.post("/v1/exec", spec)
    }

    /// Starts a command and hands back the open response body.
    pub fn exec_stream(&self, spec: &Value) -> (u16, BufReader<Box<dyn Read + Send>>) {
        let response = self
            .post_builder("/v1/exec", Some(SECRET))
            .header("content-type", "application/json")
            .send(serde_json::to_vec(spec).unwrap().as_slice())
            .unwrap();
        let status = response.status().as_u16();
        let reader: Box<dyn Read + Send> = Box::new(response.into_body().into_reader());
        (status, BufReader::new(reader))
    }

    pub fn fetch_chunks(&self, exec: &str, chunks: &[ChunkHash]) -> Answer {
        self.post("/v1/chunks", &json!({ "exec": exec, "chunks": chunks }))
    }

    pub fn ack(&self, exec: &str) -> Answer {
        self.post("/v1/sync/ack", &json!({ "exec": exec }))
    }
}

pub fn parse_events(body: &[u8]) -> Vec<ExecEvent> {
    body.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect()
}

/// Reads one event line from a stream; `None` at its end.
pub fn next_event(reader: &mut impl BufRead) -> Option<ExecEvent> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap() == 0 {
        return None;
    }
    Some(serde_json::from_str(&line).unwrap())
}

pub fn collect(events: Vec<ExecEvent>) -> (String, String, Exit) {
    let (mut out, mut err, mut exit) = (Vec::new(), Vec::new(), None);
    for event in events {
        assert!(exit.is_none(), "exit must be the last event");
        match event {
            ExecEvent::Stdout { data } => out.extend(BASE64.decode(data).unwrap()),
            ExecEvent::Stderr { data } => err.extend(BASE64.decode(data).unwrap()),
            ExecEvent::Exit(e) => exit = Some(e),
            ExecEvent::Error(error) => panic!("the exec ended with an error: {error:?}"),
            ExecEvent::Dropped { bytes } => panic!("{bytes} bytes of output were dropped"),
        }
    }
    (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
        exit.expect("an exit event"),
    )
}

/// `changes` without their modification times (the disk's, which a test
/// does not know in advance).
pub fn untimed(changes: &[Change]) -> Vec<Change> {
    changes
        .iter()
        .map(|change| Change {
            mtime_ms: None,
            ..change.clone()
        })
        .collect()
}

pub fn file(path: &str, mode: u32, content: &[u8]) -> Change {
    Change {
        path: path.to_string(),
        entry: Some(Entry::File {
            mode,
            size: content.len() as u64,
            chunks: hash_content(content),
        }),
        mtime_ms: None,
    }
}

pub fn dir(path: &str, mode: u32) -> Change {
    Change {
        path: path.to_string(),
        entry: Some(Entry::Dir { mode }),
        mtime_ms: None,
    }
}

pub fn symlink(path: &str, target: &str) -> Change {
    Change {
        path: path.to_string(),
        entry: Some(Entry::Symlink {
            target: target.to_string(),
        }),
        mtime_ms: None,
    }
}

pub fn gone(path: &str) -> Change {
    Change {
        path: path.to_string(),
        entry: None,
        mtime_ms: None,
    }
}

pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The top-level names that are the system's (container/src/layout.rs).
pub const SYSTEM_NAMES: &[&str] = &[
    "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "root", "run", "sbin", "sys",
    "tmp", "usr", "var",
];

/// A number no other test program running on this machine uses, to make a
/// command's arguments unique (`sleep 100.<n>`) so it can be found with
/// [`pid_of`]: commands run in PID namespaces, so `$$` is not a host pid.
pub fn unique_number() -> u32 {
    std::process::id()
}

/// The pid (on this host) of a live process running exactly `argv`, waiting
/// up to 5 s for it to appear (a command may print before it execs).
pub fn running(argv: &[&str]) -> u32 {
    let mut pid = None;
    wait_until(&format!("{argv:?} to run"), Duration::from_secs(5), || {
        pid = pid_of(argv);
        pid.is_some()
    });
    pid.expect("found")
}

/// The pid (on this host) of a live process running exactly `argv`.
pub fn pid_of(argv: &[&str]) -> Option<u32> {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        (cmdline == wanted && !process_gone(pid)).then_some(pid)
    })
}

pub fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
