//! The computer backend: commands that need real Linux run in a container
//! holding a copy of the workspace.
//!
//! The workspace stays the source of truth. For each command the driver
//! ([`run`]) pushes what the container's copy lacks, runs the command while
//! passing its output on, pulls the content of what it changed and applies
//! every change in one transaction (conflicts kept side by side, see
//! `stead_vfs` sync), then acknowledges. The container may vanish at any
//! point: before the apply nothing in the workspace has changed, so a lost
//! command leaves it exactly as it was, and the next command finds a new
//! container instance and pushes it the whole workspace.
//!
//! Commands on one agent's computer run one at a time (the caller holds the
//! lock); the agent's other requests go on meanwhile, which is how a
//! conflict can arise at all.
//!
//! - [`detached`]: what is kept of a job's command that outlives its
//!   alarm, to pick it back up ([`resume`]);
//! - [`processes`]: the protocol's calls for long-running processes;
//! - [`live`]: what running processes write, pulled back while they run;
//! - [`link`]: the protocol's calls and error rules over the host's
//!   [`Transport`] (on Workers: HTTP to the agent's `Computer` Durable
//!   Object, which owns the container and its secret);
//! - [`owner`]: the `Computer` Durable Object's decisions (the container's
//!   start, retries, heartbeat and idle release) behind its own small seam;
//! - protocol types: `stead_sync`.

pub mod detached;
pub mod error;
pub mod link;
pub mod live;
pub mod owner;
pub mod processes;

use std::cell::Cell;
use std::collections::BTreeMap;

use base64::Engine;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use stead_sql::{params, Sql};
use stead_sync::owner::ComputerState;
use stead_sync::{
    frame, Ack, ApplyReply, Change, ChunkHash, ChunkRequest, Entry, ErrorCode, ExecEvent, ExecSpec,
    Exit, IgnoreRules, Push, Status, PROTOCOL,
};
use stead_vfs::tier::ObjectStore;
use stead_vfs::{Rejected, VPath, Vfs, VfsError};

pub use error::ComputerError;
pub use link::Link;

use crate::host::{ByteStream, Host, Method, Transport};
use crate::outcome::{
    Backend, Captured, ComputerReport, ExecOutcome, ExecStatus, OutputEncoding, SyncReport,
    Transfer,
};

/// Chunk bytes per request, each way: bounded memory in the Durable Object.
const BATCH_BYTES: usize = 8 << 20;

/// Output kept per stream for the result (the sink sees all of it).
const MAX_OUTPUT: usize = 16 << 20;

/// Receives a command's output as it arrives.
pub trait OutputSink {
    fn stdout(&self, data: &[u8]);
    fn stderr(&self, data: &[u8]);
    /// The computer no longer held `bytes` of output (nobody read them in
    /// time): they are not in the log.
    fn dropped(&self, _bytes: u64) {}
    /// The job the output belongs to, if the command runs as one (so that
    /// cancelling the job can stop the command).
    fn job(&self) -> Option<i64> {
        None
    }
}

/// A sink that keeps nothing (the result still carries the output).
pub struct Discard;

impl OutputSink for Discard {
    fn stdout(&self, _: &[u8]) {}
    fn stderr(&self, _: &[u8]) {}
}

/// A command for the computer.
pub struct Command {
    pub command: String,
    pub cwd: VPath,
    pub env: BTreeMap<String, String>,
    pub stdin: Vec<u8>,
    pub timeout_ms: u64,
}

/// An exec on the computer, as the driver runs it.
pub struct Exec<'a> {
    /// The exec id: the container runs each id at most once.
    pub id: &'a str,
    pub command: Command,
    pub handling: Handling<'a>,
}

/// How an exec's run is followed and finished, whether it is started now
/// or picked back up ([`resume`]).
#[derive(Clone, Copy)]
pub struct Handling<'a> {
    pub encoding: OutputEncoding,
    /// Set when the exec's job is cancelled, at any stage.
    pub cancelled: &'a Cell<bool>,
    /// Takes the automatic checkpoint just before the command's changes are
    /// applied (only when there are some); returns its id.
    pub before_apply: &'a dyn Fn() -> Result<Option<i64>, VfsError>,
    /// For a job: the command is detached (it runs on without a client,
    /// its output kept by the container) and following it stops at this
    /// time (ms since the epoch), the command still running: the run is
    /// then [`Ran::Suspended`]. `None`: followed to its end.
    pub until: Option<i64>,
    /// Told once a detached command has started, so it can be picked back
    /// up even if this run is cut off.
    pub on_detached: &'a dyn Fn(&Detached) -> Result<(), VfsError>,
}

