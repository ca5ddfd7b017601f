//! The real Worker, run locally for end-to-end tests and benchmarks.
//!
//! [`Runtime::start`] builds the Worker bundle once per process, then starts
//! `wrangler dev` (workerd with its embedded Durable Object SQLite) on free
//! ports with a persistence folder, and waits until it answers. Dropping the
//! runtime ends its whole process group, so no `workerd` outlives a test
//! (wrangler removes the containers it started). Starting a second runtime
//! on the same folder is a restart: the workspace must be exactly as the
//! first one left it. The computer runs the way `scripts/computer-mode`
//! decides, as for `scripts/dev`: in real containers when a Docker engine
//! answers (with the environment that script exports), else as a local
//! process (see [`computer`]). A wrangler that exits before it is ready, or
//! is not ready by its deadline, fails the start at once with the end of
//! its log.

pub mod computer;
pub mod terminal;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use computer::Computers;
pub use computer::{ComputerMode, ComputerProcess, Machine};

/// The token `.dev.vars` configures for local runs.
pub const DEV_TOKEN: &str = "dev-token";

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// PATH with the project's `node_modules/.bin` first, so wrangler runs on the
/// Node it was installed with.
fn node_path() -> String {
    let bin = repo_root().join("node_modules/.bin");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Builds the Worker bundle once per process.
pub fn build_worker() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        if std::env::var("STEAD_SKIP_BUILD").as_deref() == Ok("1")
            && repo_root().join("build/worker/shim.mjs").exists()
            && repo_root().join("build/ui/ui/index.html").exists()
        {
            return;
        }
        let status = Command::new("sh")
            .arg("scripts/build-worker")
            .current_dir(repo_root())
            .env("PATH", node_path())
            .status()
            .expect("run scripts/build-worker");
        assert!(status.success(), "building the Worker failed");
    });
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// How much of a server's log a start-up failure shows.
const LOG_TAIL_LINES: usize = 40;

/// The last [`LOG_TAIL_LINES`] lines of the log at `path`, without the
/// terminal colour codes wrangler writes even into a file.
fn log_tail(path: &Path) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    without_colours(&lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n"))
}

