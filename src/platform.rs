//! The agent's host on Workers: `stead_agent::Host`, `Socket`,
//! `EventStream` and `Transport` over `worker` types. Nothing here decides
//! anything; each method is one platform call.

use std::cell::RefCell;
use std::rc::Rc;

use futures::channel::mpsc;
use futures::StreamExt;
use js_sys::Uint8Array;
use std::net::IpAddr;
use std::time::Duration;
use stead_agent::auth::Caller;
use stead_agent::host::{ByteStream, Method, Payload, WireMessage, WireStream};
use stead_agent::mcp::listen::ListenState;
use stead_agent::protocol::SocketState;
use stead_agent::settings::ComputerSettings;
use stead_agent::HostError;
use stead_agent::{ComputerError, EventStream, Host, Socket, Transport};
use wasm_bindgen::JsValue;

use worker::{
    Delay, Env, Fetch, Headers, Request, RequestInit, RequestRedirect, ScheduledTime, State, Stub,
    WebSocket, WebsocketEvent,
};

use crate::chunk_store::R2Store;
use crate::do_sql::DoSql;
use stead_vfs::tier::TierPolicy;

/// Binding of the agents' Durable Object class.
pub(crate) const WORKSPACE_BINDING: &str = "WORKSPACE";

/// Binding of the container-enabled Durable Object class.
pub(crate) const COMPUTER_BINDING: &str = "COMPUTER";

/// Where host names are resolved (DNS over HTTPS, JSON API); a variable
/// of that name overrides the default.
const DOH_URL_VAR: &str = "DNS_OVER_HTTPS_URL";
const DEFAULT_DOH_URL: &str = "https://cloudflare-dns.com/dns-query";

/// How long one alarm follows a computer job (milliseconds); unset: the
/// core's default.
const JOB_SLICE_VAR: &str = "JOB_SLICE_MS";

/// How long an MCP event stream may be quiet before it gets a keep-alive
/// comment (milliseconds); unset: `stead_agent::mcp::sse::DEFAULT_KEEP_ALIVE_MS`.
/// Tests shorten it.
const KEEP_ALIVE_VAR: &str = "MCP_KEEPALIVE_MS";

/// Set to `true` in `.dev.vars` only: marks a local development runtime.
const LOCAL_DEVELOPMENT_VAR: &str = "STEAD_LOCAL_DEVELOPMENT";

/// Whether the deployment is local development (see
/// [`Host::local_development`]).
pub(crate) fn local_development(env: &Env) -> bool {
    env.var(LOCAL_DEVELOPMENT_VAR)
        .is_ok_and(|v| v.to_string() == "true")
}

/// The init that sends `req` on with `headers` instead of its own: its
/// method, its body streamed, and redirects not followed (a redirect is
/// the client's to follow, and a credential added on the way never goes
/// on to where a server points).
pub(crate) fn passed_on(req: &Request, headers: Headers) -> RequestInit {
    let mut init = RequestInit::new();
    init.with_method(req.method())
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual);
    if let Some(body) = req.inner().body() {
        init.with_body(Some(body.into()));
    }
    init
}

/// The part of a DNS-over-HTTPS JSON answer the agent reads.
#[derive(serde::Deserialize)]
struct DohAnswer {
    #[serde(rename = "Answer", default)]
    answer: Vec<DohRecord>,
}

#[derive(serde::Deserialize)]
struct DohRecord {
    #[serde(rename = "type")]
    kind: u16,
    data: String,
}

/// The Workspace Durable Object's platform.
pub(crate) struct WorkerHost {
    pub(crate) state: State,
    pub(crate) env: Env,
    pub(crate) db: DoSql,
    /// The event streams this instance is answering with.
    pub(crate) streams: RefCell<Vec<WorkerStream>>,
    /// The chunk tier's bucket, if the deployment binds one.
    pub(crate) store: Option<Rc<R2Store>>,
}

/// Variables that shorten the chunk tier's waits (milliseconds) and its
/// smallest moved chunk (bytes); unset: the core's defaults.
const TIER_HOT_VAR: &str = "TIER_HOT_MS";
const TIER_GRACE_VAR: &str = "TIER_GRACE_MS";
const TIER_MIN_BYTES_VAR: &str = "TIER_MIN_BYTES";

