//! The seam between the agent and the platform it runs on.
//!
//! Everything the agent needs from outside its database comes through these
//! traits, and nothing else does: a clock and randomness, the one alarm,
//! the WebSockets and event streams it holds, outbound webhook calls and the
//! light shell's HTTP requests, a way
//! to wipe its storage, and a [`Transport`] to its computer. On Workers the Durable
//! Object implements them over `worker` types (the `stead` crate's glue);
//! in host tests a fake host implements them over plain Rust, and the
//! transport reaches a real `stead-computer` process. Keeping the seam this
//! narrow is what lets every piece of behaviour be tested without
//! `wrangler`.
//!
//! The futures are not `Send`: a Durable Object runs on one thread, and so
//! does everything the agent awaits.
#![allow(async_fn_in_trait)]

use futures::stream::LocalBoxStream;
use stead_sql::Sql;
use stead_vfs::tier::{ObjectStore, TierPolicy};

/// The light shell's HTTP requests and answers (see [`Host::fetch`]).
pub use stead_shell::net::{
    Method as HttpMethod, Request as HttpRequest, Response as HttpResponse,
};

use crate::computer::error::ComputerError;
use crate::error::HostError;
use crate::mcp::listen::ListenState;
use crate::protocol::SocketState;
use crate::settings::ComputerSettings;

/// What the agent needs from its platform.
pub trait Host {
    /// The agent's database.
    type Db: Sql;
    /// One of the agent's accepted WebSockets.
    type Socket: Socket;
    /// One of the agent's open event streams.
    type Stream: EventStream;
    /// The way to the agent's computer.
    type Computer: Transport;
    /// The object store content chunks move to (`stead_vfs::tier`).
    type Store: ObjectStore;

    fn db(&self) -> &Self::Db;

    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// A monotonic clock in fractions of a millisecond, for the
    /// per-request breakdown (`crate::breakdown`) only.
    fn precise_ms(&self) -> f64;

    /// How many SQL statements the agent's database has run, for the
    /// per-request breakdown only.
    fn statements_run(&self) -> u64;

    /// `chars` random lowercase hex digits from a CSPRNG.
    fn random_hex(&self, chars: usize) -> Result<String, HostError>;

    /// Sets the agent's one alarm to fire at `at_ms`, or clears it.
    async fn set_alarm(&self, at_ms: Option<i64>) -> Result<(), HostError>;

    /// Deletes all of the agent's storage (the agent is being deleted).
    async fn wipe(&self) -> Result<(), HostError>;

    /// Bytes the database occupies.
    fn database_size(&self) -> u64;

    /// The WebSockets the agent has accepted and that are still open.
    fn sockets(&self) -> Vec<Self::Socket>;

    /// Opens an event stream following `state`: a streaming response the
    /// platform sends as the answer to the request being served, and keeps
    /// open for the agent to write to.
    fn open_stream(&self, state: ListenState) -> Self::Stream;

    /// The event streams still open (their clients have not gone).
    fn streams(&self) -> Vec<Self::Stream>;

