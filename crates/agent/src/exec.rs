//! `exec`: run a command line, in the light shell or on the computer, and
//! the one answer both give ([`ExecOutcome`]).
//!
//! `backend` picks where: `"shell"` (the in-isolate interpreter), `"computer"`
//! (a Linux container, see `crate::computer`) or `"auto"`, the default, which
//! uses the light shell when it implements every command the script names,
//! with every option given to it, and the computer otherwise (see
//! [`stead_shell::light_shell_gaps`]: decided before running, since the
//! light shell writes as it goes and cannot fail over halfway). Deciding is
//! [`plan`]; running is the agent's (`crate::Agent::exec`).
//!
//! In the light shell each exec starts with fresh shell state; its writes go
//! to the workspace as it runs, in one transaction for the exec, so they are
//! durable the moment the command returns (and a command that fails halfway
//! keeps what it wrote before failing, as a real shell would). On the
//! computer, a command's changes arrive together in one transaction after it
//! ends.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use stead_shell::{Clock, ExecRequest, LimitKind, Limits};
use stead_sql::Sql;
use stead_vfs::{VPath, Vfs};

use crate::computer;
use crate::decode::{decode_value, within};
use crate::error::ApiError;
use crate::outcome::{Backend, Captured, ExecOutcome, ExecStatus, OutputEncoding};

/// Longest wall time a caller may ask for in the light shell.
pub const MAX_SHELL_TIMEOUT_MS: u64 = 30_000;

/// Default and longest time a command may run on the computer.
pub const DEFAULT_COMPUTER_TIMEOUT_MS: u64 = 10 * 60_000;
pub const MAX_COMPUTER_TIMEOUT_MS: u64 = 60 * 60_000;

/// Where a command may run, as the caller asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// The light shell inside the agent: milliseconds, the usual
    /// utilities, no processes.
    Shell,
    /// Real bash on the agent's Linux computer (a container).
    Computer,
    /// The light shell when it has every command the script names and
    /// supports the options they are given, else the computer.
    #[default]
    Auto,
}

