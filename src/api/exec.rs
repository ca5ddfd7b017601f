//! `exec`: run a command line, in the light shell or on the computer.
//!
//! `backend` picks where: `"shell"` (the in-isolate interpreter), `"computer"`
//! (a Linux container, see `crate::computer`) or `"auto"`, the default, which
//! uses the light shell when it implements every command the script names
//! and the computer otherwise. Deciding is plain Rust ([`plan`]); running on
//! the computer is the Durable Object's (it needs the network).
//!
//! In the light shell each exec starts with fresh shell state; its writes go
//! straight to the workspace, one transaction per file operation, so they are
//! durable the moment the command returns (and a command that fails halfway
//! keeps what it wrote before failing, as a real shell would). On the
//! computer, a command's changes arrive together in one transaction after it
//! ends.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};
use stead_shell::{Clock, ExecRequest, Limits};
use stead_sql::Sql;
use stead_vfs::{VPath, Vfs};

use super::ApiError;
use crate::computer;

/// Longest wall time a caller may ask for in the light shell.
const MAX_SHELL_TIMEOUT_MS: u64 = 30_000;

/// Default and longest time a command may run on the computer.
const DEFAULT_COMPUTER_TIMEOUT_MS: u64 = 10 * 60_000;
const MAX_COMPUTER_TIMEOUT_MS: u64 = 60 * 60_000;

/// Where a command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Shell,
    Computer,
    #[default]
    Auto,
}

impl Backend {
    /// Whether `command` runs on the computer with this choice. `auto`: when
    /// it names a command the light shell lacks, or when the light shell
    /// cannot parse it (real bash may know syntax it does not).
    fn runs_on_computer(self, command: &str) -> bool {
        match self {
            Backend::Shell => false,
            Backend::Computer => true,
            Backend::Auto => {
                stead_shell::unsupported_commands(command).is_none_or(|missing| !missing.is_empty())
            }
        }
    }
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
    backend: Backend,
}

/// A decoded exec request, with the backend decided.
pub enum Plan {
    Shell(ExecRequest),
    Computer(computer::Command),
}

/// Decodes an exec request and decides where it runs.
pub fn plan(body: &[u8]) -> Result<Plan, ApiError> {
    let req: ExecReq = super::tools::decode(body)?;
    if req.command.trim().is_empty() {
        return Err(ApiError::InvalidRequest("command must not be empty".into()));
    }
    let cwd = VPath::parse(req.cwd.as_deref().unwrap_or("/"))?;
    let on_computer = req.backend.runs_on_computer(&req.command);
    if on_computer {
        return Ok(Plan::Computer(computer::Command {
            command: req.command,
            cwd,
            env: req.env,
            stdin: req.stdin.into_bytes(),
            timeout_ms: req
                .timeout_ms
                .unwrap_or(DEFAULT_COMPUTER_TIMEOUT_MS)
                .clamp(1, MAX_COMPUTER_TIMEOUT_MS),
        }));
    }
    let mut limits = Limits::default();
    if let Some(timeout) = req.timeout_ms {
        limits.max_wall_ms = timeout.clamp(1, MAX_SHELL_TIMEOUT_MS);
    }
    Ok(Plan::Shell(ExecRequest {
        command: req.command,
        cwd,
        env: req.env,
        stdin: req.stdin.into_bytes(),
        limits,
    }))
}

/// Whether an exec body (perhaps with fields for a job, such as `detach`)
/// would run on the computer; `false` when it does not decode (the exec
/// itself then reports why).
pub fn needs_computer(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Routing {
        command: String,
        #[serde(default)]
        backend: Backend,
    }
    match serde_json::from_slice::<Routing>(body) {
        Ok(Routing { backend, command }) => backend.runs_on_computer(&command),
        Err(_) => false,
    }
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
) -> Result<Value, ApiError> {
    check_cwd(vfs, &request.cwd)?;
    let result = stead_shell::exec(vfs, clock, request);
    let mut out = json!({
        "backend": "shell",
        "stdout": String::from_utf8_lossy(&result.stdout),
        "stderr": String::from_utf8_lossy(&result.stderr),
        "exit_code": result.exit_code,
        "revision": vfs.revision()?,
    });
    if result.truncated {
        out["truncated"] = json!(true);
    }
    if let Some(limit) = result.limit {
        out["limit"] = json!(limit.name());
    }
    Ok(out)
}