    /// Sends a webhook: a POST of `body` with `headers`, never following a
    /// redirect (a 3xx is the answer). `Ok` carries the answer's status;
    /// `Err` a reason the call could not be made.
    async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: String,
    ) -> Result<u16, String>;

    /// Makes an HTTP request for the light shell (git's transport; see
    /// `crate::shell_net`, which checks the target first), never following
    /// a redirect. `Ok` carries the answer, read whole up to `limit` bytes
    /// (a longer one is an `Err`); `Err` a reason it could not be made.
    async fn fetch(&self, request: &HttpRequest, limit: usize) -> Result<HttpResponse, String>;

    /// Sends `body` to `path` under another agent of this deployment
    /// (`/agents/{agent}{path}`), as the admin: how a fork's pages reach
    /// the new agent. `Ok` carries the answer's status and JSON body.
    async fn call_agent(
        &self,
        agent: &str,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(u16, serde_json::Value), String>;

    /// The addresses host name `name` resolves to (A and AAAA records).
    async fn resolve(&self, name: &str) -> Result<Vec<std::net::IpAddr>, String>;

    /// The key share links are signed with (the admin token), if the
    /// deployment has one.
    fn share_key(&self) -> Option<String>;

    /// The parent host of the ports' own origins (`crate::front`), if the
    /// deployment names one.
    fn ports_host(&self) -> Option<String>;

    /// Resolves after `ms` milliseconds (a timer of the platform's).
    async fn sleep(&self, ms: u64);

    /// How long one alarm follows a computer job before it leaves the
    /// command running and hands over to the next alarm: well inside the
    /// platform's wall-time limit for an alarm.
    fn job_slice_ms(&self) -> u64;

    /// Whether this is a local development runtime (never a deployment):
    /// the only place a workspace may let webhooks reach private addresses.
    fn local_development(&self) -> bool;

    /// The object store shared by every agent of the deployment, if it
    /// binds one; without it every chunk stays inline.
    fn chunk_store(&self) -> Option<&Self::Store>;

    /// When chunks move and bucket copies go (the deployment may shorten
    /// the core's defaults; tests do).
    fn tier_policy(&self) -> TierPolicy;

    /// The transport to agent `agent`'s computer, with the agent's computer
    /// settings on every request (outbound network, applied when the
    /// container starts; the idle time before it is released).
    fn computer(
        &self,
        agent: &str,
        settings: ComputerSettings,
    ) -> Result<Self::Computer, ComputerError>;
}

/// One accepted WebSocket. What it has subscribed to lives in its
/// attachment ([`SocketState`]), which the platform keeps across
/// hibernation, never in the agent's memory.
pub trait Socket {
    /// Sends a text message; a socket closing under us is not an error.
    fn send(&self, text: &str);
    /// Sends a binary message (a terminal's output), likewise.
    fn send_bytes(&self, bytes: &[u8]);
    /// The socket's attachment, if one was saved.
    fn state(&self) -> Option<SocketState>;
    /// Replaces the socket's attachment.
    fn save(&self, state: &SocketState);
    /// Closes the socket with `code` and `reason`.
    fn close(&self, code: u16, reason: &str);
}

/// An open server-sent event stream: a response body the agent keeps
/// writing to (an MCP client's notification stream). Unlike a hibernatable
/// WebSocket it lives in the instance's memory: it keeps the instance
/// awake while open and ends when the instance does, so what it follows
/// ([`ListenState`]) is only what a client resuming it must tell again.
pub trait EventStream {
    /// Writes SSE text (whole events); `false` once the client has gone.
    fn send(&self, text: &str) -> bool;
    /// What the stream follows.
    fn state(&self) -> ListenState;
    /// Replaces what the stream follows.
    fn save(&self, state: &ListenState);
    /// Ends the stream.
    fn close(&self);
}

/// An HTTP method of the computer protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Delete,
}

/// A request body of the computer protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    pub bytes: Vec<u8>,
    pub content_type: &'static str,
}

/// A body arriving in pieces.
pub type ByteStream = LocalBoxStream<'static, Result<Vec<u8>, String>>;

/// A message on a WebSocket to the computer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireMessage {
    Text(String),
    Binary(Vec<u8>),
}

/// What arrives on a WebSocket to the computer, in order, until it closes
/// (the stream ends) or breaks (an `Err`, then the end).
pub type WireStream = LocalBoxStream<'static, Result<WireMessage, String>>;

/// The sending half of a WebSocket to the computer.
pub trait Wire {
    /// Sends a message; `Err` once the socket is gone.
    fn send(&self, message: WireMessage) -> Result<(), String>;
    /// Closes the socket (what arrives on it then ends).
    fn close(&self);
}

/// Requests to the agent's computer (see `crate::computer::link`, which
/// turns statuses and error bodies into typed errors).
pub trait Transport {
    /// A WebSocket to the computer (a terminal session's stream).
    type Wire: Wire;

    /// Sends `method path` with `body`; `Ok` carries the answer's status and
    /// its body as it arrives, `Err` a reason it could not be delivered.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Payload>,
    ) -> Result<(u16, ByteStream), String>;

    /// Opens a WebSocket to `path` (a GET upgrade, as background as
    /// `stead_sync::owner::is_background` says): its sending half and what
    /// arrives on it. `Err` carries why it did not open (a refusal's status
    /// and body, or a reason it could not be delivered).
    async fn connect(&self, path: &str) -> Result<(Self::Wire, WireStream), String>;
}
