//! The agent on a host made for tests: real SQLite, a clock the test moves,
//! sockets that record what they were sent, and a transport to a real
//! `stead-computer` process.
//!
//! - [`FakeHost`] is the one fake: the platform's alarm, sockets, event
//!   streams and outbound calls do not exist outside Workers, so it
//!   records them.
//!   Its database is real SQLite ([`FaultySql`] passes every statement to
//!   it, failing the ones a test names, to reach failure paths).
//! - [`HttpTransport`] is real HTTP to a real `stead-computer`; wrapped in
//!   [`FaultyTransport`] it breaks chosen steps of the protocol.
#![allow(dead_code)] // Each test binary uses its own subset.

#[path = "../../../git/tests/common/http_client.rs"]
mod http_client;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;

use futures::StreamExt;
use serde_json::Value;
use stead_agent::auth::{Caller, Scope};
use stead_agent::host::{ByteStream, Method, Payload, Wire, WireMessage, WireStream};
use stead_agent::mcp::listen::ListenState;
use stead_agent::protocol::SocketState;
use stead_agent::HostError;
use stead_agent::{
    Action, Agent, ApiError, Bytes, ComputerError, Entry, EventStream, HookHeaders, Host, Reply,
    Request, Socket, Transport,
};
use stead_sql::{Param, Row, Sql, SqlError, SqliteDb};
use stead_vfs::tier::fake::FakeStore;
use stead_vfs::tier::TierPolicy;

/// Runs a future to its end on this thread.
pub fn block_on<F: Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

/// Real SQLite that fails every statement containing one of the given
/// fragments, so a test can reach what happens when storage fails.
#[derive(Clone)]
pub struct FaultySql {
    db: Rc<SqliteDb>,
    failing: Rc<RefCell<Vec<Failing>>>,
    /// Every statement run through [`Sql::query`], in order: what a
    /// statement budget counts.
    pub statements: Rc<RefCell<Vec<String>>>,
}

/// A statement fragment to fail: how many matching statements to let
/// through first, and how many to fail then (`None`: every one).
type Failing = (String, usize, Option<usize>);

impl FaultySql {
    pub fn new() -> Self {
        FaultySql {
            db: Rc::new(SqliteDb::memory().expect("memory database")),
            failing: Rc::default(),
            statements: Rc::default(),
        }
    }

    /// Fails statements containing `fragment` from now on.
    pub fn fail(&self, fragment: &str) {
        self.failing
            .borrow_mut()
            .push((fragment.to_string(), 0, None));
    }

    /// Fails the next statement containing `fragment`, once.
    pub fn fail_once(&self, fragment: &str) {
        self.fail_nth(fragment, 1);
    }

    /// Fails the `nth` statement from now containing `fragment` (1 = the
    /// next one), once.
    pub fn fail_nth(&self, fragment: &str, nth: usize) {
        self.failing
            .borrow_mut()
            .push((fragment.to_string(), nth - 1, Some(1)));
    }

    /// Stops failing statements.
    pub fn heal(&self) {
        self.failing.borrow_mut().clear();
    }

    /// The rows inserted, updated or deleted so far (triggers included).
    pub fn rows_written(&self) -> u64 {
        self.db.total_changes()
    }
}