fn failed(operation: &'static str) -> impl Fn(worker::Error) -> HostError {
    move |error| HostError::new(operation, error)
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// `performance.now()`: the runtime's monotonic clock (which Workers
    /// advance only across I/O; locally it runs as usual).
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    pub(crate) fn performance_now() -> f64;
}

impl Host for WorkerHost {
    type Db = DoSql;
    type Socket = WorkerSocket;
    type Stream = WorkerStream;
    type Computer = ComputerLink;
    type Store = R2Store;

    fn db(&self) -> &DoSql {
        &self.db
    }

    fn now_ms(&self) -> i64 {
        js_sys::Date::now() as i64
    }

    fn precise_ms(&self) -> f64 {
        performance_now()
    }

    fn statements_run(&self) -> u64 {
        self.db.statements_run()
    }

    fn random_hex(&self, chars: usize) -> Result<String, HostError> {
        crate::random::random_hex(chars)
            .map_err(|e| HostError::new("draw random bytes", format!("{e:?}")))
    }

    async fn set_alarm(&self, at_ms: Option<i64>) -> Result<(), HostError> {
        let storage = self.state.storage();
        match at_ms {
            Some(at) => {
                let date = js_sys::Date::new(&JsValue::from_f64(at as f64));
                storage
                    .set_alarm(ScheduledTime::new(date))
                    .await
                    .map_err(failed("set the alarm"))
            }
            None => storage
                .delete_alarm()
                .await
                .map_err(failed("clear the alarm")),
        }
    }

    async fn wipe(&self) -> Result<(), HostError> {
        self.state
            .storage()
            .delete_all()
            .await
            .map_err(failed("delete the agent's storage"))
    }

    fn database_size(&self) -> u64 {
        self.db.database_size() as u64
    }

    fn sockets(&self) -> Vec<WorkerSocket> {
        self.state
            .get_websockets()
            .into_iter()
            .map(WorkerSocket)
            .collect()
    }

    fn open_stream(&self, state: ListenState) -> WorkerStream {
        let (sender, receiver) = mpsc::unbounded();
        let keep_alive_ms = self
            .env
            .var(KEEP_ALIVE_VAR)
            .ok()
            .and_then(|v| v.to_string().trim().parse().ok())
            .filter(|ms| *ms > 0)
            .unwrap_or(stead_agent::mcp::sse::DEFAULT_KEEP_ALIVE_MS);
        let stream = WorkerStream(Rc::new(StreamHandle {
            sender,
            receiver: RefCell::new(Some(receiver)),
            state: RefCell::new(state),
            keep_alive: Duration::from_millis(keep_alive_ms),
        }));
        self.streams.borrow_mut().push(stream.clone());
        stream
    }

    fn streams(&self) -> Vec<WorkerStream> {
        let mut streams = self.streams.borrow_mut();
        // A stream whose client went away has had its body dropped.
        streams.retain(|stream| !stream.0.sender.is_closed());
        streams.clone()
    }

