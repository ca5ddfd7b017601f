//! The protocol's process calls (see `stead_sync::process`): start, poll,
//! signal and stop a long-running process on the computer. What a process
//! is to the agent (its record, its output log, restarts across
//! computers) is `crate::processes`.

use stead_sync::process::{
    Poll, PollReply, ProcessSpec, ProcessStatus, SignalRequest, StopRequest,
};

use super::link::Link;
use super::ComputerError;
use crate::host::{Method, Transport};

/// Starts a process on the computer (whose copy of the workspace is in
/// step: see `super::bring_in_step`).
pub async fn start<T: Transport>(
    transport: &T,
    spec: &ProcessSpec,
) -> Result<ProcessStatus, ComputerError> {
    Link::new(transport)
        .json("process start", Method::Post, "/v1/processes", Some(spec))
        .await
}

/// Every process's status, and output from the offsets in `poll`. A poll
/// never starts a computer nor counts as use of it (see
/// `stead_sync::owner::is_background`).
pub async fn poll<T: Transport>(transport: &T, poll: &Poll) -> Result<PollReply, ComputerError> {
    Link::new(transport)
        .json(
            "process poll",
            Method::Post,
            stead_sync::owner::POLL_PATH,
            Some(poll),
        )
        .await
}

/// Sends `signal` (a name of `stead_sync::process::SIGNALS`) to process
/// `id`.
pub async fn signal<T: Transport>(
    transport: &T,
    id: &str,
    signal: &str,
) -> Result<ProcessStatus, ComputerError> {
    let request = SignalRequest {
        signal: signal.to_string(),
    };
    Link::new(transport)
        .json(
            "process signal",
            Method::Post,
            &format!("/v1/processes/{id}/signal"),
            Some(&request),
        )
        .await
}

/// Stops process `id` (SIGTERM, SIGKILL after `grace_ms`); its status once
/// it has ended.
pub async fn stop<T: Transport>(
    transport: &T,
    id: &str,
    grace_ms: Option<u64>,
) -> Result<ProcessStatus, ComputerError> {
    Link::new(transport)
        .json(
            "process stop",
            Method::Post,
            &format!("/v1/processes/{id}/stop"),
            Some(&StopRequest { grace_ms }),
        )
        .await
}
