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

pub mod http;
pub mod jsonrpc;
pub mod listen;
pub mod notify;
pub mod resources;
pub mod revision;
pub mod server;
pub mod session;
pub mod sse;