/// `text` without ANSI escape sequences (`ESC [ ... letter`).
fn without_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Ends the process group `child` leads and waits for it.
fn end_group(child: &mut Child) {
    let pid = child.id() as i32;
    // SAFETY: kill(2) on our own child's process group; no memory involved.
    unsafe {
        libc::kill(-pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    let _ = child.wait();
}

/// Sends `signal` to the processes named `name` in process group `group`.
fn kill_in_group(group: i32, name: &str, signal: i32) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        // The process group is the fifth field of `stat`, after the name in
        // parentheses (which may hold spaces).
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let pgrp = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|field| field.parse::<i32>().ok());
        if comm.trim_end() == name && pgrp == Some(group) {
            // SAFETY: kill(2) on a process of our own child's group.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }
}

/// Starts `command` (a `wrangler dev`) in a process group of its own, its
/// output into `log`, and waits until `base` answers `GET /health` with
/// 200. Watches the child while it waits: if it exits first, or `patience`
/// passes (then it is ended), the error says so with the tail of its log,
/// which holds wrangler's own message.
fn start_server(
    mut command: Command,
    log: &Path,
    base: &str,
    patience: Duration,
) -> Result<Child, String> {
    let log_file = std::fs::File::create(log).expect("runtime log file");
    command
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().expect("log file"))
        .stderr(log_file);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let program = command.get_program().to_string_lossy().into_owned();
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let deadline = Instant::now() + patience;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            // Its children (workerd) may still hold the group.
            end_group(&mut child);
            return Err(format!(
                "{program} exited ({status}) before it was ready; the end of its log ({}):\n{}",
                log.display(),
                log_tail(log)
            ));
        }
        if let Ok(response) = ureq::get(&format!("{base}/health")).call() {
            if response.status() == 200 {
                return Ok(child);
            }
        }
        if Instant::now() >= deadline {
            end_group(&mut child);
            return Err(format!(
                "{program} was not ready within {} s; the end of its log ({}):\n{}",
                patience.as_secs(),
                log.display(),
                log_tail(log)
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A running `wrangler dev`, with its computer.
pub struct Runtime {
    child: Child,
    base: String,
    persist: PathBuf,
    mode: ComputerMode,
    computers: Computers,
}

/// The `wrangler dev` command of a runtime on `port` with its state in
/// `persist`, its computer `computers` and extra `--var` settings.
fn wrangler_dev(persist: &Path, port: u16, computers: &Computers, vars: &[&str]) -> Command {
    let mut command = Command::new(repo_root().join("node_modules/.bin/wrangler"));
    command
        .args(["dev", "--port", &port.to_string()])
        .args(["--inspector-port", &free_port().to_string()])
        .arg("--persist-to")
        .arg(persist)
        .args([
            "--show-interactive-dev-session=false",
            "--log-level",
            "warn",
        ]);
    match computers.local() {
        // wrangler.toml leaves `enable_containers` unset, so this flag
        // decides, and wrangler then also honours WRANGLER_DOCKER_HOST.
        None => {
            command.arg("--enable-containers=true");
        }
        Some(process) => {
            command
                .arg("--enable-containers=false")
                .arg("--var")
                .arg(format!("COMPUTER_DEV_URL:{}", process.url()))
                .arg("--var")
                .arg(format!("COMPUTER_DEV_SECRET:{}", process.secret()));
        }
    }
    for var in vars {
        command.arg("--var").arg(var);
    }
    command
        .current_dir(repo_root())
        .envs(computer::environment().iter().map(|(k, v)| (k, v)))
        .env("PATH", node_path())
        .env("STEAD_SKIP_BUILD", "1");
    command
}

impl Runtime {
    /// Starts the Worker with its state in `persist`, its computer in the
    /// mode [`ComputerMode::from_env`] picks.
    pub fn start(persist: &Path) -> Runtime {
        Runtime::start_with(persist, ComputerMode::from_env(), &[])
    }

    /// Starts the Worker with its computer in `mode` and extra `--var`
    /// settings (`NAME:value`).
    pub fn start_with(persist: &Path, mode: ComputerMode, vars: &[&str]) -> Runtime {
        build_worker();
        let log = persist.join("wrangler.log");
        let computers = match mode {
            ComputerMode::Container => Computers::Containers,
            ComputerMode::LocalProcess => Computers::Local(std::sync::Mutex::new(
                ComputerProcess::start(&persist.join("computer"), free_port()),
            )),
        };
        // With containers, wrangler first builds the image (minutes when
        // nothing is cached yet).
        let patience = match mode {
            ComputerMode::Container => Duration::from_secs(1200),
            ComputerMode::LocalProcess => Duration::from_secs(90),
        };
        // A port found free can be taken by another runtime starting at the
        // same moment before wrangler binds it: then it starts again on
        // others.
        let mut attempts = 0;
        let (child, base) = loop {
            attempts += 1;
            let port = free_port();
            let command = wrangler_dev(persist, port, &computers, vars);
            let base = format!("http://127.0.0.1:{port}");
            match start_server(command, &log, &base, patience) {
                Ok(child) => break (child, base),
                Err(why) if attempts < 3 && why.contains("Address already in use") => {}
                Err(why) => {
                    let hint = match mode {
                        ComputerMode::Container => {
                            "\n(real containers: where Docker Hub cannot be reached, run \
                             ../shared/container-env/prepare and source the environment it prints, \
                             or leave STEAD_COMPUTER_MODE unset so scripts/computer-mode does; \
                             STEAD_COMPUTER_MODE=local uses the local process)"
                        }
                        ComputerMode::LocalProcess => "",
                    };
                    panic!("{why}{hint}");
                }
            }
        };
        Runtime {
            child,
            base,
            persist: persist.to_path_buf(),
            mode,
            computers,
        }
    }

    /// The base URL, such as `http://127.0.0.1:8787`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The persistence folder.
    pub fn persist(&self) -> &Path {
        &self.persist
    }

    /// How this runtime's computer runs.
    pub fn mode(&self) -> ComputerMode {
        self.mode
    }

    /// The local computer process, when the computer runs as one.
    pub fn computer_process(&self) -> Option<std::sync::MutexGuard<'_, ComputerProcess>> {
        self.computers.local()
    }

    /// Agent `agent`'s computer, to act on from outside. With real
    /// containers this runs a command on it (starting it if needed), so
    /// call it while the agent's computer is idle.
    pub fn machine(&self, agent: &str) -> Machine<'_> {
        match &self.computers {
            Computers::Containers => Machine::find_container(&self.client(), agent),
            Computers::Local(process) => Machine::Local {
                process,
                agent: agent.to_string(),
            },
        }
    }

    /// A client with the dev token.
    pub fn client(&self) -> Client {
        Client::new(&self.base, Some(DEV_TOKEN))
    }

    /// Stops the runtime (all its processes) and waits for it to exit.
    pub fn stop(mut self) {
        self.kill();
    }

    /// Ends the runtime as a crash would: the Workers runtime (`workerd`)
    /// is killed first, so no Durable Object sees anything of the end. A
    /// plain [`Runtime::stop`] lets `wrangler dev` shut down in order, and
    /// it stops the containers before the runtime: an object then sees its
    /// command's computer go away, and records that, a moment before it
    /// goes itself. The rest then stops as `stop` does, so wrangler still
    /// removes its containers.
    pub fn crash(mut self) {
        kill_in_group(self.child.id() as i32, "workerd", libc::SIGKILL);
        self.kill();
    }

    fn kill(&mut self) {
        end_group(&mut self.child);
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A response: status, headers of interest, and body bytes.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// `error.code` of an error body.
    pub fn error_code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A small blocking HTTP client for the API.
#[derive(Clone)]
pub struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    pub fn new(base: &str, token: Option<&str>) -> Client {
        // Redirects are part of what a test asserts (the port route passes
        // a dev server's 3xx through), so the client never follows one.
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(Duration::from_secs(300)))
            .build();
        Client {
            base: base.to_string(),
            token: token.map(str::to_string),
            agent: config.into(),
        }
    }

    /// The same client with another token (or none).
    pub fn with_token(&self, token: Option<&str>) -> Client {
        Client {
            token: token.map(str::to_string),
            ..self.clone()
        }
    }

    fn auth(&self) -> Option<String> {
        self.token.as_ref().map(|t| format!("Bearer {t}"))
    }

    /// Sends `method path` with raw `body`.
    pub fn send(&self, method: &str, path: &str, body: &[u8]) -> Reply {
        self.send_with(method, path, &[], body)
    }

    /// Sends `method path` with raw `body` and extra `headers`.
    pub fn send_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let url = format!("{}{path}", self.base);
        let mut request = ureq::http::Request::builder().method(method).uri(&url);
        if let Some(auth) = self.auth() {
            request = request.header("authorization", auth);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(body.to_vec()).expect("request");
        let response = self.agent.run(request).expect("HTTP request");
        collect(response)
    }

    /// POSTs a JSON value to an agent tool: `tool(agent, "write", json!({...}))`.
    pub fn tool(&self, agent: &str, tool: &str, body: Value) -> Reply {
        self.send(
            "POST",
            &format!("/agents/{agent}/{tool}"),
            body.to_string().as_bytes(),
        )
    }

    /// Creates an agent.
    pub fn create(&self, agent: &str) -> Reply {
        self.send("PUT", &format!("/agents/{agent}"), b"")
    }

    /// Uploads from a reader, streamed; `query` is appended to the URL.
    pub fn upload(
        &self,
        agent: &str,
        path: &str,
        query: &str,
        reader: impl Read + Send + Sync + 'static,
    ) -> Reply {
        self.send_upload(agent, path, query, None, reader)
    }

    /// Uploads `len` bytes from a reader, streamed with a declared length
    /// (as curl sends a file) rather than chunked.
    pub fn upload_sized(
        &self,
        agent: &str,
        path: &str,
        len: u64,
        reader: impl Read + Send + Sync + 'static,
    ) -> Reply {
        self.send_upload(agent, path, "", Some(len), reader)
    }

    fn send_upload(
        &self,
        agent: &str,
        path: &str,
        query: &str,
        len: Option<u64>,
        reader: impl Read + Send + Sync + 'static,
    ) -> Reply {
        let url = format!("{}/agents/{agent}/files{path}{query}", self.base);
        let mut request = self.agent.put(&url);
        if let Some(auth) = self.auth() {
            request = request.header("authorization", auth);
        }
        if let Some(len) = len {
            request = request.header("content-length", len.to_string());
        }
        // Large reads, so the body leaves in large writes.
        let reader = std::io::BufReader::with_capacity(1 << 20, reader);
        let response = request
            .send(ureq::SendBody::from_owned_reader(reader))
            .expect("upload request");
        collect(response)
    }

    /// Downloads a file as a stream: status and a reader of the body.
    pub fn download(&self, agent: &str, path: &str) -> (u16, Box<dyn Read + Send + Sync>) {
        let url = format!("{}/agents/{agent}/files{path}", self.base);
        let mut request = self.agent.get(&url);
        if let Some(auth) = self.auth() {
            request = request.header("authorization", auth);
        }
        let response = request.call().expect("download request");
        let status = response.status().as_u16();
        (status, Box::new(response.into_body().into_reader()))
    }
}

fn collect(mut response: ureq::http::Response<ureq::Body>) -> Reply {
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let body = response
        .body_mut()
        .with_config()
        .limit(1 << 30)
        .read_to_vec()
        .expect("response body");
    Reply {
        status,
        body,
        headers,
    }
}

/// A temporary folder for one runtime's state, removed on drop.
pub fn temp_state() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("stead-state-")
        .tempdir()
        .expect("temp dir")
}