impl Sql for FaultySql {
    fn query(&self, statement: &str, params: &[Param<'_>]) -> Result<Vec<Row>, SqlError> {
        let mut failing = self.failing.borrow_mut();
        if let Some(at) = failing
            .iter()
            .position(|(fragment, _, _)| statement.contains(fragment.as_str()))
        {
            let (_, skip, left) = &mut failing[at];
            if *skip > 0 {
                *skip -= 1;
            } else {
                if let Some(left) = left {
                    *left -= 1;
                    if *left == 0 {
                        failing.remove(at);
                    }
                }
                return Err(SqlError::engine(statement, "injected failure"));
            }
        }
        drop(failing);
        self.statements.borrow_mut().push(statement.to_string());
        self.db.query(statement, params)
    }

    fn transaction<T, E>(&self, body: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<SqlError>,
    {
        self.db.transaction(body)
    }
}

/// A socket that records what it was sent.
#[derive(Clone, Default)]
pub struct FakeSocket(Rc<SocketInner>);

#[derive(Default)]
pub struct SocketInner {
    sent: RefCell<Vec<Value>>,
    bytes: RefCell<Vec<u8>>,
    state: RefCell<Option<SocketState>>,
    closed: Cell<Option<u16>>,
}

impl FakeSocket {
    /// Takes the messages sent so far.
    pub fn take(&self) -> Vec<Value> {
        std::mem::take(&mut self.0.sent.borrow_mut())
    }

    pub fn closed(&self) -> Option<u16> {
        self.0.closed.get()
    }

    /// Takes the binary messages sent so far, joined.
    pub fn take_bytes(&self) -> Vec<u8> {
        std::mem::take(&mut self.0.bytes.borrow_mut())
    }
}

impl Socket for FakeSocket {
    fn send(&self, text: &str) {
        let value = serde_json::from_str(text).expect("sockets are sent JSON");
        self.0.sent.borrow_mut().push(value);
    }

    fn send_bytes(&self, bytes: &[u8]) {
        self.0.bytes.borrow_mut().extend_from_slice(bytes);
    }

    fn state(&self) -> Option<SocketState> {
        self.0.state.borrow().clone()
    }

    fn save(&self, state: &SocketState) {
        // Stored as the platform would: serialized.
        let text = serde_json::to_string(state).expect("attachments serialize");
        *self.0.state.borrow_mut() = Some(serde_json::from_str(&text).expect("and read back"));
    }

    fn close(&self, code: u16, _reason: &str) {
        self.0.closed.set(Some(code));
    }
}

/// An event stream that records what it was sent.
#[derive(Clone)]
pub struct FakeStream(Rc<StreamInner>);

pub struct StreamInner {
    sent: RefCell<String>,
    state: RefCell<ListenState>,
    closed: Cell<bool>,
    /// The client went away: sends fail.
    gone: Cell<bool>,
}

impl FakeStream {
    /// Takes the SSE text sent so far.
    pub fn take(&self) -> String {
        std::mem::take(&mut self.0.sent.borrow_mut())
    }

    /// The events sent so far, as `(id, message)`, taken.
    pub fn events(&self) -> Vec<(Option<String>, Value)> {
        parse_events(&self.take())
    }

    pub fn closed(&self) -> bool {
        self.0.closed.get()
    }

    /// The client goes away, as a dropped connection does.
    pub fn disconnect(&self) {
        self.0.gone.set(true);
    }
}

/// Parses `text/event-stream` text into `(id, data as JSON)` per event.
pub fn parse_events(text: &str) -> Vec<(Option<String>, Value)> {
    text.split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .map(|event| {
            let mut id = None;
            let mut data = String::new();
            for line in event.lines() {
                if let Some(value) = line.strip_prefix("id: ") {
                    id = Some(value.to_string());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data.push_str(value);
                }
            }
            let data = serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {event}"));
            (id, data)
        })
        .collect()
}

impl EventStream for FakeStream {
    fn send(&self, text: &str) -> bool {
        if self.0.gone.get() || self.0.closed.get() {
            return false;
        }
        self.0.sent.borrow_mut().push_str(text);
        true
    }

    fn state(&self) -> ListenState {
        self.0.state.borrow().clone()
    }

    fn save(&self, state: &ListenState) {
        *self.0.state.borrow_mut() = state.clone();
    }

    fn close(&self) {
        self.0.closed.set(true);
    }
}

/// A webhook call the agent made.
#[derive(Debug, Clone)]
pub struct Posted {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// The platform, for tests: see the module docs.
pub struct FakeHost {
    pub db: FaultySql,
    pub clock: Cell<i64>,
    pub alarm: Cell<Option<i64>>,
    pub sockets: RefCell<Vec<FakeSocket>>,
    pub streams: RefCell<Vec<FakeStream>>,
    pub posted: RefCell<Vec<Posted>>,
    /// Answers for the next webhook calls (default 200).
    pub answers: RefCell<VecDeque<Result<u16, String>>>,
    /// The agents whose computers were asked for.
    pub computers_asked: RefCell<Vec<String>>,
    pub computer: RefCell<Option<FaultyTransport>>,
    /// What host names resolve to (a name not here does not resolve).
    pub names: RefCell<Vec<(String, Vec<std::net::IpAddr>)>>,
    /// Whether this is a local development runtime.
    pub local: Cell<bool>,
    /// Other agents of the same deployment, by id (a fork's targets).
    pub peers: RefCell<Vec<(String, Rc<Agent<FakeHost>>)>>,
    /// How long one alarm follows a computer job.
    pub job_slice_ms: Cell<u64>,
    /// The object store chunks move to (a fake; none by default).
    pub store: Option<FakeStore>,
    /// When chunks move (`TierPolicy::default()` unless a test shortens it).
    pub tier_policy: Cell<TierPolicy>,
    random: Cell<u64>,
}

impl FakeHost {
    pub fn new(db: FaultySql) -> Self {
        FakeHost {
            db,
            clock: Cell::new(1_700_000_000_000),
            alarm: Cell::new(None),
            sockets: RefCell::default(),
            streams: RefCell::default(),
            posted: RefCell::default(),
            answers: RefCell::default(),
            computers_asked: RefCell::default(),
            computer: RefCell::new(None),
            names: RefCell::default(),
            local: Cell::new(false),
            peers: RefCell::default(),
            job_slice_ms: Cell::new(10 * 60_000),
            store: None,
            tier_policy: Cell::new(TierPolicy::default()),
            random: Cell::new(0),
        }
    }

    /// Moves the clock on.
    pub fn advance(&self, ms: i64) {
        self.clock.set(self.clock.get() + ms);
    }

    /// Accepts a socket with `state` as its attachment.
    pub fn accept(&self, state: &SocketState) -> FakeSocket {
        let socket = FakeSocket::default();
        socket.save(state);
        self.sockets.borrow_mut().push(socket.clone());
        socket
    }
}

impl Host for FakeHost {
    type Db = FaultySql;
    type Socket = FakeSocket;
    type Stream = FakeStream;
    type Computer = FaultyTransport;
    type Store = FakeStore;

    fn db(&self) -> &FaultySql {
        &self.db
    }

    fn now_ms(&self) -> i64 {
        self.clock.get()
    }

    fn precise_ms(&self) -> f64 {
        self.clock.get() as f64
    }

    fn statements_run(&self) -> u64 {
        self.db.statements.borrow().len() as u64
    }

    fn random_hex(&self, chars: usize) -> Result<String, HostError> {
        // Unique, not random: tests need ids, not secrecy.
        self.random.set(self.random.get() + 1);
        let text = format!("{:0width$x}", self.random.get(), width = chars);
        Ok(text[text.len() - chars..].to_string())
    }

    async fn set_alarm(&self, at_ms: Option<i64>) -> Result<(), HostError> {
        self.alarm.set(at_ms);
        Ok(())
    }

    async fn wipe(&self) -> Result<(), HostError> {
        let tables = self
            .db
            .query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
                &[],
            )
            .map_err(|e| HostError::new("wipe", e))?;
        for table in tables {
            let name = table.text(0).expect("a name").to_string();
            self.db
                .execute(&format!("DROP TABLE \"{name}\""), &[])
                .map_err(|e| HostError::new("wipe", e))?;
        }
        Ok(())
    }

    fn database_size(&self) -> u64 {
        0
    }

    fn sockets(&self) -> Vec<FakeSocket> {
        self.sockets
            .borrow()
            .iter()
            .filter(|s| s.closed().is_none())
            .cloned()
            .collect()
    }

    fn open_stream(&self, state: ListenState) -> FakeStream {
        let stream = FakeStream(Rc::new(StreamInner {
            sent: RefCell::default(),
            state: RefCell::new(state),
            closed: Cell::new(false),
            gone: Cell::new(false),
        }));
        self.streams.borrow_mut().push(stream.clone());
        stream
    }

    fn streams(&self) -> Vec<FakeStream> {
        self.streams
            .borrow()
            .iter()
            .filter(|s| !s.closed())
            .cloned()
            .collect()
    }

    async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: String,
    ) -> Result<u16, String> {
        self.posted.borrow_mut().push(Posted {
            url: url.to_string(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.clone()))
                .collect(),
            body,
        });
        self.answers.borrow_mut().pop_front().unwrap_or(Ok(200))
    }