    async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: String,
    ) -> Result<u16, String> {
        let sent = async {
            let list = Headers::new();
            for (name, value) in headers {
                list.set(name, value)?;
            }
            let mut init = RequestInit::new();
            init.with_method(worker::Method::Post)
                .with_headers(list)
                .with_redirect(RequestRedirect::Manual)
                .with_body(Some(JsValue::from_str(&body)));
            let request = Request::new_with_init(url, &init)?;
            Fetch::Request(request).send().await
        }
        .await;
        sent.map(|response| response.status_code())
            .map_err(|e| e.to_string())
    }

    async fn fetch(
        &self,
        request: &stead_agent::host::HttpRequest,
        limit: usize,
    ) -> Result<stead_agent::host::HttpResponse, String> {
        let sent = async {
            let list = Headers::new();
            for (name, value) in &request.headers {
                list.set(name, value)?;
            }
            let mut init = RequestInit::new();
            init.with_headers(list)
                .with_redirect(RequestRedirect::Manual);
            match request.method {
                stead_agent::host::HttpMethod::Get => {
                    init.with_method(worker::Method::Get);
                }
                stead_agent::host::HttpMethod::Post => {
                    init.with_method(worker::Method::Post)
                        .with_body(Some(Uint8Array::from(request.body.as_slice()).into()));
                }
            }
            let outbound = Request::new_with_init(&request.url, &init)?;
            let mut response = Fetch::Request(outbound).send().await?;
            let content_type = response.headers().get("content-type")?.unwrap_or_default();
            // Read as it arrives, refusing an answer past the limit before
            // it is all in memory.
            let mut body = Vec::new();
            if let Ok(mut stream) = response.stream() {
                while let Some(chunk) = stream.next().await {
                    body.extend_from_slice(&chunk?);
                    if body.len() > limit {
                        return Err(worker::Error::RustError(format!(
                            "the answer is larger than {limit} bytes"
                        )));
                    }
                }
            }
            Ok(stead_agent::host::HttpResponse {
                status: response.status_code(),
                content_type,
                body,
            })
        }
        .await;
        sent.map_err(|e: worker::Error| e.to_string())
    }

    async fn call_agent(
        &self,
        agent: &str,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(u16, serde_json::Value), String> {
        let sent = async {
            let stub = self
                .env
                .durable_object(WORKSPACE_BINDING)?
                .id_from_name(agent)?
                .get_stub()?;
            let headers = Headers::new();
            for (name, value) in Caller::Admin.headers() {
                headers.set(name, &value)?;
            }
            headers.set("content-type", "application/octet-stream")?;
            let mut init = RequestInit::new();
            init.with_method(worker::Method::Post)
                .with_headers(headers)
                .with_body(Some(Uint8Array::from(body.as_slice()).into()));
            let url = format!("http://agent/agents/{agent}{path}");
            let mut response = stub
                .fetch_with_request(Request::new_with_init(&url, &init)?)
                .await?;
            let status = response.status_code();
            let answer: serde_json::Value = response.json().await?;
            Ok::<_, worker::Error>((status, answer))
        }
        .await;
        // Local development only: under `wrangler dev` every object lives
        // in one workerd process, and a chain of calls between them (a
        // fork's pages) never leaves its event loop idle, so no other
        // request would be read off the network until the chain ends. A
        // timer turn lets them in. On Cloudflare each object has an event
        // loop of its own, so a deployment never pauses. The pause can go
        // once a local runtime reads new connections between object calls
        // (`tests/durability.rs` forks while other requests wait: it shows
        // whether they still starve without it).
        if self.local_development() {
            Delay::from(Duration::from_millis(1)).await;
        }
        sent.map_err(|e| e.to_string())
    }

    async fn resolve(&self, name: &str) -> Result<Vec<IpAddr>, String> {
        // DNS over HTTPS (JSON), since a Worker has no resolver of its own.
        let base = self
            .env
            .var(DOH_URL_VAR)
            .map(|v| v.to_string())
            .unwrap_or_else(|_| DEFAULT_DOH_URL.to_string());
        let mut addresses = Vec::new();
        for record in ["A", "AAAA"] {
            let url = format!("{base}?name={name}&type={record}");
            let answer = async {
                let headers = Headers::new();
                headers.set("accept", "application/dns-json")?;
                let mut init = RequestInit::new();
                init.with_headers(headers);
                let mut response = Fetch::Request(Request::new_with_init(&url, &init)?)
                    .send()
                    .await?;
                response.json::<DohAnswer>().await
            }
            .await
            .map_err(|e| format!("DNS over HTTPS failed: {e}"))?;
            addresses.extend(
                answer
                    .answer
                    .iter()
                    .filter(|r| r.kind == 1 || r.kind == 28)
                    .filter_map(|r| r.data.parse::<IpAddr>().ok()),
            );
        }
        Ok(addresses)
    }

    fn share_key(&self) -> Option<String> {
        self.env
            .secret("API_TOKEN")
            .ok()
            .map(|key| key.to_string())
            .filter(|key| !key.is_empty())
    }

    fn ports_host(&self) -> Option<String> {
        self.env
            .var(stead_agent::front::PORTS_HOST_VAR)
            .ok()
            .map(|host| host.to_string())
            .filter(|host| !host.is_empty())
    }

    async fn sleep(&self, ms: u64) {
        worker::Delay::from(std::time::Duration::from_millis(ms)).await;
    }

    fn job_slice_ms(&self) -> u64 {
        self.env
            .var(JOB_SLICE_VAR)
            .ok()
            .and_then(|v| v.to_string().trim().parse().ok())
            .unwrap_or(stead_agent::runner::DEFAULT_JOB_SLICE_MS)
    }

    fn local_development(&self) -> bool {
        local_development(&self.env)
    }

    fn chunk_store(&self) -> Option<&R2Store> {
        self.store.as_deref()
    }

    fn tier_policy(&self) -> TierPolicy {
        let var = |name: &str| {
            self.env
                .var(name)
                .ok()
                .and_then(|v| v.to_string().trim().parse::<i64>().ok())
        };
        let defaults = TierPolicy::default();
        TierPolicy {
            min_bytes: var(TIER_MIN_BYTES_VAR).map_or(defaults.min_bytes, |n| n.max(1) as u64),
            hot_ms: var(TIER_HOT_VAR).unwrap_or(defaults.hot_ms),
            grace_ms: var(TIER_GRACE_VAR).unwrap_or(defaults.grace_ms),
            batch: defaults.batch,
            exec_bytes: defaults.exec_bytes,
        }
    }

    fn computer(
        &self,
        agent: &str,
        settings: ComputerSettings,
    ) -> Result<ComputerLink, ComputerError> {
        let namespace = self
            .env
            .durable_object(COMPUTER_BINDING)
            .map_err(|_| ComputerError::Unavailable)?;
        let stub = namespace
            .id_from_name(agent)
            .and_then(|id| id.get_stub())
            .map_err(|e| ComputerError::Unreachable {
                step: "connect",
                reason: e.to_string(),
            })?;
        Ok(ComputerLink {
            stub,
            agent: agent.to_string(),
            settings,
        })
    }
}

