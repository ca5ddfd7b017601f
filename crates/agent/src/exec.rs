//! `exec`: run a command line, in the light shell or on the computer, and
//! the one answer both give ([`ExecOutcome`]).
//!
//! `backend` picks where: `"shell"` (the in-isolate interpreter), `"computer"`
//! (a Linux container, see `crate::computer`) or `"auto"`, the default, which
//! uses the light shell when it implements every command the script names
//! and the computer otherwise. Deciding is [`plan`]; running is the agent's
//! (`crate::Agent::exec`).
//!
//! In the light shell each exec starts with fresh shell state; its writes go
//! straight to the workspace, one transaction per file operation, so they are
//! durable the moment the command returns (and a command that fails halfway
//! keeps what it wrote before failing, as a real shell would). On the
//! computer, a command's changes arrive together in one transaction after it
//! ends.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize, Serializer};
use stead_shell::{Clock, ExecRequest, LimitKind, Limits};
use stead_sql::Sql;
use stead_vfs::{Conflict, Rejected, VPath, Vfs};

use crate::computer::{self, Transfer};
use crate::ApiError;

/// Longest wall time a caller may ask for in the light shell.
pub const MAX_SHELL_TIMEOUT_MS: u64 = 30_000;

/// Default and longest time a command may run on the computer.
pub const DEFAULT_COMPUTER_TIMEOUT_MS: u64 = 10 * 60_000;
pub const MAX_COMPUTER_TIMEOUT_MS: u64 = 60 * 60_000;

pub use stead_scheduler::Backend;

/// Where a command may run, as the caller asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    Shell,
    Computer,
    #[default]
    Auto,
}

impl BackendChoice {
    /// Where `command` runs with this choice. `auto`: on the computer when
    /// it names a command the light shell lacks, or when the light shell
    /// cannot parse it (real bash may know syntax it does not).
    fn resolve(self, command: &str) -> Backend {
        let on_computer = match self {
            BackendChoice::Shell => false,
            BackendChoice::Computer => true,
            BackendChoice::Auto => {
                stead_shell::unsupported_commands(command).is_none_or(|missing| !missing.is_empty())
            }
        };
        if on_computer {
            Backend::Computer
        } else {
            Backend::Shell
        }
    }
}

/// How the answer carries stdout and stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputEncoding {
    /// Text, with invalid UTF-8 replaced (U+FFFD).
    #[default]
    Utf8,
    /// Base64 of the exact bytes (binary output: `gzip -c`, `tar c`).
    Base64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecReq {
    command: String,
    cwd: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    stdin: String,
    timeout_ms: Option<u64>,
    #[serde(default)]
    backend: BackendChoice,
    #[serde(default)]
    output_encoding: OutputEncoding,
}

/// A decoded exec request, with the backend decided.
pub struct Plan {
    pub encoding: OutputEncoding,
    pub run: Run,
}

/// What runs where.
pub enum Run {
    Shell(ExecRequest),
    Computer(computer::Command),
}

impl Plan {
    /// Where it runs.
    pub fn ran(&self) -> Backend {
        match self.run {
            Run::Shell(_) => Backend::Shell,
            Run::Computer(_) => Backend::Computer,
        }
    }
}

/// Decodes an exec request and decides where it runs.
pub fn plan(body: &[u8]) -> Result<Plan, ApiError> {
    let req: ExecReq = crate::tools::decode(body)?;
    if req.command.trim().is_empty() {
        return Err(ApiError::InvalidRequest("command must not be empty".into()));
    }
    let cwd = VPath::parse(req.cwd.as_deref().unwrap_or("/"))?;
    let run = match req.backend.resolve(&req.command) {
        Backend::Computer => Run::Computer(computer::Command {
            command: req.command,
            cwd,
            env: req.env,
            stdin: req.stdin.into_bytes(),
            timeout_ms: req
                .timeout_ms
                .unwrap_or(DEFAULT_COMPUTER_TIMEOUT_MS)
                .clamp(1, MAX_COMPUTER_TIMEOUT_MS),
        }),
        Backend::Shell => {
            let mut limits = Limits::default();
            if let Some(timeout) = req.timeout_ms {
                limits.max_wall_ms = timeout.clamp(1, MAX_SHELL_TIMEOUT_MS);
            }
            Run::Shell(ExecRequest {
                command: req.command,
                cwd,
                env: req.env,
                stdin: req.stdin.into_bytes(),
                limits,
            })
        }
    };
    Ok(Plan {
        encoding: req.output_encoding,
        run,
    })
}

/// Where an exec body (perhaps with fields for a job, such as `detach`)
/// would run; `None` when it does not decode (the exec itself then reports
/// why).
pub fn destination(body: &[u8]) -> Option<Backend> {
    #[derive(Deserialize)]
    struct Routing {
        command: String,
        #[serde(default)]
        backend: BackendChoice,
    }
    serde_json::from_slice::<Routing>(body)
        .ok()
        .map(|Routing { backend, command }| backend.resolve(&command))
}

