//! Between the workspace's Durable Object and the `Computer` Durable Object
//! that owns the agent's container: what the workspace side may ask of the
//! container's owner beyond forwarding protocol requests.
//!
//! Every protocol request the workspace side sends carries
//! [`crate::IDLE_HEADER`]: the agent's idle setting, which the `Computer` object
//! keeps and applies from then on. The container is stopped once it has
//! been idle that long, measured from the last request (a command that is
//! still running counts as activity); a released computer costs nothing,
//! and the next command starts a fresh one and gets the full manifest.
//!
//! A **background** request ([`is_background`]: the workspace side's poll
//! of its processes, its live sync of their files, and its reading of a
//! terminal session) is forwarded like any other, but it never starts a
//! container and does not count as use: watching a computer must not keep
//! it from being released. On a computer that does not run it is answered
//! `503` with [`crate::ErrorCode::Released`] (released on purpose: idle, on
//! request) or [`crate::ErrorCode::Gone`] (it died, or never ran).
//!
//! Two routes of the `Computer` object itself (never forwarded):
//!
//! - `GET` [`STATE_PATH`] → [`ComputerState`];
//! - `POST` [`STOP_PATH`] → [`ComputerState`] after releasing the container
//!   at once (a command running on it is lost, as when a container
//!   vanishes; the workspace is unchanged);
//! - `DELETE /computer/port-grants`: forget who may reach the ports
//!   (`stead_agent::port_grants`, whose port requests come from the Worker
//!   straight to the `Computer` object).

use serde::{Deserialize, Serialize};

/// The idle timeout when the workspace side sends none.
pub const DEFAULT_IDLE_MS: u64 = 10 * 60 * 1000;

/// The `Computer` object's state route.
pub const STATE_PATH: &str = "/computer/state";

/// The `Computer` object's stop route.
pub const STOP_PATH: &str = "/computer/stop";

/// Where the `Computer` object forwards to a port of the container:
/// `/computer/ports/{port}{path}` reaches `{path}` on `{port}` (HTTP and
/// WebSocket upgrades, bodies streamed both ways). Such a request counts as
/// use, but never starts a container: the process serving the port ran on
/// the one that is there (or it is gone, answered as a background request
/// is).
pub const PORTS_PREFIX: &str = "/computer/ports/";

/// The processes' poll (see `crate::process`): a background request.
pub const POLL_PATH: &str = "/v1/processes/poll";

/// Whether a request to `path` is a background one (see the module docs):
/// the processes' poll, live sync ([`crate::live`]), reading or closing
/// a terminal session ([`crate::terminal`]: a session keeps the computer
/// awake by being open, not by being read), and packing the environment
/// ([`crate::environment`]: saved from a computer that runs, shortly
/// before its idle release, which the save must not put off).
pub fn is_background(path: &str) -> bool {
    path == POLL_PATH
        || path.starts_with(crate::live::PREFIX)
        || path.starts_with(crate::terminal::SESSION_PREFIX)
        || path == crate::environment::PACK_PATH
        || path == crate::environment::CHUNKS_PATH
}

/// Where the computer is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    /// No container runs (never started, released, or gone).
    Stopped,
    /// A container was started and its program has not answered yet.
    Starting,
    /// The program answers.
    Running,
}

/// How the computer is provided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provision {
    /// A container per agent through the Container binding.
    Container,
    /// One local program for all agents (development without containers):
    /// it is never stopped or released by the `Computer` object.
    LocalProcess,
}

/// `GET /computer/state` (and the answer to a stop).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputerState {
    pub state: Lifecycle,
    pub provision: Provision,
    /// The container program's instance id (new at every start).
    pub instance: Option<String>,
    /// When the running container was started (ms since the epoch).
    pub started_ms: Option<i64>,
    /// When the computer last served a request.
    pub last_used_ms: Option<i64>,
    /// The idle timeout in force.
    pub idle_ms: u64,
    /// When the container will be released if nothing happens before.
    pub idle_deadline_ms: Option<i64>,
    /// What the container runs: the program's build identity.
    pub image: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_travel_as_lowercase_words() {
        let state = ComputerState {
            state: Lifecycle::Starting,
            provision: Provision::LocalProcess,
            instance: None,
            started_ms: Some(1),
            last_used_ms: None,
            idle_ms: DEFAULT_IDLE_MS,
            idle_deadline_ms: None,
            image: None,
        };
        let text = serde_json::to_value(&state).unwrap();
        assert_eq!(text["state"], "starting");
        assert_eq!(text["provision"], "local-process");
        assert_eq!(text["idle_ms"], 600_000);
        assert_eq!(
            serde_json::from_value::<ComputerState>(text).unwrap(),
            state
        );
    }
}