/// An accepted, hibernatable WebSocket.
pub(crate) struct WorkerSocket(pub(crate) WebSocket);

impl Socket for WorkerSocket {
    fn send(&self, text: &str) {
        // A socket closing under us is not an error of the agent's.
        let _ = self.0.send_with_str(text);
    }

    fn send_bytes(&self, bytes: &[u8]) {
        let _ = self.0.send_with_bytes(bytes);
    }

    fn state(&self) -> Option<SocketState> {
        self.0.deserialize_attachment().ok().flatten()
    }

    fn save(&self, state: &SocketState) {
        if let Err(error) = self.0.serialize_attachment(state) {
            worker::console_error!("socket attachment not saved: {error}");
        }
    }

    fn close(&self, code: u16, reason: &str) {
        let _ = self.0.close(Some(code), Some(reason));
    }
}

/// A streaming response body the agent writes to: the sending half of a
/// channel whose receiving half is the body (`Response::from_stream`), so
/// writing needs no JavaScript stream and a client that disconnects drops
/// the receiver, which closes the sender.
#[derive(Clone)]
pub(crate) struct WorkerStream(Rc<StreamHandle>);

pub(crate) struct StreamHandle {
    sender: mpsc::UnboundedSender<Vec<u8>>,
    /// Taken once, for the response.
    receiver: RefCell<Option<mpsc::UnboundedReceiver<Vec<u8>>>>,
    state: RefCell<ListenState>,
    /// How long the body may be quiet before a keep-alive comment.
    keep_alive: Duration,
}

impl WorkerStream {
    /// The response body (once), with keep-alive comments when it is quiet
    /// (`stead_agent::mcp::sse::with_keep_alive`: the timer lives only as
    /// long as the body is read).
    pub(crate) fn body(&self) -> Option<impl futures::Stream<Item = Vec<u8>>> {
        let receiver = self.0.receiver.borrow_mut().take()?;
        let interval = self.0.keep_alive;
        Some(stead_agent::mcp::sse::with_keep_alive(
            receiver,
            move || worker::Delay::from(interval),
        ))
    }
}

impl EventStream for WorkerStream {
    fn send(&self, text: &str) -> bool {
        self.0
            .sender
            .unbounded_send(text.as_bytes().to_vec())
            .is_ok()
    }

    fn state(&self) -> ListenState {
        self.0.state.borrow().clone()
    }

    fn save(&self, state: &ListenState) {
        *self.0.state.borrow_mut() = state.clone();
    }

    fn close(&self) {
        self.0.sender.close_channel();
    }
}

/// HTTP to the agent's `Computer` Durable Object, which starts the
/// container and forwards each request to it (see `crate::computer`).
pub(crate) struct ComputerLink {
    stub: Stub,
    agent: String,
    settings: ComputerSettings,
}

impl ComputerLink {
    /// The headers of every request to the `Computer` object: which
    /// agent, and its computer settings.
    fn headers(&self) -> worker::Result<Headers> {
        let headers = Headers::new();
        headers.set(stead_sync::CONTAINER_HEADER, &self.agent)?;
        headers.set(
            stead_sync::INTERNET_HEADER,
            &self.settings.internet.to_string(),
        )?;
        let plan = serde_json::to_string(&self.settings.egress).expect("a plan serializes");
        headers.set(stead_agent::egress_gate::PLAN_HEADER, &plan)?;
        if let Some(idle) = self.settings.idle_ms {
            headers.set(stead_sync::IDLE_HEADER, &idle.to_string())?;
        }
        Ok(headers)
    }