/// How far a run got.
#[derive(Debug)]
pub enum Ran {
    /// It ended, whichever way.
    Finished(ExecOutcome),
    /// Its time ran out with the detached command still running on the
    /// computer: pick it up with [`resume`].
    Suspended(Detached),
}

/// A detached command on the computer: what picking it back up needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detached {
    pub exec: String,
    /// The container instance it runs on (another one means it is gone).
    pub instance: String,
    /// The workspace revision the container held when it started.
    pub base: i64,
    /// Output bytes received so far: the offset to read on from.
    pub offset: u64,
    /// What the push before it sent.
    pub sent: Transfer,
}

/// Finds which container instance answers (starting the computer if it
/// does not run) and brings its copy of the workspace in step. `vfs` gives
/// a view of the workspace at the current time (this spans many awaits).
/// Content kept in the object store is read from `store` (verified) as the
/// container asks for it.
pub async fn bring_in_step<'db, S: Sql, T: Transport>(
    db: &'db S,
    vfs: impl Fn() -> Vfs<'db, S>,
    store: Option<&impl ObjectStore>,
    transport: &T,
) -> Result<Pushed, ComputerError> {
    connect_and_push(db, &vfs, store, &Link::new(transport)).await
}

/// Runs an exec on the agent's computer, whose copy [`bring_in_step`] just
/// brought in step (`pushed`); see the module docs.
///
/// The exec names the instance it was planned for, and a program refuses
/// one for another instance before starting it: the container the push
/// reached died and its owner sent the exec to a replacement whose disk
/// was never pushed. The command then never started anywhere: that is
/// [`ComputerError::StaleInstance`]. The replacement is a new computer, to
/// be given what any new computer is (its environment, the processes that
/// come back) by whoever brings a computer in step, who plans the exec
/// again.
pub async fn run<'db, H: Host>(
    host: &'db H,
    vfs: impl Fn() -> Vfs<'db, H::Db>,
    transport: &H::Computer,
    pushed: Pushed,
    exec: &Exec<'_>,
    sink: &dyn OutputSink,
) -> Result<Ran, ComputerError> {
    let link = Link::new(transport);
    let mut report = ComputerReport::default();
    report.sync.sent = pushed.sent.clone();
    let handling = exec.handling;
    let spec = ExecSpec {
        id: exec.id.to_string(),
        command: exec.command.command.clone(),
        cwd: exec.command.cwd.to_string(),
        env: exec.command.env.clone(),
        stdin: base64::engine::general_purpose::STANDARD.encode(&exec.command.stdin),
        timeout_ms: exec.command.timeout_ms,
        detach: handling.until.is_some(),
    };
    if handling.cancelled.get() {
        // Cancelled while the workspace was being pushed: never start it.
        let revision = vfs().revision()?;
        let output = Output::new(handling.encoding);
        let outcome = output.into_outcome(ExecStatus::Cancelled, None, None, revision, report);
        return Ok(Ran::Finished(outcome));
    }
    let path = format!(
        "/v1/exec?{}={}",
        stead_sync::EXEC_INSTANCE_PARAM,
        pushed.instance
    );
    let stream = match link.stream("exec", &path, &spec).await {
        Ok(stream) => stream,
        Err(error) if error.is_stale_instance() => {
            return Err(ComputerError::StaleInstance {
                planned: pushed.instance,
            })
        }
        // Refused as bad (a cwd it cannot enter): the command never
        // started and the computer and its copy are as they were.
        Err(error) if error.is_bad_request() => return Err(error),
        Err(error) => {
            let broken = Broken::lost(lost_reason(error));
            let output = Output::new(handling.encoding);
            return lost(host.db(), &vfs, output, report, broken).map(Ran::Finished);
        }
    };
    let detached = Detached {
        exec: spec.id.clone(),
        instance: pushed.instance,
        base: pushed.base,
        offset: 0,
        sent: report.sync.sent.clone(),
    };
    if handling.until.is_some() {
        (handling.on_detached)(&detached)?;
    }
    if handling.cancelled.get() {
        // Cancelled while the request was on its way: the command runs now,
        // so it can be stopped (it reports `cancelled`).
        let _ = cancel_exec(&link, &spec.id).await;
    }
    finish(host, &vfs, &link, handling, detached, stream, report, sink).await
}