    /// A real request over the machine's network (the tests' servers are
    /// on loopback), blocking: the test host runs one thing at a time.
    async fn fetch(
        &self,
        request: &stead_agent::host::HttpRequest,
        limit: usize,
    ) -> Result<stead_agent::host::HttpResponse, String> {
        let post = request.method == stead_agent::host::HttpMethod::Post;
        let (status, content_type, body) = http_client::send(
            post,
            &request.url,
            &request.headers,
            &request.body,
            limit as u64,
        )?;
        Ok(stead_agent::host::HttpResponse {
            status,
            content_type,
            body,
        })
    }

    async fn call_agent(
        &self,
        agent: &str,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(u16, Value), String> {
        let peer = self
            .peers
            .borrow()
            .iter()
            .find(|(id, _)| id == agent)
            .map(|(_, peer)| peer.clone())
            .ok_or_else(|| format!("no agent {agent} in this test"))?;
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let route = stead_agent::route("POST", &format!("/agents/{agent}{path}"))
            .map_err(|e| e.to_string())?;
        let stead_agent::Route::Agent { id, action } = route else {
            return Err("not an agent route".into());
        };
        let mut request = request(&id, action, Caller::Admin, "");
        request.body = Bytes(body);
        // Decoded as the Workspace glue decodes it (`key=value&...`).
        request.query = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                let decode = |text: &str| stead_agent::route::percent_decode(text).unwrap();
                (decode(key), decode(value))
            })
            .collect();
        // Boxed: the peer's dispatch may call back into a host like this one.
        let reply = Box::pin(peer.dispatch(request))
            .await
            .unwrap_or_else(|error| Reply::error(&error));
        match reply {
            Reply::Json { status, body, .. } => Ok((status, body)),
            other => Err(format!("not a JSON reply: {other:?}")),
        }
    }

    async fn resolve(&self, name: &str) -> Result<Vec<std::net::IpAddr>, String> {
        self.names
            .borrow()
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, addresses)| addresses.clone())
            .ok_or_else(|| format!("{name}: no such name"))
    }

    async fn sleep(&self, ms: u64) {
        // A real timer (the clock the test moves is for the agent's
        // records; a slice ends in real time, as on the platform).
        pause(ms).await;
    }

    fn job_slice_ms(&self) -> u64 {
        self.job_slice_ms.get()
    }

    fn share_key(&self) -> Option<String> {
        Some(SHARE_KEY.into())
    }

    fn ports_host(&self) -> Option<String> {
        Some(PORTS_HOST.into())
    }

    fn local_development(&self) -> bool {
        self.local.get()
    }

    fn chunk_store(&self) -> Option<&FakeStore> {
        self.store.as_ref()
    }

    fn tier_policy(&self) -> TierPolicy {
        self.tier_policy.get()
    }

    fn computer(
        &self,
        agent: &str,
        _settings: stead_agent::settings::ComputerSettings,
    ) -> Result<FaultyTransport, ComputerError> {
        self.computers_asked.borrow_mut().push(agent.to_string());
        self.computer
            .borrow()
            .clone()
            .ok_or(ComputerError::Unavailable)
    }
}