    /// Opens a WebSocket to `path` through the `Computer` object.
    async fn open_socket(&self, path: &str) -> worker::Result<WebSocket> {
        let headers = self.headers()?;
        headers.set("upgrade", "websocket")?;
        let mut init = RequestInit::new();
        init.with_method(worker::Method::Get).with_headers(headers);
        let request = Request::new_with_init(&format!("http://computer{path}"), &init)?;
        let mut response = self.stub.fetch_with_request(request).await?;
        let status = response.status_code();
        if status != 101 {
            let body = response.text().await.unwrap_or_default();
            return Err(worker::Error::RustError(format!("status {status}: {body}")));
        }
        let socket = response
            .websocket()
            .ok_or_else(|| worker::Error::RustError("status 101 without a WebSocket".into()))?;
        // Binary messages as bytes at once (not as `Blob`s to be read).
        js_sys::Reflect::set(
            socket.as_ref(),
            &JsValue::from_str("binaryType"),
            &JsValue::from_str("arraybuffer"),
        )?;
        socket.accept()?;
        Ok(socket)
    }
}

/// The sending half of a WebSocket to the computer.
pub(crate) struct WorkerWire(WebSocket);

impl stead_agent::host::Wire for WorkerWire {
    fn send(&self, message: WireMessage) -> Result<(), String> {
        match message {
            WireMessage::Text(text) => self.0.send_with_str(text),
            WireMessage::Binary(bytes) => self.0.send_with_bytes(bytes),
        }
        .map_err(|e| e.to_string())
    }

    fn close(&self) {
        let _ = self.0.close(Some(1000), Some("done"));
    }
}

/// What arrives on `socket`, as a stream that owns it: a task moves its
/// events into a channel (the runtime's event stream borrows the socket),
/// until it closes or the stream is dropped.
fn incoming(socket: WebSocket) -> WireStream {
    let (sender, receiver) = mpsc::unbounded();
    wasm_bindgen_futures::spawn_local(async move {
        let mut events = match socket.events() {
            Ok(events) => events,
            Err(error) => {
                let _ = sender.unbounded_send(Err(error.to_string()));
                return;
            }
        };
        while let Some(event) = events.next().await {
            let message = match event {
                Ok(WebsocketEvent::Message(message)) => match message.text() {
                    Some(text) => Ok(WireMessage::Text(text)),
                    None => Ok(WireMessage::Binary(message.bytes().unwrap_or_default())),
                },
                Ok(WebsocketEvent::Close(_)) => return,
                Err(error) => Err(error.to_string()),
            };
            if sender.unbounded_send(message).is_err() {
                return;
            }
        }
    });
    receiver.boxed_local()
}

impl Transport for ComputerLink {
    type Wire = WorkerWire;

    async fn connect(&self, path: &str) -> Result<(WorkerWire, WireStream), String> {
        let socket = self.open_socket(path).await.map_err(|e| e.to_string())?;
        Ok((WorkerWire(socket.clone()), incoming(socket)))
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Payload>,
    ) -> Result<(u16, ByteStream), String> {
        let sent = async {
            let headers = self.headers()?;
            let mut init = RequestInit::new();
            init.with_method(match method {
                Method::Get => worker::Method::Get,
                Method::Post => worker::Method::Post,
                Method::Delete => worker::Method::Delete,
            });
            if let Some(payload) = body {
                headers.set("content-type", payload.content_type)?;
                let array = Uint8Array::from(payload.bytes.as_slice());
                init.with_body(Some(array.into()));
            }
            init.with_headers(headers);
            let request = Request::new_with_init(&format!("http://computer{path}"), &init)?;
            let mut response = self.stub.fetch_with_request(request).await?;
            let status = response.status_code();
            let stream: ByteStream = match response.stream() {
                Ok(stream) => stream
                    .map(|piece| piece.map_err(|e| e.to_string()))
                    .boxed_local(),
                // No body at all.
                Err(_) => futures::stream::empty().boxed_local(),
            };
            Ok::<_, worker::Error>((status, stream))
        }
        .await;
        sent.map_err(|e| e.to_string())
    }
}