/// Picks a detached command back up where `detached` left it: if the
/// container that runs it is still there, reads its output on from the
/// offset, and finishes it as [`run`] does.
pub async fn resume<'db, H: Host>(
    host: &'db H,
    vfs: impl Fn() -> Vfs<'db, H::Db>,
    transport: &H::Computer,
    detached: Detached,
    handling: Handling<'_>,
    sink: &dyn OutputSink,
) -> Result<Ran, ComputerError> {
    let link = Link::new(transport);
    let report = ComputerReport {
        sync: SyncReport {
            sent: detached.sent.clone(),
            ..SyncReport::default()
        },
        ..ComputerReport::default()
    };
    let gone = |reason: String| {
        let output = Output::new(handling.encoding);
        lost(
            host.db(),
            &vfs,
            output,
            report.clone(),
            Broken::lost(reason),
        )
        .map(Ran::Finished)
    };
    let status: Status = match link
        .json("status", Method::Get, "/v1/status", None::<&()>)
        .await
    {
        Ok(status) => status,
        Err(error) => return gone(error.to_string()),
    };
    if status.instance != detached.instance {
        return gone("the computer that ran it is gone".into());
    }
    if handling.cancelled.get() {
        let _ = cancel_exec(&link, &detached.exec).await;
    }
    let path = format!("/v1/exec/{}/output?from={}", detached.exec, detached.offset);
    let stream = match link.get_stream("reattach", &path).await {
        Ok(stream) => stream,
        Err(error) => return gone(lost_reason(error)),
    };
    finish(host, &vfs, &link, handling, detached, stream, report, sink).await
}

/// Follows an exec's event stream and, once it exits, pulls, applies and
/// acknowledges its changes.
#[allow(clippy::too_many_arguments)]
async fn finish<'db, H: Host>(
    host: &'db H,
    vfs: &impl Fn() -> Vfs<'db, H::Db>,
    link: &Link<'_, H::Computer>,
    handling: Handling<'_>,
    mut detached: Detached,
    stream: ByteStream,
    mut report: ComputerReport,
    sink: &dyn OutputSink,
) -> Result<Ran, ComputerError> {
    let mut output = Output::new(handling.encoding);
    let started_at = detached.offset;
    let exit = match follow(
        host,
        stream,
        handling.until,
        sink,
        &mut output,
        &mut detached.offset,
    )
    .await
    {
        Followed::Exit(exit) => exit,
        Followed::Paused => return Ok(Ran::Suspended(detached)),
        // A detached command outlives its stream: if this one made
        // progress before it broke, the next alarm reads on from where it
        // stopped (or finds the computer gone).
        Followed::Broken(broken)
            if handling.until.is_some() && broken.transient && detached.offset > started_at =>
        {
            return Ok(Ran::Suspended(detached))
        }
        Followed::Broken(broken) => {
            return lost(host.db(), vfs, output, report, broken).map(Ran::Finished)
        }
    };

    let received = &mut report.sync.received;
    received.files = exit.changes.len() as u64;
    received.manifest_bytes = serde_json::to_vec(&exit.changes).map_or(0, |v| v.len() as u64);
    let pull = Pull {
        id: &detached.exec,
        base: detached.base,
        changes: &exit.changes,
        moved: Moved::Fail,
    };
    let applied = pull_and_apply(host.db(), vfs, link, &pull, handling.before_apply, received)
        .await?
        .applied;
    // Until acknowledged, the container keeps reporting these changes; a
    // failed acknowledgement only costs a harmless repeat next time.
    let ack = Ack {
        exec: detached.exec.clone(),
    };
    let _ = link
        .bytes("ack", Method::Post, "/v1/sync/ack", Some(link::json(&ack)))
        .await;

    let status = if exit.timed_out {
        ExecStatus::TimedOut
    } else if exit.cancelled {
        ExecStatus::Cancelled
    } else if exit.shutdown {
        ExecStatus::Stopped
    } else {
        ExecStatus::Exited
    };
    let code = exit.code.unwrap_or_else(|| 128 + exit.signal.unwrap_or(0));
    let (applied, checkpoint) = applied;
    report.changed = applied.applied;
    report.conflicts = applied.conflicts;
    report.skipped = exit.skipped;
    let message = refusal_message(&applied.rejected);
    report.rejected = applied.rejected;
    let mut outcome =
        output.into_outcome(status, Some(code), exit.signal, applied.revision, report);
    outcome.checkpoint = checkpoint;
    outcome.message = message;
    Ok(Ran::Finished(outcome))
}

