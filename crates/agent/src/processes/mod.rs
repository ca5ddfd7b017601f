//! Long-running processes on the agent's computer (dev servers, watchers):
//! their records, and their lives across computers.
//!
//! A process is started on the computer (after the workspace is pushed to
//! it) and supervised there: the container restarts it by its policy when
//! it exits (`stead_sync::process`). The agent keeps a record per process
//! ([`record`]) and its output in a job's log, so it reads like any job's
//! output (by offset, followed on the WebSocket). The alarm watches the
//! live ones ([`serve`]): each tick polls the computer for their states and
//! new output, in one background request that neither starts the computer
//! nor counts as use of it, then keeps the two copies in step while they
//! run: what the processes wrote comes back (`crate::computer::live`, one
//! bounded report at a time) and the agent's edits go out (an edit brings
//! the tick forward, so it goes out within about 100 ms).
//!
//! **When the computer goes away** (released when idle or on request, or
//! died), its processes are `lost`. Those whose policy restarts them
//! (`on-failure`, `always`) start again on the next computer, right after
//! the workspace is pushed to it ([`revive`]): the next command or process
//! start brings one up after a release; a computer that died is replaced
//! at once, since its processes did not end by anyone's choice. A process
//! stopped on request never starts again.

pub mod record;
pub mod serve;

use stead_sql::Sql;
use stead_sync::process::Restart;

use crate::computer::{self, ComputerError, Pushed};
use crate::host::Transport;
use record::{Process, State};

/// Why processes are lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Their computer was released on purpose (idle, or on request).
    Released,
    /// Their computer died (or was replaced).
    Died,
}

impl Loss {
    fn reason(self) -> &'static str {
        match self {
            Loss::Released => "lost: the computer was released",
            Loss::Died => "lost: the computer went away",
        }
    }
}

/// Whether `process` starts again on a new computer.
pub fn comes_back(process: &Process) -> bool {
    process.restart != Restart::Never && !process.stopped
}

/// Marks `process` lost (its computer went away).
pub fn lose(process: &mut Process, loss: Loss, now_ms: i64) {
    process.state = State::Lost;
    process.pid = None;
    process.error = Some(loss.reason().to_string());
    if !comes_back(process) {
        process.ended_ms = Some(now_ms);
    }
}

/// On a computer new to the workspace (`pushed.fresh`), just brought in
/// step: processes recorded on another instance are lost, and those whose
/// policy says so start again here. Returns whether any record changed.
/// A start that fails leaves the process failed with the reason; it never
/// fails the caller (a command that brought the computer up).
pub async fn revive<S: Sql, T: Transport>(
    db: &S,
    now_ms: i64,
    transport: &T,
    pushed: &Pushed,
) -> Result<bool, stead_scheduler::SchedError> {
    let mut changed = false;
    for mut process in record::all(db)? {
        if process.instance.as_deref() == Some(pushed.instance.as_str()) {
            continue;
        }
        if process.state.is_live() {
            lose(&mut process, Loss::Died, now_ms);
        } else if process.state != State::Lost {
            continue;
        }
        changed = true;
        if comes_back(&process) {
            start_here(transport, &mut process, pushed, now_ms).await;
        }
        record::save(db, &process)?;
    }
    Ok(changed)
}

/// Starts `process` again on the computer `pushed` reached.
async fn start_here<T: Transport>(
    transport: &T,
    process: &mut Process,
    pushed: &Pushed,
    now_ms: i64,
) {
    match computer::processes::start(transport, &process.spec()).await {
        Ok(status) => {
            process.state = State::Running;
            process.pid = status.pid;
            process.exit_code = None;
            process.signal = None;
            process.error = None;
            process.restarts += 1;
            process.base_restarts = process.restarts;
            process.instance = Some(pushed.instance.clone());
            process.offset = 0;
            process.started_ms = Some(now_ms);
        }
        Err(error) => {
            process.state = State::Failed;
            process.error = Some(format!("could not start it again: {error}"));
            process.ended_ms = Some(now_ms);
        }
    }
}

/// The error for a process the computer refused or could not reach.
pub fn is_gone(error: &ComputerError) -> Option<Loss> {
    match error {
        ComputerError::Refused { code, .. } => match code {
            stead_sync::ErrorCode::Released => Some(Loss::Released),
            stead_sync::ErrorCode::Gone => Some(Loss::Died),
            _ => None,
        },
        _ => None,
    }
}