/// The key share links are signed with in tests.
pub const SHARE_KEY: &str = "test-admin-token";
/// The parent host of the ports' own origins.
pub const PORTS_HOST: &str = "ports.test";

/// An agent on a fresh fake host.
pub fn agent() -> Agent<FakeHost> {
    Agent::new(FakeHost::new(FaultySql::new()))
}

/// Opens agent `a`'s terminal with `query` as `caller`, as the Workspace
/// glue does: the accepted socket (sent `ready` and the replay), or the
/// refusal's status and body.
pub fn open_terminal(
    agent: &Agent<FakeHost>,
    caller: Caller,
    query: &[(&str, &str)],
) -> Result<FakeSocket, (u16, Value)> {
    let mut req = request("a", Action::Terminal, caller, "");
    req.upgrade = true;
    req.query = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    match block_on(agent.dispatch(req)) {
        Ok(Reply::Socket(state)) => {
            let socket = agent.host().accept(&state);
            agent.socket_accepted(&socket);
            Ok(socket)
        }
        Ok(Reply::Json { status, body, .. }) => Err((status, body)),
        Ok(other) => panic!("{other:?}"),
        Err(error) => Err((error.status(), error.body())),
    }
}

/// A request as the HTTP entry point builds it.
pub fn request(agent: &str, action: Action, caller: Caller, body: &str) -> Request<Bytes> {
    Request {
        entry: Entry::Http,
        agent: agent.to_string(),
        action,
        caller,
        query: Vec::new(),
        hook: HookHeaders::default(),
        range: Default::default(),
        upgrade: false,
        origin: "http://stead.test".into(),
        body: Bytes(body.as_bytes().to_vec()),
    }
}