/// What an answer says when the workspace refused some of the computer's
/// changes: how many, which quotas, and the ways out.
pub fn refusal_message(rejected: &[Rejected]) -> Option<String> {
    if rejected.is_empty() {
        return None;
    }
    let mut quotas: Vec<String> = rejected
        .iter()
        .filter_map(|r| Some(format!("{} = {}", r.quota?, r.limit?)))
        .collect();
    quotas.sort();
    quotas.dedup();
    let mut message = format!(
        "the workspace refused {} of the computer's changes (see rejected); the rest was \
         applied, and the next command's push puts the workspace's version back on the \
         computer (a refused new file is removed there)",
        rejected.len()
    );
    if let Some(quota) = rejected.iter().find_map(|r| r.quota) {
        message.push_str(&format!(
            ". Quota reached ({}): raise it with PUT /agents/{{id}}/settings \
             {{\"quotas\":{{\"{quota}\":...}}}}, delete files, or list build output in \
             /.steadignore to keep it on the computer only",
            quotas.join(", ")
        ));
    }
    Some(message)
}

/// The outcome of a command whose end is unknown. Nothing was applied, and
/// the command is never replayed. A container that died (or the way to it)
/// is forgotten, so the next command starts over with the whole
/// workspace; one that is alive but could not report keeps its copy, and
/// its next scan reports what this command changed.
fn lost<'db, S: Sql + 'db>(
    db: &S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    output: Output,
    report: ComputerReport,
    broken: Broken,
) -> Result<ExecOutcome, ComputerError> {
    if broken.computer_lost {
        forget(db)?;
    }
    let revision = vfs().revision()?;
    let mut outcome = output.into_outcome(ExecStatus::Lost, None, None, revision, report);
    outcome.message = Some(format!(
        "the command's outcome is unknown; the workspace is unchanged: {}",
        broken.reason
    ));
    Ok(outcome)
}

/// Why an exec's request got no stream: the owner's own words when it
/// says the computer was lost with the command perhaps begun
/// (`COMPUTER_LOST`), else the error.
fn lost_reason(error: ComputerError) -> String {
    match error {
        ComputerError::Refused {
            code: ErrorCode::ComputerLost,
            message,
            ..
        } => message,
        error => error.to_string(),
    }
}

/// The container instance a push reached, and the revision it now holds.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub instance: String,
    pub base: i64,
    /// The instance is new to the workspace (its disk was empty): whatever
    /// ran on an earlier one is gone.
    pub fresh: bool,
    /// What the push sent.
    pub sent: Transfer,
}

/// Finds which container instance answers and brings its copy in step. A
/// container that restarted between the two (its push is refused as stale)
/// is asked again once.
async fn connect_and_push<'db, S: Sql, T: Transport>(
    db: &'db S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    store: Option<&impl ObjectStore>,
    link: &Link<'_, T>,
) -> Result<Pushed, ComputerError> {
    let mut sent = Transfer::default();
    let mut attempts = 0;
    loop {
        let status: Status = link
            .json("status", Method::Get, "/v1/status", None::<&()>)
            .await?;
        if status.protocol != PROTOCOL {
            return Err(ComputerError::Protocol {
                found: status.protocol,
                expected: PROTOCOL,
            });
        }
        let fresh = load(db)?.is_none_or(|synced| synced.instance != status.instance);
        match push(db, vfs, store, link, &status.instance, &mut sent).await {
            Err(ComputerError::Refused {
                code: ErrorCode::StaleInstance,
                ..
            }) if attempts == 0 => attempts += 1,
            Ok(base) => {
                return Ok(Pushed {
                    instance: status.instance,
                    base,
                    fresh,
                    sent,
                })
            }
            Err(error) => return Err(error),
        }
    }
}

/// Asks the computer to stop exec `id` (its whole process group); the
/// command then ends `cancelled` and its changes come back as usual.
pub async fn cancel<T: Transport>(transport: &T, id: &str) -> Result<(), ComputerError> {
    cancel_exec(&Link::new(transport), id).await
}

async fn cancel_exec<T: Transport>(link: &Link<'_, T>, id: &str) -> Result<(), ComputerError> {
    link.bytes(
        "cancel",
        Method::Post,
        &format!("/v1/exec/{id}/cancel"),
        None,
    )
    .await
    .map(drop)
}

/// The computer's state as its owner reports it (stopped, starting,
/// running; its instance, times and idle deadline).
pub async fn state<T: Transport>(transport: &T) -> Result<ComputerState, ComputerError> {
    Link::new(transport)
        .json(
            "state",
            Method::Get,
            stead_sync::owner::STATE_PATH,
            None::<&()>,
        )
        .await
}