/// Opens a WebSocket to `path` (with its query) on `base`, with the bearer
/// `token` when given; a refused upgrade is its status and body.
fn upgrade(
    base: &str,
    path: &str,
    token: Option<&str>,
) -> Result<tungstenite::WebSocket<std::net::TcpStream>, String> {
    use tungstenite::client::IntoClientRequest;
    let host = base.trim_start_matches("http://");
    let url = format!("ws://{host}{path}");
    let mut request = url.into_client_request().map_err(|e| e.to_string())?;
    if let Some(token) = token {
        let value = format!("Bearer {token}")
            .parse()
            .map_err(|e| format!("{e}"))?;
        request.headers_mut().insert("authorization", value);
    }
    let stream = std::net::TcpStream::connect(host).map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (ws, _) = tungstenite::client::client(request, stream).map_err(|e| match e {
        tungstenite::handshake::HandshakeError::Failure(tungstenite::Error::Http(r)) => {
            let body = r.body().as_deref().map(String::from_utf8_lossy);
            format!("HTTP {}: {}", r.status(), body.unwrap_or_default())
        }
        other => other.to_string(),
    })?;
    Ok(ws)
}

/// A blocking WebSocket client of an agent's `/ws` route.
pub struct Socket {
    ws: tungstenite::WebSocket<std::net::TcpStream>,
}

