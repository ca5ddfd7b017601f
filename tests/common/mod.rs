//! Shared helpers for the end-to-end tests: one `wrangler dev` per test
//! binary, a per-test agent, error assertions, raw HTTP for requests the
//! harness client cannot make, and a seeded byte generator for big files.
#![allow(dead_code)] // Each test binary uses its own subset.

use std::any::Any;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::{json, Value};
use stead_harness::{temp_state, Client, Reply, Runtime};

/// The runtime shared by the tests of one binary, with its state folder (a
/// `TempDir`, removed on drop). It lives in a static, which is never
/// dropped, so [`stop_shared`] ends it when the process exits.
static SHARED: Mutex<Option<(Runtime, Box<dyn Any + Send>)>> = Mutex::new(None);
/// The shared runtime's base URL and client, once it is up.
static ENDPOINT: OnceLock<(String, Client)> = OnceLock::new();

extern "C" {
    /// The C library's `atexit(3)`: the test harness leaves through
    /// `exit(3)`, which runs these.
    fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
}

extern "C" fn stop_shared() {
    let shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some((runtime, state)) = shared {
        runtime.stop();
        drop(state);
    }
}

fn endpoint() -> &'static (String, Client) {
    ENDPOINT.get_or_init(|| {
        let state = temp_state();
        let runtime = Runtime::start(state.path());
        let endpoint = (runtime.base().to_string(), runtime.client());
        *SHARED.lock().unwrap_or_else(PoisonError::into_inner) = Some((runtime, Box::new(state)));
        // SAFETY: registers a plain function to run at process exit; it only
        // stops the runtime stored above.
        let registered = unsafe { atexit(stop_shared) };
        assert_eq!(registered, 0, "atexit failed");
        endpoint
    })
}

/// A client of the binary's shared runtime (started on first use).
pub fn client() -> Client {
    endpoint().1.clone()
}

/// Runs `f` with the binary's shared runtime (started on first use).
pub fn with_runtime<T>(f: impl FnOnce(&Runtime) -> T) -> T {
    endpoint();
    let shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    let (runtime, _) = shared.as_ref().expect("the shared runtime runs");
    f(runtime)
}

/// The shared runtime's base URL, such as `http://127.0.0.1:8787`.
pub fn base() -> &'static str {
    &endpoint().0
}

/// Asserts `reply` has `status`, showing the body when it does not.
#[track_caller]
pub fn expect_status(reply: &Reply, status: u16) {
    assert_eq!(
        reply.status,
        status,
        "unexpected status; body: {}",
        String::from_utf8_lossy(&reply.body)
    );
}

/// Asserts `reply` is a successful JSON answer and returns it.
#[track_caller]
pub fn expect_ok(reply: &Reply) -> Value {
    expect_status(reply, 200);
    reply.json()
}

/// Asserts `reply` made a resource: `201` with its `Location` (a new one)
/// or `200` without (a `PUT` that replaced one); returns the JSON.
#[track_caller]
pub fn expect_made(reply: &Reply) -> Value {
    match reply.status {
        201 => assert!(
            reply.header("location").is_some(),
            "a 201 without a Location"
        ),
        _ => expect_status(reply, 200),
    }
    reply.json()
}

/// Asserts `reply` is the error `code` with `status` and returns the error
/// object (`{"code","message",...}`).
#[track_caller]
pub fn expect_error(reply: &Reply, status: u16, code: &str) -> Value {
    expect_status(reply, status);
    let error = reply.json()["error"].clone();
    assert_eq!(error["code"], code, "unexpected error: {error}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "error without a message: {error}"
    );
    error
}

/// One agent's workspace, reached through a client.
#[derive(Clone)]
pub struct Agent {
    pub id: String,
    pub client: Client,
}

impl Agent {
    /// Creates the fresh agent `id` on the shared runtime.
    pub fn new(id: &str) -> Agent {
        Agent::create_on(client(), id)
    }