/// Releases the computer now (a command running on it is lost); its state
/// afterwards.
pub async fn stop<T: Transport>(transport: &T) -> Result<ComputerState, ComputerError> {
    Link::new(transport)
        .json(
            "stop",
            Method::Post,
            stead_sync::owner::STOP_PATH,
            None::<&()>,
        )
        .await
}

/// Makes the computer's owner forget the port grants it keeps
/// (`crate::port_grants`).
pub async fn forget_port_grants<T: Transport>(transport: &T) -> Result<(), ComputerError> {
    Link::new(transport)
        .bytes(
            "forget port grants",
            Method::Delete,
            crate::port_grants::FORGET_PATH,
            None,
        )
        .await
        .map(drop)
}

/// What the container's copy was last known to hold.
struct Synced {
    instance: String,
    acked: i64,
}

fn load(db: &impl Sql) -> Result<Option<Synced>, VfsError> {
    let row = db.query_row(
        "SELECT instance, acked FROM computer WHERE id = 1",
        params![],
    )?;
    let synced = row
        .map(|row| {
            Ok::<_, stead_sql::SqlError>(Synced {
                instance: row.text(0)?.to_string(),
                acked: row.int(1)?,
            })
        })
        .transpose()?;
    Ok(synced)
}

fn save(db: &impl Sql, instance: &str, acked: i64) -> Result<(), VfsError> {
    db.execute(
        "INSERT INTO computer (id, instance, acked) VALUES (1, ?, ?) \
         ON CONFLICT (id) DO UPDATE SET instance = excluded.instance, acked = excluded.acked",
        params![instance, acked],
    )?;
    Ok(())
}

fn forget(db: &impl Sql) -> Result<(), VfsError> {
    db.execute("DELETE FROM computer", params![])?;
    Ok(())
}

/// Paths the workspace refused from the computer whose copy there the
/// next push puts back to the workspace's state (see [`pull_and_apply`]).
fn refused_paths(db: &impl Sql) -> Result<Vec<VPath>, VfsError> {
    let rows = db.query("SELECT path FROM computer_refused ORDER BY path", params![])?;
    rows.iter().map(|row| VPath::parse(row.text(0)?)).collect()
}

/// Remembers the refused paths a push can put back: the container reported
/// them as real paths; one that is not (refused for that) it cannot be sent.
fn note_refused(db: &impl Sql, rejected: &[Rejected]) -> Result<(), VfsError> {
    for rejected in rejected {
        if VPath::parse(&rejected.path).is_ok_and(|path| path.as_str() == rejected.path) {
            db.execute(
                "INSERT OR IGNORE INTO computer_refused (path) VALUES (?)",
                params![rejected.path.as_str()],
            )?;
        }
    }
    Ok(())
}

/// The computer's copy holds the workspace's state at `paths` now.
fn forget_refused(db: &impl Sql, paths: &[VPath]) -> Result<(), VfsError> {
    for path in paths {
        db.execute(
            "DELETE FROM computer_refused WHERE path = ?",
            params![path.as_str()],
        )?;
    }
    Ok(())
}

/// The workspace's ignore rules, as text: the defaults, then
/// `/.steadignore`'s lines if it has one.
async fn ignore_rules<S: Sql>(
    vfs: &Vfs<'_, S>,
    store: Option<&impl ObjectStore>,
) -> Result<String, VfsError> {
    let path = VPath::parse(stead_sync::ignore::IGNORE_FILE)?;
    let file = match stead_vfs::tier::read_file(vfs, store, &path).await {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(VfsError::NotFound { .. }) => None,
        Err(error) => return Err(error),
    };
    Ok(stead_sync::ignore::workspace_rules(file.as_deref()))
}