/// The status and JSON body of a dispatched request, errors included.
pub fn call(agent: &Agent<FakeHost>, request: Request<Bytes>) -> (u16, Value) {
    let reply = block_on(agent.dispatch(request)).unwrap_or_else(|error| Reply::error(&error));
    match reply {
        Reply::Json { status, body, .. } => (status, body),
        other => panic!("not a JSON reply: {other:?}"),
    }
}

/// Dispatches as the admin and expects success.
#[track_caller]
pub fn ok(agent: &Agent<FakeHost>, id: &str, action: Action, body: &str) -> Value {
    let (status, body) = call(agent, request(id, action, Caller::Admin, body));
    assert!((200..300).contains(&status), "status {status}: {body}");
    body
}

/// The status and error code of an answer, for asserting a refusal.
pub fn failure(status: u16, body: &Value) -> (u16, &str) {
    (status, body["error"]["code"].as_str().unwrap_or(""))
}

/// The text of job `id`'s kept output, both streams in order.
pub fn job_text(agent: &Agent<FakeHost>, id: i64) -> String {
    ok(agent, "a", Action::JobOutput(id), "")["output"]
        .as_array()
        .expect("output pieces")
        .iter()
        .map(|p| p["data"].as_str().expect("text data").to_string())
        .collect()
}

/// Creates agent `id`.
pub fn create(agent: &Agent<FakeHost>, id: &str) {
    ok(agent, id, Action::Create, "");
}

/// A caller holding `scopes`, with a token that does not expire in a test.
pub fn token(id: &str, scopes: &[Scope]) -> Caller {
    token_until(id, scopes, i64::MAX)
}

/// A caller holding `scopes` with a token that expires at `expires` (Unix
/// seconds).
pub fn token_until(id: &str, scopes: &[Scope], expires: i64) -> Caller {
    Caller::Token {
        id: id.to_string(),
        scopes: scopes.to_vec(),
        expires,
    }
}

/// Real HTTP to a real `stead-computer`, on threads so its streams arrive
/// as the executor polls (a cancel can go out while an exec streams).
#[derive(Clone)]
pub struct HttpTransport {
    base: String,
    agent: String,
    secret: String,
}

impl HttpTransport {
    /// Agent `agent`'s computer on the program `process`.
    pub fn new(process: &stead_harness::ComputerProcess, agent: &str) -> Self {
        HttpTransport {
            base: process.url(),
            agent: agent.to_string(),
            secret: process.secret().to_string(),
        }
    }
}

/// The sending half of a WebSocket served by a thread (see
/// [`HttpTransport`]'s `connect`): `None` closes it.
#[derive(Clone)]
pub struct ThreadWire(std::sync::mpsc::Sender<Option<WireMessage>>);

