//! The MCP server of an agent: `/agents/{id}/mcp`, over Streamable HTTP.
//!
//! Every harness that speaks MCP (Claude Code, Cursor, the OpenAI Agents
//! SDK, the AI SDK, ...) can use a workspace with no code: its tools are
//! the model-facing tools of `crate::catalog`, its resources are the
//! workspace's files, and its notifications follow the change log.
//!
//! Two protocol shapes are served from the one endpoint, chosen by what the
//! client sends ([`http`]): the session versions (2025-11-25, 2025-06-18,
//! 2025-03-26; [`revision`]), with `initialize` and sessions kept in SQLite
//! ([`session`]), and 2026-07-28, stateless, with `server/discover` and
//! `subscriptions/listen`. A tool call is dispatched
//! as its HTTP twin ([`server`]), so authorization and audit are the HTTP
//! API's. Notifications go out on event streams the platform keeps open
//! ([`listen`], [`notify`]).
//!
//! - [`jsonrpc`]: messages and error codes; [`revision`]: the versions,
//!   their shapes and the `_meta` keys;
//! - [`gate`]: what is answered before any method (origins and CORS,
//!   refused credentials with their challenge, methods not served), in the
//!   Worker and the agent alike;
//! - [`http`]: the transport (methods, headers, negotiation, sessions,
//!   2025-03-26 batches);
//! - [`server`]: the methods; [`resources`]: files as resources;
//! - [`session`]: sessions; [`listen`], [`notify`], [`sse`]: event streams
//!   and what is sent on them (keep-alive comments included); [`resume`]:
//!   where each 2026-07-28 listener left off.
//!
//! Decisions where the specification leaves room (each explained where it
//! is made):
//! - a refused credential (`401`/`403`) is a JSON-RPC error (`-32600`, the
//!   API's error as `data`, the request's id) with an RFC 6750 Bearer
//!   challenge, before any method runs; a resource request without the
//!   `read` scope is the same `403` ([`gate`]);
//! - `initialize` echoes a session version it serves, else offers
//!   2025-11-25; without `MCP-Protocol-Version` a session's own version
//!   holds;
//! - every error of a tool's route, `5xx` included, is a tool result with
//!   `isError` ([`server`]);
//! - in 2025-11-25 an unknown method is answered `200` with `-32601` (a `404`
//!   would tell the client its session ended); in 2026-07-28 it is `404`, as
//!   that revision requires;
//! - a 2025-11-25 session is its creator's, lives in SQLite, ends after a
//!   day unused, and has one GET stream at a time;
//! - notifications carry their change-log position under `stead/cursor`,
//!   which a 2026-07-28 `subscriptions/listen` may send back to resume (that
//!   revision dropped `Last-Event-ID`); one that sends none resumes where
//!   its listener left off ([`resume`]); a quiet stream gets a keep-alive
//!   comment, timed by the response body, not the alarm ([`sse`]);
//! - JSON is answered whenever the client accepts it; one SSE event only
//!   when it accepts nothing else;
//! - `null` for a tool argument whose schema does not take it means "left
//!   out", for strict-mode clients.

pub mod gate;
pub mod http;
pub mod jsonrpc;
pub mod listen;
pub mod notify;
mod reply;
pub mod resources;
pub mod resume;
pub mod revision;
pub mod server;
pub mod session;
pub mod sse;