/// Brings the container's copy in step with the workspace; returns the
/// revision it now holds.
async fn push<'db, S: Sql, T: Transport>(
    db: &'db S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    store: Option<&impl ObjectStore>,
    link: &Link<'_, T>,
    instance: &str,
    sent: &mut Transfer,
) -> Result<i64, ComputerError> {
    let view = vfs();
    let ignore = ignore_rules(&view, store).await?;
    let rules = IgnoreRules::parse(&ignore);
    let base = view.revision()?;
    let known = load(db)?.filter(|synced| synced.instance == instance);
    let since = match &known {
        Some(synced) => view.sync_changes_since(synced.acked, &rules)?,
        None => None,
    };
    let refused = refused_paths(db)?;
    let (full, changes) = match since {
        Some(mut changes) => {
            // Where the workspace refused what the computer reported, the
            // computer's copy is put back to the workspace's state.
            let states = view.sync_states(&refused, &rules)?;
            let put_back: std::collections::BTreeSet<&str> =
                refused.iter().map(VPath::as_str).collect();
            changes.retain(|change| !put_back.contains(change.path.as_str()));
            changes.extend(states);
            changes.sort_by(|a, b| a.path.cmp(&b.path));
            (false, changes)
        }
        None => (true, view.sync_manifest(&rules)?),
    };
    if !full && changes.is_empty() {
        forget_refused(db, &refused)?;
        return Ok(base);
    }
    sent.files += changes.len() as u64;
    let body = link::json(&Push {
        instance: instance.to_string(),
        full,
        changes,
        ignore,
    });
    for _ in 0..2 {
        sent.manifest_bytes += body.bytes.len() as u64;
        let reply = link
            .bytes("push", Method::Post, "/v1/sync/apply", Some(body.clone()))
            .await?;
        let reply: ApplyReply =
            serde_json::from_slice(&reply).map_err(|e| ComputerError::Malformed {
                step: "push",
                reason: e.to_string(),
            })?;
        let needed = match reply {
            ApplyReply::Applied { .. } => {
                save(db, instance, base)?;
                forget_refused(db, &refused)?;
                return Ok(base);
            }
            ApplyReply::Need { chunks } => chunks,
        };
        let mut batch = Vec::new();
        for hash in needed {
            let data = stead_vfs::tier::chunk_by_hash(&vfs(), store, &hash)
                .await?
                .ok_or_else(|| ComputerError::Malformed {
                    step: "push",
                    reason: format!("asked for chunk {hash}, which the workspace does not hold"),
                })?;
            sent.bytes += data.len() as u64;
            frame::encode(&mut batch, &data);
            if batch.len() >= BATCH_BYTES {
                send_chunks(link, std::mem::take(&mut batch)).await?;
            }
        }
        if !batch.is_empty() {
            send_chunks(link, batch).await?;
        }
    }
    Err(ComputerError::Malformed {
        step: "push",
        reason: "still missing content after it was sent".into(),
    })
}

async fn send_chunks<T: Transport>(
    link: &Link<'_, T>,
    frames: Vec<u8>,
) -> Result<(), ComputerError> {
    link.bytes(
        "push",
        Method::Post,
        "/v1/sync/chunks",
        Some(link::frames(frames)),
    )
    .await
    .map(drop)
}

/// Output collected for the outcome, up to [`MAX_OUTPUT`] per stream.
struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    truncated: bool,
    encoding: OutputEncoding,
}

impl Output {
    fn new(encoding: OutputEncoding) -> Self {
        Output {
            stdout: Vec::new(),
            stderr: Vec::new(),
            truncated: false,
            encoding,
        }
    }

    fn keep(buffer: &mut Vec<u8>, data: &[u8], truncated: &mut bool) {
        let room = MAX_OUTPUT.saturating_sub(buffer.len());
        *truncated |= data.len() > room;
        buffer.extend_from_slice(&data[..data.len().min(room)]);
    }

    /// The exec outcome: output, how the command ended (`exit_code` `None`
    /// when it never finished), the workspace revision and what moved.
    fn into_outcome(
        self,
        status: ExecStatus,
        exit_code: Option<i32>,
        signal: Option<i32>,
        revision: i64,
        report: ComputerReport,
    ) -> ExecOutcome {
        ExecOutcome {
            backend: Backend::Computer,
            status,
            exit_code,
            signal,
            stdout: Captured::new(self.stdout, self.encoding),
            stderr: Captured::new(self.stderr, self.encoding),
            output_encoding: self.encoding,
            truncated: self.truncated,
            limit: None,
            revision,
            checkpoint: None,
            message: None,
            computer: Some(report),
        }
    }
}

/// Why an exec stream ended without an exit event.
struct Broken {
    reason: String,
    /// The container (or the way to it) is gone; otherwise it is alive
    /// and said why it could not report.
    computer_lost: bool,
    /// The stream itself broke (rather than carrying something wrong): a
    /// detached command may still be running, and reading it again can
    /// tell.
    transient: bool,
}

impl Broken {
    fn lost(reason: impl Into<String>) -> Self {
        Broken {
            reason: reason.into(),
            computer_lost: true,
            transient: false,
        }
    }

    fn cut(reason: impl Into<String>) -> Self {
        Broken {
            transient: true,
            ..Broken::lost(reason)
        }
    }
}

/// How following an exec's events ended.
enum Followed {
    Exit(Exit),
    Broken(Broken),
    /// The time given ran out first (the command may still run).
    Paused,
}