    /// Creates the fresh agent `id` through `client`.
    #[track_caller]
    pub fn create_on(client: Client, id: &str) -> Agent {
        let created = client.create(id);
        expect_status(&created, 201);
        assert_eq!(
            created.json(),
            json!({ "agent": id, "created": true, "revision": 0 })
        );
        Agent {
            id: id.to_string(),
            client,
        }
    }

    /// An agent that may or may not exist; nothing is sent.
    pub fn existing(id: &str) -> Agent {
        Agent {
            id: id.to_string(),
            client: client(),
        }
    }

    /// The URL path of this agent followed by `rest` (`""`, `"/ping"`, ...).
    pub fn url(&self, rest: &str) -> String {
        format!("/agents/{}{rest}", self.id)
    }

    /// Sends `method` to this agent's URL `rest` with a raw body.
    pub fn send(&self, method: &str, rest: &str, body: &[u8]) -> Reply {
        self.client.send(method, &self.url(rest), body)
    }

    /// Calls `tool` with a JSON body.
    pub fn call(&self, tool: &str, body: Value) -> Reply {
        self.client.tool(&self.id, tool, body)
    }

    /// Calls `tool` and asserts it succeeds.
    #[track_caller]
    pub fn ok(&self, tool: &str, body: Value) -> Value {
        expect_ok(&self.call(tool, body))
    }

    /// Runs `command` on the computer (never the light shell) and asserts
    /// it ran there; a cold start with an environment to restore fits in
    /// its two minutes.
    #[track_caller]
    pub fn on_computer(&self, command: &str) -> Value {
        let out = self.ok(
            "exec",
            json!({ "command": command, "backend": "computer", "timeout_ms": 120_000 }),
        );
        assert_eq!(out["backend"], "computer", "{out}");
        out
    }

    /// Writes UTF-8 `content` to `path`.
    #[track_caller]
    pub fn write(&self, path: &str, content: &str) -> Value {
        self.ok("write", json!({ "path": path, "content": content }))
    }

    /// The whole text of the file at `path` (a line read).
    #[track_caller]
    pub fn read(&self, path: &str) -> String {
        let read = self.ok("read", json!({ "path": path }));
        assert_eq!(read["truncated"], false, "read of {path} truncated");
        read["content"].as_str().expect("content").to_string()
    }

    /// `stat` of `path` (following symlinks).
    #[track_caller]
    pub fn stat(&self, path: &str) -> Value {
        self.ok("stat", json!({ "path": path }))
    }

    /// `GET /agents/{id}`.
    #[track_caller]
    pub fn info(&self) -> Value {
        expect_ok(&self.send("GET", "", b""))
    }

    /// The workspace revision.
    #[track_caller]
    pub fn revision(&self) -> i64 {
        self.info()["usage"]["revision"].as_i64().expect("revision")
    }

    /// Every path below the root, sorted.
    #[track_caller]
    pub fn tree(&self) -> Vec<String> {
        let page = self.ok("glob", json!({ "pattern": "**", "limit": 10000 }));
        assert_eq!(page["truncated"], false);
        let mut paths: Vec<String> = page["matches"]
            .as_array()
            .expect("matches")
            .iter()
            .map(|m| m["path"].as_str().expect("path").to_string())
            .collect();
        paths.sort();
        paths
    }

    /// Everything observable about a small workspace: usage (with the
    /// revision), every node as `glob` shows it, and the bytes of every file
    /// (whose names must need no percent-encoding).
    #[track_caller]
    pub fn snapshot(&self) -> Value {
        let usage = self.info()["usage"].clone();
        let nodes = self.ok("glob", json!({ "pattern": "**", "limit": 10000 }))["matches"].clone();
        let contents: Vec<Value> = nodes
            .as_array()
            .expect("matches")
            .iter()
            .filter(|m| m["type"] == "file")
            .map(|m| {
                let path = m["path"].as_str().expect("path");
                json!([path, self.download(path)])
            })
            .collect();
        json!({ "usage": usage, "nodes": nodes, "contents": contents })
    }