impl BackendChoice {
    /// Where `command` runs with this choice. `auto`: on the computer when
    /// it names a command the light shell lacks or gives a light-shell
    /// utility an option that utility does not support, or when the light
    /// shell cannot parse it (real bash may know syntax it does not). The
    /// script files it runs (`bash x.sh`, `./x.sh`, `source x.sh`) are read
    /// from `files` at `cwd` and count the same way.
    fn resolve(self, command: &str, cwd: &VPath, files: &dyn stead_shell::Fs) -> Backend {
        let on_computer = match self {
            BackendChoice::Shell => false,
            BackendChoice::Computer => true,
            BackendChoice::Auto => stead_shell::light_shell_gaps(command, files, cwd)
                .is_none_or(|gaps| !gaps.is_empty()),
        };
        if on_computer {
            Backend::Computer
        } else {
            Backend::Shell
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExecReq {
    /// The command line, in bash syntax.
    command: String,
    /// Working directory (default `/`).
    cwd: Option<String>,
    /// Environment variables for the command.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Text on the command's standard input.
    #[serde(default)]
    stdin: String,
    /// Time limit: up to 30 s in the light shell (default 20 s), up to
    /// 60 min on the computer (default 10 min).
    #[schemars(range(min = 1, max = MAX_COMPUTER_TIMEOUT_MS))]
    timeout_ms: Option<u64>,
    /// Where the command runs.
    #[serde(default)]
    backend: BackendChoice,
    /// How stdout and stderr come back: `utf8` text (default) or `base64`.
    #[serde(default)]
    output_encoding: OutputEncoding,
    /// Run as a background job (`POST /exec` only). The route takes it off
    /// before planning (`crate::scheduling::split_detach`); it is a field
    /// so that the type names every field the route takes, and an unknown
    /// field's error lists it. A stored request (a schedule's, a hook's, a
    /// job's) always runs as a job and refuses it. The tool schemas add it
    /// to `bash` only.
    #[serde(default)]
    #[schemars(skip)]
    detach: Option<bool>,
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
    /// Adds `defaults()` to the command's environment where the request
    /// does not set the same variable (the agent's git identity). In the
    /// light shell only a script that names `git` (or cannot be parsed)
    /// asks for them, so other commands cost no settings read; on the
    /// computer any program may run git.
    pub fn with_git_env(
        mut self,
        defaults: impl FnOnce() -> Result<Vec<(String, String)>, ApiError>,
    ) -> Result<Self, ApiError> {
        let env = match &mut self.run {
            Run::Shell(request) => {
                let names_git = stead_shell::commands_used(&request.command)
                    .is_none_or(|names| names.iter().any(|n| n == "git"));
                if !names_git {
                    return Ok(self);
                }
                &mut request.env
            }
            Run::Computer(command) => &mut command.env,
        };
        for (key, value) in defaults()? {
            env.entry(key).or_insert(value);
        }
        Ok(self)
    }

    /// Where it runs.
    pub fn ran(&self) -> Backend {
        match self.run {
            Run::Shell(_) => Backend::Shell,
            Run::Computer(_) => Backend::Computer,
        }
    }
}

/// Decodes an exec request and decides where it runs (`files`: the
/// workspace, for the script files a command runs).
pub fn plan(body: &Value, files: &dyn stead_shell::Fs) -> Result<Plan, ApiError> {
    let req: ExecReq = decode_value(body)?;
    if req.detach.is_some() {
        return Err(ApiError::InvalidRequest(
            "detach: a stored command always runs as a job; leave detach out".into(),
        ));
    }
    if req.command.trim().is_empty() {
        return Err(ApiError::InvalidRequest("command must not be empty".into()));
    }
    let cwd = VPath::parse(req.cwd.as_deref().unwrap_or("/"))?;
    let run = match req.backend.resolve(&req.command, &cwd, files) {
        Backend::Computer => Run::Computer(computer::Command {
            cwd: computer_cwd(cwd)?,
            command: req.command,
            env: req.env,
            stdin: req.stdin.into_bytes(),
            timeout_ms: within(
                "timeout_ms (on the computer)",
                req.timeout_ms.unwrap_or(DEFAULT_COMPUTER_TIMEOUT_MS),
                1,
                MAX_COMPUTER_TIMEOUT_MS,
            )?,
        }),
        Backend::Shell => {
            let mut limits = Limits::default();
            if let Some(timeout) = req.timeout_ms {
                limits.max_wall_ms = within(
                    "timeout_ms (in the light shell)",
                    timeout,
                    1,
                    MAX_SHELL_TIMEOUT_MS,
                )?;
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
pub fn destination(body: &Value, files: &dyn stead_shell::Fs) -> Option<Backend> {
    #[derive(Deserialize)]
    struct Routing {
        command: String,
        cwd: Option<String>,
        #[serde(default)]
        backend: BackendChoice,
    }
    let routing = Routing::deserialize(body).ok()?;
    let cwd = VPath::parse(routing.cwd.as_deref().unwrap_or("/")).ok()?;
    Some(routing.backend.resolve(&routing.command, &cwd, files))
}

/// Checks that `cwd` is a directory of the workspace; its real path.
pub fn check_cwd<S: Sql>(vfs: &Vfs<'_, S>, cwd: &VPath) -> Result<VPath, ApiError> {
    let (real, dir) = vfs.stat(cwd, true)?;
    if !dir.is_dir() {
        return Err(stead_vfs::VfsError::NotADirectory {
            path: cwd.to_string(),
        }
        .into());
    }
    Ok(real)
}

/// Refuses a computer command's `cwd` under one of the computer's system
/// names (`/tmp`, `/etc/app`): the system's directory stands there, not the
/// workspace's, so the command could not run where it was asked to. Decided
/// before anything is sent, the same for every way a command reaches the
/// computer (`backend: computer`, `auto`, jobs, schedules).
fn computer_cwd(cwd: VPath) -> Result<VPath, ApiError> {
    match stead_sync::system_name(cwd.as_str()) {
        None => Ok(cwd),
        Some(name) => Err(ApiError::InvalidRequest(format!(
            "cwd {cwd} is under /{name}, a system directory of the computer (its own, not the \
             workspace's); use a workspace directory such as /src"
        ))),
    }
}

/// Checks that a computer command's (or process's) `cwd` is not under a
/// system name and is a directory of the workspace that does not resolve
/// (through symlinks) to one.
pub fn check_computer_cwd<S: Sql>(vfs: &Vfs<'_, S>, cwd: &VPath) -> Result<(), ApiError> {
    let cwd = &computer_cwd(cwd.clone())?;
    let real = check_cwd(vfs, cwd)?;
    if let Some(name) = stead_sync::system_name(real.as_str()) {
        return Err(ApiError::InvalidRequest(format!(
            "cwd {cwd} resolves to {real}, under /{name}, a system directory of the computer \
             (its own, not the workspace's); use a workspace directory such as /src"
        )));
    }
    Ok(())
}

/// Runs `request` in the light shell; `checkpoint` is the automatic
/// checkpoint taken before it, if any.
pub fn run_shell<S: Sql>(
    vfs: &Vfs<'_, S>,
    clock: &dyn Clock,
    request: ExecRequest,
    encoding: OutputEncoding,
    checkpoint: Option<i64>,
) -> Result<ExecOutcome, ApiError> {
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
        checkpoint,
        message: None,
        computer: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned_over(body: &str, files: &dyn stead_shell::Fs) -> Backend {
        let body: Value = serde_json::from_str(body).unwrap();
        let plan = plan(&body, files).unwrap();
        assert_eq!(destination(&body, files), Some(plan.ran()), "{body}");
        plan.ran()
    }

    fn workspace() -> stead_sql::SqliteDb {
        let db = stead_sql::SqliteDb::memory().unwrap();
        stead_sql::migrate(&db, stead_sql::MIGRATIONS).unwrap();
        db
    }

    fn planned(body: &str) -> Backend {
        planned_over(body, &Vfs::new(&workspace(), 0))
    }

    /// `auto` reads the script files a command runs, from its `cwd`: a bash
    /// or sh script with commands the light shell has stays there, one for
    /// another interpreter or with a missing command goes to the computer.
    #[test]
    fn auto_follows_script_files() {
        let db = workspace();
        let vfs = Vfs::new(&db, 0);
        let options = stead_vfs::WriteOptions {
            mode: Some(0o755),
            create_parents: true,
        };
        for (path, text) in [
            ("/src/build.sh", "#!/bin/bash\nls | sort\n"),
            ("/src/cc.sh", "#!/bin/sh\ncc main.c\n"),
            ("/src/tool", "#!/usr/bin/env python3\nprint(1)\n"),
        ] {
            vfs.write(&VPath::parse(path).unwrap(), text.as_bytes(), options)
                .unwrap();
        }
        for (body, want) in [
            (
                r#"{"command":"bash build.sh","cwd":"/src"}"#,
                Backend::Shell,
            ),
            (r#"{"command":"./build.sh x","cwd":"/src"}"#, Backend::Shell),
            (r#"{"command":"sh /src/build.sh"}"#, Backend::Shell),
            (
                r#"{"command":"source build.sh","cwd":"/src"}"#,
                Backend::Shell,
            ),
            (
                r#"{"command":"bash cc.sh","cwd":"/src"}"#,
                Backend::Computer,
            ),
            (r#"{"command":"./tool","cwd":"/src"}"#, Backend::Computer),
        ] {
            assert_eq!(planned_over(body, &vfs), want, "{body}");
        }
    }

    /// `auto` sends a script to the computer when it names a command the
    /// light shell lacks, or gives a light-shell utility an option that
    /// utility lacks; an explicit backend is taken as asked.
    #[test]
    fn auto_runs_on_the_computer_what_the_light_shell_lacks() {
        for (body, want) in [
            (r#"{"command":"ls -la src | sort -r"}"#, Backend::Shell),
            (r#"{"command":"python3 -V"}"#, Backend::Computer),
            (
                r#"{"command":"cd src && ls --time-style=long-iso -l"}"#,
                Backend::Computer,
            ),
            (
                r#"{"command":"for f in *; do grep --line-buffered x \"$f\"; done"}"#,
                Backend::Computer,
            ),
            (r#"{"command":"if then"}"#, Backend::Computer),
            (
                r#"{"command":"ls --time-style=long-iso","backend":"shell"}"#,
                Backend::Shell,
            ),
            (
                r#"{"command":"ls","backend":"computer"}"#,
                Backend::Computer,
            ),
        ] {
            assert_eq!(planned(body), want, "{body}");
        }
    }
}