/// Reads an exec's events, passing output on and counting its bytes in
/// `offset`, until the exit event, a break, or `until`.
async fn follow<H: Host>(
    host: &H,
    mut stream: ByteStream,
    until: Option<i64>,
    sink: &dyn OutputSink,
    output: &mut Output,
    offset: &mut u64,
) -> Followed {
    let deadline = async {
        match until {
            Some(at) => {
                host.sleep(u64::try_from(at - host.now_ms()).unwrap_or(0))
                    .await
            }
            None => futures::future::pending().await,
        }
    };
    let mut deadline = std::pin::pin!(deadline);
    let mut pending: Vec<u8> = Vec::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    loop {
        let piece = match futures::future::select(stream.next(), deadline.as_mut()).await {
            futures::future::Either::Left((piece, _)) => piece,
            futures::future::Either::Right(((), _)) => return Followed::Paused,
        };
        let piece = match piece {
            Some(Ok(piece)) => piece,
            Some(Err(reason)) => return Followed::Broken(Broken::cut(reason)),
            None => {
                return Followed::Broken(Broken::cut(
                    "the output stream ended before the command did",
                ))
            }
        };
        pending.extend_from_slice(&piece);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let event: ExecEvent = match serde_json::from_slice(&line) {
                Ok(event) => event,
                Err(e) => {
                    return Followed::Broken(Broken::lost(format!(
                        "bad event from the computer: {e}"
                    )))
                }
            };
            match event {
                ExecEvent::Stdout { data } => match b64.decode(data) {
                    Ok(data) => {
                        *offset += data.len() as u64;
                        sink.stdout(&data);
                        Output::keep(&mut output.stdout, &data, &mut output.truncated);
                    }
                    Err(e) => return Followed::Broken(Broken::lost(e.to_string())),
                },
                ExecEvent::Stderr { data } => match b64.decode(data) {
                    Ok(data) => {
                        *offset += data.len() as u64;
                        sink.stderr(&data);
                        Output::keep(&mut output.stderr, &data, &mut output.truncated);
                    }
                    Err(e) => return Followed::Broken(Broken::lost(e.to_string())),
                },
                ExecEvent::Dropped { bytes } => {
                    *offset += bytes;
                    sink.dropped(bytes);
                }
                ExecEvent::Exit(exit) => return Followed::Exit(exit),
                // The command ended but its changes could not be scanned:
                // they stay on the container's disk, unreported, so this
                // command's outcome is unknown, as when the stream breaks.
                ExecEvent::Error(error) => {
                    return Followed::Broken(Broken {
                        reason: format!(
                            "the computer could not report the command's changes ({:?}): {}",
                            error.code, error.message
                        ),
                        computer_lost: false,
                        transient: false,
                    })
                }
            }
        }
    }
}

/// A report of changes on the computer's disk, to pull and apply.
struct Pull<'a> {
    /// The exec (or live report) id the container keeps it under.
    id: &'a str,
    /// The workspace revision the container's copy was pushed at.
    base: i64,
    changes: &'a [Change],
    moved: Moved,
}

/// What becomes of a file whose content the container did not send.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Moved {
    /// The pull fails (an exec's changes are applied whole): the
    /// container refuses such a request itself.
    Fail,
    /// The file is left out of the apply and named in the result (a live
    /// report, see `stead_sync::live`).
    LeaveOut,
}

impl Moved {
    fn chunks_path(self) -> &'static str {
        match self {
            Moved::Fail => "/v1/chunks",
            Moved::LeaveOut => stead_sync::live::CHUNKS_PATH,
        }
    }
}

/// What a pull applied.
struct Pulled {
    applied: (stead_vfs::SyncOutcome, Option<i64>),
    /// Paths left out (only with [`Moved::LeaveOut`]).
    left_out: Vec<String>,
}