    /// Runs `request`, which must fail with `status` and `code`, and checks
    /// that the workspace is exactly as before. Returns the error object.
    #[track_caller]
    pub fn rejects(&self, status: u16, code: &str, request: impl FnOnce() -> Reply) -> Value {
        let before = self.snapshot();
        let error = expect_error(&request(), status, code);
        assert_eq!(
            self.snapshot(),
            before,
            "the failed request ({code}) changed the workspace"
        );
        error
    }

    /// [`Agent::rejects`] for a batch of requests refused before they reach
    /// a workspace (routing, credentials): each must fail with `status` and
    /// `code`; the workspace is compared once, around the whole batch.
    #[track_caller]
    pub fn rejects_all<T: std::fmt::Debug>(
        &self,
        status: u16,
        code: &str,
        cases: impl IntoIterator<Item = T>,
        request: impl Fn(&T) -> Reply,
    ) {
        let before = self.snapshot();
        for case in cases {
            let reply = request(&case);
            assert_eq!(
                (reply.status, reply.error_code()),
                (status, code.to_string()),
                "{case:?}: {}",
                String::from_utf8_lossy(&reply.body)
            );
            expect_error(&reply, status, code);
        }
        assert_eq!(
            self.snapshot(),
            before,
            "a refused request ({code}) changed the workspace"
        );
    }

    /// Streams `reader` to `PUT /agents/{id}/files{path}{query}`.
    pub fn upload(
        &self,
        path: &str,
        query: &str,
        reader: impl Read + Send + Sync + 'static,
    ) -> Reply {
        self.client.upload(&self.id, path, query, reader)
    }

    /// Downloads the file at `path` (as it goes in the URL) whole.
    #[track_caller]
    pub fn download(&self, path: &str) -> Vec<u8> {
        let (status, mut body) = self.client.download(&self.id, path);
        let mut bytes = Vec::new();
        body.read_to_end(&mut bytes).expect("download body");
        assert_eq!(
            status,
            200,
            "download of {path}: {}",
            String::from_utf8_lossy(&bytes)
        );
        bytes
    }
}

/// The `Authorization` header value the runtime accepts.
pub fn bearer() -> String {
    format!("Bearer {}", stead_harness::DEV_TOKEN)
}

/// A request sent over a plain TCP connection, for what the harness client
/// cannot express: arbitrary `Authorization` and `Host` headers, raw URL
/// bytes, chunked bodies, a declared length the body does not have. `Content-Length` is
/// added unless `headers` set it or `Transfer-Encoding` (then `body` must
/// already be encoded).
pub fn raw(method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    raw_at(base(), method, target, headers, body)
}

/// [`raw`] to the runtime at `base` (one a test started itself).
pub fn raw_at(
    base: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let host = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).expect("connect");
    // A server that never answers fails the test instead of hanging it.
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .expect("read timeout");
    let mut head = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\n");
    // A `Host` of the test's own (a port's origin) replaces the address's.
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: {host}\r\n"));
    }
    let framed = headers.iter().any(|(name, _)| {
        name.eq_ignore_ascii_case("transfer-encoding")
            || name.eq_ignore_ascii_case("content-length")
    });
    if !framed {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("send head");
    // Send the body while reading: the server may answer (and close) before
    // it has read a body it rejects.
    let mut writer = stream.try_clone().expect("clone stream");
    let mut response = Vec::new();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let _ = writer.write_all(body);
        });
        stream.read_to_end(&mut response).expect("read response");
    });
    parse_response(&response)
}

/// [`raw`] with the accepted token.
pub fn raw_authorized(method: &str, target: &str, body: &[u8]) -> Reply {
    raw(method, target, &[("Authorization", &bearer())], body)
}

/// `body` as one chunk of a chunked transfer encoding.
pub fn chunked(body: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n0\r\n\r\n");
    out
}