/// Checks that `cwd` is a directory of the workspace.
pub fn check_cwd<S: Sql>(vfs: &Vfs<'_, S>, cwd: &VPath) -> Result<(), ApiError> {
    let (_, dir) = vfs.stat(cwd, true)?;
    if !dir.is_dir() {
        return Err(stead_vfs::VfsError::NotADirectory {
            path: cwd.to_string(),
        }
        .into());
    }
    Ok(())
}

/// Runs `request` in the light shell.
pub fn run_shell<S: Sql>(
    vfs: &Vfs<'_, S>,
    clock: &dyn Clock,
    request: ExecRequest,
    encoding: OutputEncoding,
) -> Result<ExecOutcome, ApiError> {
    check_cwd(vfs, &request.cwd)?;
    let result = stead_shell::exec(vfs, clock, request);
    let status = match result.limit {
        None => ExecStatus::Exited,
        Some(LimitKind::WallTime) => ExecStatus::TimedOut,
        Some(_) => ExecStatus::LimitReached,
    };
    Ok(ExecOutcome {
        backend: Backend::Shell,
        status,
        exit_code: Some(result.exit_code),
        signal: None,
        stdout: Captured::new(result.stdout, encoding),
        stderr: Captured::new(result.stderr, encoding),
        output_encoding: encoding,
        truncated: result.truncated,
        limit: result.limit,
        revision: vfs.revision()?,
        message: None,
        computer: None,
    })
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecStatus {
    /// It ran to its end (whatever its exit code).
    Exited,
    /// Stopped for running past its time.
    TimedOut,
    /// A light-shell limit other than time ended it (`limit` names it).
    LimitReached,
    /// Its job was cancelled.
    Cancelled,
    /// The computer vanished during it; the workspace is unchanged.
    Lost,
}

/// What a command on the computer moved and changed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ComputerReport {
    pub sync: SyncReport,
    /// Paths the command changed, applied to the workspace.
    pub changed: Vec<String>,
    /// Paths both sides changed (the workspace's version kept).
    pub conflicts: Vec<Conflict>,
    /// Changes the workspace refused, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
    /// Paths the container did not report (device files, sockets, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<stead_sync::Skipped>,
}

/// Files and bytes moved each way.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    pub sent: Transfer,
    pub received: Transfer,
}

/// Output of one stream, as the answer carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub bytes: Vec<u8>,
    pub encoding: OutputEncoding,
}

impl Captured {
    pub fn new(bytes: Vec<u8>, encoding: OutputEncoding) -> Self {
        Captured { bytes, encoding }
    }
}

impl Serialize for Captured {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.encoding {
            OutputEncoding::Utf8 => serializer.serialize_str(&String::from_utf8_lossy(&self.bytes)),
            OutputEncoding::Base64 => serializer
                .serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.bytes)),
        }
    }
}

/// The answer of an exec, from either backend.
#[derive(Debug, Clone, Serialize)]
pub struct ExecOutcome {
    pub backend: Backend,
    pub status: ExecStatus,
    /// `null` when the command never finished (lost, cancelled unstarted).
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    pub stdout: Captured,
    pub stderr: Captured,
    /// Present when not the default (`base64`).
    #[serde(skip_serializing_if = "is_utf8")]
    pub output_encoding: OutputEncoding,
    /// Output hit its cap.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The light-shell limit that ended it.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "limit_name")]
    pub limit: Option<LimitKind>,
    /// The workspace revision afterwards.
    pub revision: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What the computer moved and changed.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub computer: Option<ComputerReport>,
}

impl ExecOutcome {
    /// How the job that ran it ends: its exit code, whether it timed out,
    /// and the error that explains a failure other than an exit code.
    pub fn job_outcome(&self) -> stead_scheduler::jobs::Outcome {
        let error = match (self.status, self.limit) {
            (ExecStatus::Lost, _) => Some(
                self.message
                    .clone()
                    .unwrap_or_else(|| "the computer was lost during the command".into()),
            ),
            (_, Some(limit)) => Some(format!("limit reached: {}", limit.name())),
            _ => None,
        };
        stead_scheduler::jobs::Outcome {
            exit_code: self.exit_code.map(i64::from),
            timed_out: self.status == ExecStatus::TimedOut,
            error,
            backend: Some(self.backend),
        }
    }

    /// The JSON answer.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("exec outcomes serialize")
    }
}

fn is_utf8(encoding: &OutputEncoding) -> bool {
    *encoding == OutputEncoding::Utf8
}

fn limit_name<S: Serializer>(limit: &Option<LimitKind>, serializer: S) -> Result<S::Ok, S::Error> {
    match limit {
        Some(limit) => serializer.serialize_str(limit.name()),
        None => serializer.serialize_none(),
    }
}