impl Wire for ThreadWire {
    fn send(&self, message: WireMessage) -> Result<(), String> {
        self.0
            .send(Some(message))
            .map_err(|_| "the socket is gone".to_string())
    }

    fn close(&self) {
        let _ = self.0.send(None);
    }
}

/// Serves one WebSocket on this thread: what `outgoing` gives is sent,
/// what arrives goes to `incoming`, until either side closes.
fn serve_socket(
    mut ws: tungstenite::WebSocket<std::net::TcpStream>,
    outgoing: std::sync::mpsc::Receiver<Option<WireMessage>>,
    incoming: futures::channel::mpsc::UnboundedSender<Result<WireMessage, String>>,
) {
    use std::sync::mpsc::TryRecvError;
    use tungstenite::Message;
    let _ = ws
        .get_mut()
        .set_read_timeout(Some(std::time::Duration::from_millis(5)));
    loop {
        loop {
            let message = match outgoing.try_recv() {
                Ok(Some(WireMessage::Text(text))) => Message::text(text),
                Ok(Some(WireMessage::Binary(bytes))) => Message::binary(bytes),
                Ok(None) | Err(TryRecvError::Disconnected) => {
                    let _ = ws.close(None);
                    let _ = ws.flush();
                    return;
                }
                Err(TryRecvError::Empty) => break,
            };
            if ws.send(message).is_err() {
                return;
            }
        }
        let message = match ws.read() {
            Ok(message) => message,
            Err(error) if read_timed_out(&error) => {
                if incoming.is_closed() {
                    return;
                }
                continue;
            }
            Err(tungstenite::Error::ConnectionClosed) => return,
            Err(error) => {
                let _ = incoming.unbounded_send(Err(error.to_string()));
                return;
            }
        };
        let message = match message {
            Message::Text(text) => WireMessage::Text(text.to_string()),
            Message::Binary(bytes) => WireMessage::Binary(bytes.to_vec()),
            Message::Close(_) => return,
            _ => continue,
        };
        if incoming.unbounded_send(Ok(message)).is_err() {
            return;
        }
    }
}

/// Whether a read failed only because nothing came within its timeout.
fn read_timed_out(error: &tungstenite::Error) -> bool {
    use std::io::ErrorKind;
    matches!(error, tungstenite::Error::Io(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut))
}

impl Transport for HttpTransport {
    type Wire = ThreadWire;

