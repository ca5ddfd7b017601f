//! What a request to the agent is and what the agent answers, whatever the
//! way in: [`Request`], its streamed [`Body`], and [`Reply`].
//!
//! These are the words `crate::dispatch` and the handlers of each area
//! (`crate::handlers`) share with the entry points (the HTTP glue, sockets,
//! MCP); they sit below all of them, so none of those imports another to
//! name a request.

use serde_json::{json, Value};
use stead_vfs::VPath;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::protocol::SocketState;
use crate::range::{ChunkSlice, RangeHeaders};
use crate::route::Action;
use crate::scheduling;

/// The headers of a hook call.
pub const HOOK_SECRET_HEADER: &str = "x-hook-secret";
pub const HOOK_TIMESTAMP_HEADER: &str = "x-stead-timestamp";
pub const HOOK_SIGNATURE_HEADER: &str = "x-stead-signature";
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// A request body, read in pieces (HTTP bodies stream; a socket call's
/// arguments are already in memory).
#[allow(async_fn_in_trait)]
pub trait Body {
    /// The length the sender declared, if it did.
    fn declared_len(&self) -> Option<usize>;
    /// Appends up to about `max` bytes to `buffer`; returns how many were
    /// appended, 0 at the end.
    async fn read_into(&mut self, buffer: &mut Vec<u8>, max: usize) -> Result<usize, ApiError>;
}

/// A body held in memory.
pub struct Bytes(pub Vec<u8>);

impl Body for Bytes {
    fn declared_len(&self) -> Option<usize> {
        Some(self.0.len())
    }

    async fn read_into(&mut self, buffer: &mut Vec<u8>, max: usize) -> Result<usize, ApiError> {
        let take = self.0.len().min(max);
        buffer.extend(self.0.drain(..take));
        Ok(take)
    }
}

/// Reads a whole body of at most `limit` bytes.
pub async fn read_body(body: &mut impl Body, limit: usize) -> Result<Vec<u8>, ApiError> {
    let declared = body.declared_len();
    if declared.is_some_and(|len| len > limit) {
        return Err(ApiError::BodyTooLarge { limit });
    }
    let mut out = Vec::new();
    loop {
        let room = (limit + 1).saturating_sub(out.len()).max(1);
        let read = body.read_into(&mut out, room).await?;
        if out.len() > limit {
            return Err(ApiError::BodyTooLarge { limit });
        }
        // A body of a declared length ends there: HTTP framing holds it to
        // it, so waiting for the end of the stream would only cost a turn.
        if read == 0 || declared == Some(out.len()) {
            return Ok(out);
        }
    }
}

/// Where a request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// An HTTP request.
    Http,
    /// A `call` message on a WebSocket.
    Socket,
    /// A `tools/call` of the MCP server (`crate::mcp`).
    Mcp,
}

impl Entry {
    /// The source a job queued from here records.
    pub(crate) fn job_source(self) -> &'static str {
        match self {
            Entry::Http => "api",
            Entry::Socket => "socket",
            Entry::Mcp => "mcp",
        }
    }
}

/// The headers a hook call authenticates with (see
/// `stead_scheduler::hooks`).
#[derive(Debug, Clone, Default)]
pub struct HookHeaders {
    /// `x-hook-secret`.
    pub secret: Option<String>,
    /// `x-stead-timestamp` and `x-stead-signature`, of a signed call.
    pub timestamp: Option<String>,
    pub signature: Option<String>,
    /// `Idempotency-Key`.
    pub idempotency_key: Option<String>,
}

/// A request to the agent, from any entry point.
pub struct Request<B> {
    pub entry: Entry,
    /// The agent's id, as the route named it.
    pub agent: String,
    pub action: Action,
    pub caller: Caller,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// What a hook call presents.
    pub hook: HookHeaders,
    /// What a download asks for part of (GET only: RFC 9110 defines range
    /// handling for no other method).
    pub range: RangeHeaders,
    /// Whether the request asks for a WebSocket upgrade.
    pub upgrade: bool,
    /// The scheme and host the request came to (`https://stead.example`),
    /// for answers that hand out links; empty when there is none (a
    /// socket call).
    pub origin: String,
    pub body: B,
}

/// What the agent answers.
#[derive(Debug)]
pub enum Reply {
    /// A JSON answer, with the headers it needs: `location` (the URL path
    /// of the resource a request created, a `201`, or of the job it
    /// queued, a `202`), or those an error's status requires
    /// ([`ApiError::headers`]).
    Json {
        status: u16,
        body: Value,
        headers: Vec<(&'static str, String)>,
    },
    /// A file, or the part of it asked for, to stream out one chunk at a
    /// time (`Vfs::chunk(id, &path)` for each of `slices`, cut to the
    /// slice): `length` bytes in all.
    File {
        path: VPath,
        status: u16,
        headers: Vec<(&'static str, String)>,
        length: u64,
        slices: Vec<ChunkSlice>,
    },
    /// Accept the WebSocket, with this attachment.
    Socket(SocketState),
}

impl Reply {
    pub(crate) fn ok(body: Value) -> Reply {
        Reply::Json {
            status: 200,
            body,
            headers: Vec::new(),
        }
    }

    /// The answer of a request that made a resource: `201 Created` with
    /// its location, or `200` for one that replaced it (a `PUT` of one
    /// that exists).
    pub(crate) fn made(created: bool, body: Value, location: String) -> Reply {
        match created {
            true => Reply::Json {
                status: 201,
                body,
                headers: vec![("location", location)],
            },
            false => Reply::ok(body),
        }
    }

    /// The answer of a request that queued job `job`: `202 Accepted`,
    /// pointing at the job.
    pub(crate) fn queued(agent: &str, job: &stead_scheduler::Job) -> Reply {
        Reply::Json {
            status: 202,
            body: json!({ "job": scheduling::job_json(job) }),
            headers: vec![("location", resource(agent, &["jobs", &job.id.to_string()]))],
        }
    }

    /// The answer for a failure.
    pub fn error(error: &ApiError) -> Reply {
        Reply::Json {
            status: error.status(),
            body: error.body(),
            headers: error.headers(),
        }
    }
}

/// The URL path of a resource of agent `agent`: `/agents/{agent}/{segments}`,
/// each segment percent-encoded.
pub(crate) fn resource(agent: &str, segments: &[&str]) -> String {
    let mut path = format!("/agents/{}", crate::route::percent_encode(agent));
    for segment in segments {
        path.push('/');
        path.push_str(&crate::route::percent_encode(segment));
    }
    path
}