/// Fetches the `missing` chunks of `pull` from the computer, in batches,
/// and stages them in `staging`. Content past `max_stored_bytes` is not
/// staged: returns that refusal with the chunks it left out, so the files
/// whose content could not all be held are refused on their own (a smaller
/// chunk after it may still fit).
async fn stage_missing<'db, S: Sql + 'db, T: Transport>(
    vfs: &impl Fn() -> Vfs<'db, S>,
    link: &Link<'_, T>,
    pull: &Pull<'_>,
    staging: stead_vfs::UploadId,
    missing: &[ChunkHash],
    received: &mut Transfer,
) -> Result<Option<(VfsError, Vec<ChunkHash>)>, ComputerError> {
    let mut idx = 0;
    let mut no_room: Option<(VfsError, Vec<ChunkHash>)> = None;
    for batch in missing.chunks(BATCH_BYTES / stead_sync::CHUNK_SIZE) {
        let request = ChunkRequest {
            exec: pull.id.to_string(),
            chunks: batch.to_vec(),
        };
        let body = link
            .bytes(
                "pull",
                Method::Post,
                pull.moved.chunks_path(),
                Some(link::json(&request)),
            )
            .await?;
        let view = vfs();
        let frames = frame::decode_all(&body).map_err(|e| ComputerError::Malformed {
            step: "pull",
            reason: e.to_string(),
        })?;
        for (hash, data) in frames {
            received.bytes += data.len() as u64;
            match view.stage_chunk(staging, idx, &data) {
                Ok(()) => idx += 1,
                Err(error @ VfsError::NoSpace { .. }) => no_room
                    .get_or_insert_with(|| (error, Vec::new()))
                    .1
                    .push(hash),
                Err(error) => return Err(error.into()),
            }
        }
    }
    Ok(no_room)
}

/// Fetches the content the workspace lacks, then applies every change in
/// one transaction (the checkpoint `before_apply` takes first, if there
/// are changes).
async fn pull_and_apply<'db, S: Sql, T: Transport>(
    db: &'db S,
    vfs: &impl Fn() -> Vfs<'db, S>,
    link: &Link<'_, T>,
    pull: &Pull<'_>,
    before_apply: &dyn Fn() -> Result<Option<i64>, VfsError>,
    received: &mut Transfer,
) -> Result<Pulled, ComputerError> {
    let view = vfs();
    // A file over `max_file_bytes` is refused by the apply whatever its
    // content: none of that is fetched.
    let max_file_bytes = view.limits().max_file_bytes;
    let fetched = |change: &Change| !matches!(change.entry, Some(Entry::File { size, .. }) if size > max_file_bytes);
    let chunks_of = |change: &Change| -> Vec<ChunkHash> {
        stead_sync::chunk_hashes(std::slice::from_ref(change)).collect()
    };
    let hashes: Vec<ChunkHash> = pull
        .changes
        .iter()
        .filter(|change| fetched(change))
        .flat_map(chunks_of)
        .collect();
    let missing = view.missing_chunks(&hashes)?;
    let staging = view.begin_staging()?;
    let staged = async {
        let no_room = stage_missing(vfs, link, pull, staging, &missing, received).await?;
        // Synchronous from here: nothing else runs between reading the
        // revision and applying, so "unchanged since base" is exact.
        let view = vfs();
        let still = view.missing_chunks(&hashes)?;
        let (lacking, kept): (Vec<Change>, Vec<Change>) =
            pull.changes.iter().cloned().partition(|change| {
                fetched(change)
                    && chunks_of(change)
                        .iter()
                        .any(|hash| still.binary_search(hash).is_ok())
            });
        // A file lacking content that did not fit is refused; one lacking
        // content the container did not serve (it moved) is left out.
        let mut refused = Vec::new();
        let mut left_out = Vec::new();
        let mut changes = kept;
        for change in lacking {
            match &no_room {
                Some((error, unstaged))
                    if chunks_of(&change).iter().any(|h| unstaged.contains(h)) =>
                {
                    refused.push(Rejected::of(&change.path, error))
                }
                _ => match pull.moved {
                    Moved::LeaveOut => left_out.push(change.path),
                    // The container served every chunk asked for: the
                    // apply refuses what does not add up.
                    Moved::Fail => changes.push(change),
                },
            }
        }
        let before = view.revision()?;
        let checkpoint = match changes.is_empty() {
            true => None,
            false => before_apply()?,
        };
        let mut outcome = view.apply_sync(pull.base, &changes)?;
        outcome.rejected.extend(refused);
        outcome.rejected.sort_by(|a, b| a.path.cmp(&b.path));
        Ok::<_, ComputerError>((before, outcome, checkpoint, left_out))
    }
    .await;
    vfs().abort_upload(staging)?;
    let (before, outcome, checkpoint, left_out) = staged?;
    note_refused(db, &outcome.rejected)?;
    if let Some(synced) = load(db)? {
        // The container now holds `base` plus its own changes. If the
        // workspace changed nothing else meanwhile, that is exactly the new
        // revision; otherwise the next push sends everything since `base`
        // (what the container already holds costs no content).
        let acked = if before == pull.base && outcome.conflicts.is_empty() {
            outcome.revision
        } else {
            pull.base
        };
        save(db, &synced.instance, acked)?;
    }
    Ok(Pulled {
        applied: (outcome, checkpoint),
        left_out,
    })
}
