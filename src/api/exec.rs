//! `exec`: run a command line in the light shell, over the workspace.
//!
//! Each exec starts with fresh shell state; its writes go straight to the
//! workspace, one transaction per file operation, so they are durable the
//! moment the command returns (and a command that fails halfway keeps what it
//! wrote before failing, as a real shell would).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};
use stead_shell::{Clock, ExecRequest, Limits};
use stead_sql::Sql;
use stead_vfs::{VPath, Vfs};

use super::ApiError;

/// Longest wall time a caller may ask for.
const MAX_TIMEOUT_MS: u64 = 30_000;

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
}

/// Runs the exec request in `body`.
pub fn exec<S: Sql>(vfs: &Vfs<'_, S>, clock: &dyn Clock, body: &[u8]) -> Result<Value, ApiError> {
    let req: ExecReq = super::tools::decode(body)?;
    if req.command.trim().is_empty() {
        return Err(ApiError::InvalidRequest("command must not be empty".into()));
    }
    let cwd = VPath::parse(req.cwd.as_deref().unwrap_or("/"))?;
    let (_, dir) = vfs.stat(&cwd, true)?;
    if !dir.is_dir() {
        return Err(stead_vfs::VfsError::NotADirectory {
            path: cwd.to_string(),
        }
        .into());
    }
    let mut limits = Limits::default();
    if let Some(timeout) = req.timeout_ms {
        limits.max_wall_ms = timeout.clamp(1, MAX_TIMEOUT_MS);
    }
    let result = stead_shell::exec(
        vfs,
        clock,
        ExecRequest {
            command: req.command,
            cwd,
            env: req.env,
            stdin: req.stdin.into_bytes(),
            limits,
        },
    );
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
