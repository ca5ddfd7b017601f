//! The agent's behaviour, in plain Rust: what a stead agent does with each
//! request, alarm and socket message, without knowing it runs on Workers.
//!
//! An [`Agent`] sits on a [`Host`]: the platform's clock, randomness, alarm,
//! WebSockets, outbound calls and the [`Transport`] to its computer, plus
//! its SQLite database. On Workers the `stead` crate's Durable Object
//! implements `Host` over `worker` types and does nothing else; in host
//! tests a fake host does, so every behaviour here is tested with
//! `cargo test` alone.
//!
//! Where things happen:
//! - [`route`]: a URL into an [`Action`]; [`policy`]: what each action needs,
//!   what its body is and what the audit log calls it and its target (one
//!   exhaustive table);
//! - [`request`]: a [`Request`] and its [`Reply`], whatever the way in;
//!   [`dispatch`]: where a request is authorized, admitted, carried out and
//!   audited, for every entry point (HTTP, WebSocket calls, hooks, MCP);
//!   `handlers`: what each action does, one module per area;
//! - [`auth`]: tokens, scopes and callers; `seal`: the one codec of what
//!   the admin token signs (tokens, share links, sessions); [`audit`]: the
//!   audit log;
//!   [`settings`]: quotas and computer settings;
//! - [`tools`]: the file tools; [`exec`]: planning and running a command;
//!   [`outcome`]: the one [`ExecOutcome`] both backends answer;
//! - [`computer`]: the driver that syncs the workspace with the computer and
//!   runs commands there;
//! - [`runner`]: where a job runs, the alarm loop; [`scheduling`]: jobs,
//!   schedules and hooks as the API shows them; [`joblog`]: where a job's
//!   output goes;
//! - [`processes`]: long-running processes on the computer, their records
//!   and their lives across computers; [`ports`]: requests to the ports
//!   they serve; [`shares`]: share links to a port; [`session`]: the
//!   inspector's browser sessions;
//! - [`protocol`]: the WebSocket messages; [`socket`]: where a socket
//!   message is answered; [`subscriptions`]: where job output and change
//!   events are sent;
//! - [`terminal`]: interactive terminals, their transcripts and tickets;
//! - [`mcp`]: the MCP server, one more entry point through dispatch;
//! - [`catalog`]: the tools a model is given, with their schemas and each
//!   harness's shape of them;
//! - [`decode`], [`host`], [`error`]: request decoding, the platform seam,
//!   and the one error type.
//!
//! Modules import from the module that defines a name, never through this
//! front door, and no module depends back on one that depends on it, but
//! one: [`Agent`] holds the light terminals' running lines as
//! `terminal::Busy`, a type the terminal module (which builds on `Agent`)
//! defines. Moving that type below `agent` ends the last circle.

#![deny(unreachable_pub)]
// Issue 29: no function of the agent's core over 120 lines (the threshold
// is in this crate's clippy.toml), so each one stays about one decision
// and a long one is split by what its parts decide before it grows; CI's
// `-D warnings` makes this an error. Set here it covers the library and
// its unit tests, not the integration tests of `tests/`, whose scenario
// functions read top to bottom as one story (three are over 120 lines).
#![warn(clippy::too_many_lines)]

mod agent;
pub mod agent_index;
pub mod audit;
pub mod auth;
pub mod breakdown;
pub mod catalog;
pub mod checkpoint_git;
pub mod checkpoints;
pub mod computer;
pub mod decode;
pub mod dispatch;
pub mod egress;
pub mod egress_gate;
pub mod environment;
mod error;
pub mod exec;
pub mod fork;
pub mod front;
pub mod git_credentials;
mod handlers;
pub mod host;
pub mod joblog;
pub mod mcp;
pub mod minted;
pub mod outbound;
pub mod outcome;
pub mod policy;
pub mod port_grants;
pub mod ports;
pub mod processes;
pub mod protocol;
pub mod range;
pub mod request;
pub mod route;
pub mod runner;
pub mod scheduling;
mod seal;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod shares;
mod shell_net;
pub mod socket;
pub mod subscriptions;
pub mod terminal;
mod tier_release;
mod tiering;
mod tombstone;
pub mod tools;
pub mod transfer;

pub use agent::Agent;
pub use computer::error::ComputerError;
pub use error::{ApiError, HostError};
pub use host::{EventStream, Host, Socket, Transport};
pub use outcome::ExecOutcome;
pub use request::{Body, Bytes, Entry, HookHeaders, Reply, Request};
pub use route::{route, Action, Route, Tool, MAX_JSON_BODY};