    /// A real WebSocket to the program, served by a thread.
    async fn connect(&self, path: &str) -> Result<(ThreadWire, WireStream), String> {
        use tungstenite::client::IntoClientRequest;
        let host = self.base.trim_start_matches("http://").to_string();
        let mut request = format!("ws://{host}{path}")
            .into_client_request()
            .map_err(|e| e.to_string())?;
        let headers = request.headers_mut();
        let bearer = format!("Bearer {}", self.secret);
        headers.insert(stead_sync::AUTH_HEADER, bearer.parse().unwrap());
        headers.insert(stead_sync::CONTAINER_HEADER, self.agent.parse().unwrap());
        let (opened_tx, opened_rx) = futures::channel::oneshot::channel();
        let (out_tx, out_rx) = std::sync::mpsc::channel();
        let (in_tx, in_rx) = futures::channel::mpsc::unbounded();
        std::thread::spawn(move || {
            let stream = match std::net::TcpStream::connect(&host) {
                Ok(stream) => stream,
                Err(error) => return drop(opened_tx.send(Err(error.to_string()))),
            };
            let ws = match tungstenite::client::client(request, stream) {
                Ok((ws, _)) => ws,
                Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(answer))) => {
                    let body = answer.body().as_deref().map(String::from_utf8_lossy);
                    let refusal =
                        format!("status {}: {}", answer.status(), body.unwrap_or_default());
                    return drop(opened_tx.send(Err(refusal)));
                }
                Err(error) => return drop(opened_tx.send(Err(error.to_string()))),
            };
            let _ = opened_tx.send(Ok(()));
            serve_socket(ws, out_rx, in_tx);
        });
        opened_rx.await.map_err(|_| "the socket thread died")??;
        Ok((ThreadWire(out_tx), in_rx.boxed_local()))
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Payload>,
    ) -> Result<(u16, ByteStream), String> {
        let (head_tx, head_rx) = futures::channel::oneshot::channel();
        let (body_tx, body_rx) = futures::channel::mpsc::unbounded();
        let url = format!("{}{path}", self.base);
        let agent = self.agent.clone();
        let secret = format!("Bearer {}", self.secret);
        std::thread::spawn(move || {
            let config = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build();
            let client: ureq::Agent = config.into();
            let response = match (method, body) {
                (Method::Get, _) => client
                    .get(&url)
                    .header(stead_sync::AUTH_HEADER, &secret)
                    .header(stead_sync::CONTAINER_HEADER, &agent)
                    .call(),
                (Method::Delete, _) => client
                    .delete(&url)
                    .header(stead_sync::AUTH_HEADER, &secret)
                    .header(stead_sync::CONTAINER_HEADER, &agent)
                    .call(),
                (Method::Post, body) => {
                    let body = body.unwrap_or(Payload {
                        bytes: Vec::new(),
                        content_type: "application/octet-stream",
                    });
                    client
                        .post(&url)
                        .header(stead_sync::AUTH_HEADER, &secret)
                        .header(stead_sync::CONTAINER_HEADER, &agent)
                        .header("content-type", body.content_type)
                        .send(&body.bytes[..])
                }
            };
            let mut response = match response {
                Ok(response) => response,
                Err(error) => {
                    let _ = head_tx.send(Err(error.to_string()));
                    return;
                }
            };
            let _ = head_tx.send(Ok(response.status().as_u16()));
            let mut reader = response.body_mut().as_reader();
            let mut buffer = vec![0; 64 << 10];
            loop {
                match reader.read(&mut buffer) {
                    Ok(0) => return,
                    Ok(n) => {
                        if body_tx.unbounded_send(Ok(buffer[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                    Err(error) => {
                        let _ = body_tx.unbounded_send(Err(error.to_string()));
                        return;
                    }
                }
            }
        });
        let status = head_rx.await.map_err(|_| "the request thread died")??;
        Ok((status, body_rx.boxed_local()))
    }
}

/// A step of the protocol to break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The request to `path` (a prefix) never arrives.
    Refuse(&'static str),
    /// The answer to `path` breaks off after `bytes`.
    Cut(&'static str, usize),
    /// The request to `path` is answered as the `Computer` object answers
    /// one whose container died once it may have arrived: `503
    /// COMPUTER_LOST` (the real program never sees it).
    Lost(&'static str),
}

/// Something done just before the next request to a path (a prefix).
type Hook = (&'static str, Box<dyn FnOnce()>);

/// [`HttpTransport`] with chosen steps broken, once each.
#[derive(Clone)]
pub struct FaultyTransport {
    inner: HttpTransport,
    faults: Rc<RefCell<Vec<Fault>>>,
    /// Done just before the next request to the path (a prefix) is sent.
    hooks: Rc<RefCell<Vec<Hook>>>,
    /// Every request sent, as `METHOD path`.
    pub sent: Rc<RefCell<Vec<String>>>,
}

impl FaultyTransport {
    pub fn new(inner: HttpTransport) -> Self {
        FaultyTransport {
            inner,
            faults: Rc::default(),
            hooks: Rc::default(),
            sent: Rc::default(),
        }
    }

    /// Breaks the next request matching `fault`.
    pub fn break_next(&self, fault: Fault) {
        self.faults.borrow_mut().push(fault);
    }

    /// Does `then` just before the next request to `path` (a prefix) is
    /// sent, as something happening between two steps (a container dying).
    pub fn before_next(&self, path: &'static str, then: impl FnOnce() + 'static) {
        self.hooks.borrow_mut().push((path, Box::new(then)));
    }

    fn run_hook(&self, path: &str) {
        let mut hooks = self.hooks.borrow_mut();
        let Some(at) = hooks
            .iter()
            .position(|(prefix, _)| path.starts_with(prefix))
        else {
            return;
        };
        let (_, then) = hooks.remove(at);
        drop(hooks);
        then();
    }

    fn take_fault(&self, path: &str) -> Option<Fault> {
        let mut faults = self.faults.borrow_mut();
        let at = faults.iter().position(|fault| match fault {
            Fault::Refuse(prefix) | Fault::Cut(prefix, _) | Fault::Lost(prefix) => {
                path.starts_with(prefix)
            }
        })?;
        Some(faults.remove(at))
    }
}

impl Transport for FaultyTransport {
    type Wire = ThreadWire;

    /// As [`HttpTransport`]'s; a `Refuse` fault on the path keeps it from
    /// opening.
    async fn connect(&self, path: &str) -> Result<(ThreadWire, WireStream), String> {
        self.sent.borrow_mut().push(format!("WS {path}"));
        match self.take_fault(path) {
            Some(_) => Err(format!("injected: {path} never opened")),
            None => self.inner.connect(path).await,
        }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Payload>,
    ) -> Result<(u16, ByteStream), String> {
        self.run_hook(path);
        self.sent.borrow_mut().push(format!("{method:?} {path}"));
        match self.take_fault(path) {
            Some(Fault::Refuse(_)) => Err(format!("injected: {path} never arrived")),
            Some(Fault::Lost(_)) => {
                let message =
                    "injected: the computer was lost; the command may or may not have run";
                let body =
                    serde_json::json!({"error": {"code": "COMPUTER_LOST", "message": message}});
                let body =
                    futures::stream::once(
                        async move { Ok::<_, String>(body.to_string().into_bytes()) },
                    );
                Ok((503, body.boxed_local()))
            }
            Some(Fault::Cut(_, keep)) => {
                let (status, stream) = self.inner.send(method, path, body).await?;
                let mut left = keep;
                let cut = stream
                    .map(move |piece| {
                        let piece = piece?;
                        let take = piece.len().min(left);
                        left -= take;
                        Ok(piece[..take].to_vec())
                    })
                    .take_while(|piece: &Result<Vec<u8>, String>| {
                        futures::future::ready(piece.as_ref().map_or(true, |p| !p.is_empty()))
                    })
                    .chain(futures::stream::once(async {
                        Err("injected: the connection broke".to_string())
                    }));
                Ok((status, cut.boxed_local()))
            }
            None => self.inner.send(method, path, body).await,
        }
    }
}

/// Waits `ms` on another thread, without blocking the executor.
pub async fn pause(ms: u64) {
    let (done, waited) = futures::channel::oneshot::channel();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let _ = done.send(());
    });
    let _ = waited.await;
}

/// Runs alarms (each one tick of the watch over processes) until `done`
/// holds, at most about ten seconds.
pub fn tick_until(agent: &Agent<FakeHost>, what: &str, done: impl Fn() -> bool) {
    for _ in 0..40 {
        block_on(agent.alarm()).expect("the alarm runs");
        if done() {
            return;
        }
        block_on(pause(250));
    }
    panic!("timed out waiting for {what}");
}

/// A free local port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A real `stead-computer` for agent `id`, reachable through the host.
pub fn with_computer(
    agent: &Agent<FakeHost>,
    id: &str,
    dir: &Path,
) -> stead_harness::ComputerProcess {
    let process = stead_harness::ComputerProcess::start(dir, free_port());
    let transport = FaultyTransport::new(HttpTransport::new(&process, id));
    *agent.host().computer.borrow_mut() = Some(transport);
    process
}

/// Agent `a`, created, with a real `stead-computer` in a temporary
/// directory (kept alive by the values returned beside it).
pub fn agent_with_computer() -> (
    Agent<FakeHost>,
    stead_harness::ComputerProcess,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let agent = agent();
    create(&agent, "a");
    let process = with_computer(&agent, "a", dir.path());
    (agent, process, dir)
}

/// Unwraps an error as its code.
pub fn code<T: std::fmt::Debug>(result: Result<T, ApiError>) -> String {
    result.expect_err("expected an error").code().to_string()
}
