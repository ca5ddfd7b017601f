//! The MCP server of an agent: `/agents/{id}/mcp`, over Streamable HTTP.
//!
//! Every harness that speaks MCP (Claude Code, Cursor, the OpenAI Agents
//! SDK, the AI SDK, ...) can use a workspace with no code: its tools are
//! the model-facing tools of `crate::catalog`, its resources are the
//! workspace's files, and its notifications follow the change log.
//!
//! Two protocol revisions are served from the one endpoint, chosen by what
//! the client sends ([`http`]): 2025-11-25, with `initialize` and sessions
//! kept in SQLite ([`session`]), and 2026-07-28, stateless, with
//! `server/discover` and `subscriptions/listen`. A tool call is dispatched
//! as its HTTP twin ([`server`]), so authorization and audit are the HTTP
//! API's. Notifications go out on event streams the platform keeps open
//! ([`listen`], [`notify`]).
//!
//! - [`jsonrpc`]: messages and error codes; [`revision`]: the revisions
//!   and their `_meta` keys;
//! - [`http`]: the transport (methods, headers, negotiation, sessions);
//! - [`server`]: the methods; [`resources`]: files as resources;
//! - [`session`]: 2025-11-25 sessions; [`listen`], [`notify`], [`sse`]:
//!   event streams and what is sent on them.
//!
//! Decisions where the specification leaves room (each explained where it
//! is made):
//! - a refused credential is the HTTP answer the rest of the API gives
//!   (`401`/`403` with its error body), before any JSON-RPC is read; a
//!   resource request without the `read` scope is `403` with `-32600` and
//!   the API's error as `data`;
//! - in 2025-11-25 an unknown method is answered `200` with `-32601` (a `404`
//!   would tell the client its session ended); in 2026-07-28 it is `404`, as
//!   that revision requires;
//! - a 2025-11-25 session is its creator's, lives in SQLite, ends after a
//!   day unused, and has one GET stream at a time;
//! - notifications carry their change-log position under `stead/cursor`,
//!   which a 2026-07-28 `subscriptions/listen` may send back to resume (that
//!   revision dropped `Last-Event-ID`); no keep-alive comments are sent;
//! - JSON is answered whenever the client accepts it; one SSE event only
//!   when it accepts nothing else;
//! - `null` for a tool argument whose schema does not take it means "left
//!   out", for strict-mode clients.

pub mod gate;
pub mod http;
pub mod jsonrpc;
pub mod listen;
pub mod notify;
pub mod resources;
pub mod resume;
pub mod revision;
pub mod server;
pub mod session;
pub mod sse;