impl Socket {
    /// Connects to `/agents/{agent}/ws` on `base` (an `http://` URL) with
    /// the bearer `token`; the error names the refusal.
    pub fn connect(base: &str, agent: &str, token: Option<&str>) -> Result<Socket, String> {
        Socket::connect_to(base, &format!("/agents/{agent}/ws"), token)
    }

    /// Connects to `path` (with its query) on `base` with the bearer
    /// `token`: any WebSocket route, such as a port's.
    pub fn connect_to(base: &str, path: &str, token: Option<&str>) -> Result<Socket, String> {
        Ok(Socket {
            ws: upgrade(base, path, token)?,
        })
    }

    /// Sends a JSON message.
    pub fn send(&mut self, message: &Value) {
        self.send_text(&message.to_string());
    }

    /// Sends a raw text message.
    pub fn send_text(&mut self, text: &str) {
        self.ws
            .send(tungstenite::Message::text(text))
            .expect("websocket send");
    }

    /// Sends a binary message.
    pub fn send_binary(&mut self, data: &[u8]) {
        self.ws
            .send(tungstenite::Message::binary(data.to_vec()))
            .expect("websocket send");
    }

    /// The next text or close frame, or `None` after `timeout` without one
    /// (other frames are skipped).
    fn next_frame(&mut self, timeout: Duration) -> Option<tungstenite::Message> {
        self.ws
            .get_mut()
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))
            .expect("read timeout");
        loop {
            match self.ws.read() {
                Ok(message @ (tungstenite::Message::Text(_) | tungstenite::Message::Close(_))) => {
                    return Some(message)
                }
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return None
                }
                Err(e) => panic!("websocket read failed: {e}"),
            }
        }
    }

    /// The next text message, or `None` after `timeout` without one.
    /// Panics if the socket closes.
    pub fn recv_text(&mut self, timeout: Duration) -> Option<String> {
        match self.next_frame(timeout)? {
            tungstenite::Message::Text(text) => Some(text.to_string()),
            other => panic!("the peer closed the socket: {other:?}"),
        }
    }

    /// The code of the close frame the peer sends next, or `None` after
    /// `timeout` without one. Panics on a text message before it.
    pub fn recv_close(&mut self, timeout: Duration) -> Option<u16> {
        match self.next_frame(timeout)? {
            tungstenite::Message::Close(frame) => Some(frame.map_or(1005, |f| u16::from(f.code))),
            other => panic!("a message instead of the close: {other:?}"),
        }
    }

    /// The next JSON message, or `None` after `timeout` without one. Panics
    /// if the socket closes.
    pub fn recv(&mut self, timeout: Duration) -> Option<Value> {
        self.recv_text(timeout).map(|text| {
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("websocket message is not JSON ({e}): {text}"))
        })
    }

    /// Reads messages until one satisfies `done` (returned last), panicking
    /// after `timeout`.
    pub fn recv_until(&mut self, timeout: Duration, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.recv(left) {
                Some(message) => {
                    let finished = done(&message);
                    got.push(message);
                    if finished {
                        return got;
                    }
                }
                None => panic!("timed out; received so far: {got:?}"),
            }
        }
    }

    /// Drops the connection without a close handshake (as a lost network
    /// does).
    pub fn drop_connection(self) {
        let _ = self.ws.get_ref().shutdown(std::net::Shutdown::Both);
    }

    /// Closes the socket cleanly.
    pub fn close(mut self) {
        let _ = self.ws.close(None);
        let _ = self.ws.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server command standing in for wrangler: `sh -c script`.
    fn stand_in(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.arg("-c").arg(script);
        command
    }

    fn unused_base() -> String {
        format!("http://127.0.0.1:{}", free_port())
    }

    /// A wrangler that cannot start (as it exits at once when real
    /// containers lack the environment they need) fails the start at once
    /// with its own message, instead of a wait for a start-up that never
    /// comes.
    #[test]
    fn a_server_that_exits_at_once_fails_the_start_with_its_log() {
        let dir = temp_state();
        let log = dir.path().join("wrangler.log");
        let server = stand_in(
            "echo 'starting'; printf '\\033[31m✘ \\033[41;31m[ERROR]\\033[0m no Docker engine\\n' >&2; exit 1",
        );
        let started = Instant::now();
        let error = start_server(server, &log, &unused_base(), Duration::from_secs(600))
            .expect_err("the server exited");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(
            error.contains("sh exited (exit status: 1) before it was ready"),
            "{error}"
        );
        assert!(
            error.ends_with("starting\n✘ [ERROR] no Docker engine"),
            "{error:?}"
        );
    }

    /// One that runs but never answers is ended at its deadline.
    #[test]
    fn a_server_that_never_answers_fails_at_its_deadline() {
        let dir = temp_state();
        let log = dir.path().join("wrangler.log");
        let server = stand_in("echo 'building the image'; exec sleep 60");
        let started = Instant::now();
        let error = start_server(server, &log, &unused_base(), Duration::from_secs(1))
            .expect_err("the server never answered");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{:?}",
            started.elapsed()
        );
        assert!(error.contains("sh was not ready within 1 s"), "{error}");
        assert!(error.ends_with("building the image"), "{error}");
    }
}