fn parse_response(response: &[u8]) -> Reply {
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| {
            panic!(
                "incomplete response: {:?}",
                String::from_utf8_lossy(response)
            )
        });
    let head = std::str::from_utf8(&response[..split]).expect("response head");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked")
    });
    let raw_body = &response[split + 4..];
    let body = if chunked {
        dechunk(raw_body)
    } else {
        raw_body.to_vec()
    };
    Reply {
        status,
        body,
        headers,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("chunk size line");
        let size_text = std::str::from_utf8(&data[..line_end]).expect("chunk size");
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
            .expect("hex chunk size");
        if size == 0 {
            return body;
        }
        let start = line_end + 2;
        body.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}

/// Deterministic pseudo-random bytes: byte `i` depends only on the seed and
/// `i`, so any two readers with the same seed agree however they are read.
pub struct Noise {
    seed: u64,
    pos: u64,
    len: u64,
}

impl Noise {
    pub fn new(seed: u64, len: u64) -> Noise {
        Noise { seed, pos: 0, len }
    }

    /// The whole stream, for small sizes.
    pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        Noise::new(seed, len as u64)
            .read_to_end(&mut out)
            .expect("noise");
        out
    }
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Read for Noise {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (self.len - self.pos).min(buf.len() as u64) as usize;
        let mut filled = 0;
        while filled < n {
            let word = mix(self.seed ^ mix(self.pos / 8)).to_le_bytes();
            let skip = (self.pos % 8) as usize;
            let take = (8 - skip).min(n - filled);
            buf[filled..filled + take].copy_from_slice(&word[skip..skip + take]);
            filled += take;
            self.pos += take as u64;
        }
        Ok(n)
    }
}

/// Reads `actual` to its end, comparing it piece by piece with `expected`;
/// returns how many bytes matched. Panics at the first difference.
pub fn assert_same_stream(mut actual: impl Read, mut expected: impl Read) -> u64 {
    let mut got = vec![0u8; 1 << 20];
    let mut want = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    loop {
        let n = actual.read(&mut got).expect("read actual stream");
        if n == 0 {
            let rest = expected.read(&mut want[..1]).expect("read expected stream");
            assert_eq!(rest, 0, "stream ended early, at byte {offset}");
            return offset;
        }
        expected
            .read_exact(&mut want[..n])
            .unwrap_or_else(|e| panic!("stream longer than expected at byte {offset}: {e}"));
        if got[..n] != want[..n] {
            let at = (0..n).find(|&i| got[i] != want[i]).unwrap_or(0);
            panic!("streams differ at byte {}", offset + at as u64);
        }
        offset += n as u64;
    }
}

/// Mints a token for `agent` with `scopes` (living `ttl_seconds`, or the
/// default lifetime) with the admin token: the token and its id.
#[track_caller]
pub fn mint(agent: &str, scopes: &[&str], ttl_seconds: Option<i64>) -> (String, String) {
    let mut body = json!({ "agent": agent, "scopes": scopes });
    if let Some(ttl) = ttl_seconds {
        body["ttl_seconds"] = json!(ttl);
    }
    let reply = client().send("POST", "/tokens", body.to_string().as_bytes());
    expect_status(&reply, 201);
    let minted = reply.json();
    let field = |name: &str| minted[name].as_str().expect(name).to_string();
    (field("token"), field("id"))
}

/// A Python script that writes the wheel `{name}-{version}-py3-none-any.whl`
/// into its working directory: a package `name` whose `__init__.py` is
/// `init_py`. A wheel is a zip with the package and its metadata, so the
/// computer makes one offline (its network is off by default).
pub fn wheel_maker(name: &str, version: &str, init_py: &str) -> String {
    let dist = format!("{name}-{version}.dist-info");
    format!(
        "import zipfile\n\
         with zipfile.ZipFile('{name}-{version}-py3-none-any.whl', 'w') as w:\n\
         \x20   w.writestr('{name}/__init__.py', {init_py:?})\n\
         \x20   w.writestr('{dist}/METADATA', 'Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n')\n\
         \x20   w.writestr('{dist}/WHEEL', 'Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
         \x20   w.writestr('{dist}/RECORD', '')\n"
    )
}
