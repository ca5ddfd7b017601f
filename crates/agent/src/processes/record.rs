//! A process as the agent keeps it: one row of `processes`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stead_scheduler::SchedError;
use stead_sql::{params, Row, Sql, SqlError};
use stead_sync::process::{ProcessSpec, Restart};

/// Where a process is in its life, as the agent shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Being started (first, or again by its policy).
    Starting,
    Running,
    /// Ended with code 0, or stopped on request.
    Exited,
    /// Ended otherwise, or could not start, and does not start again.
    Failed,
    /// Its computer went away (released or died) while it ran; it starts
    /// again on the next computer if its policy says so.
    Lost,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Running => "running",
            State::Exited => "exited",
            State::Failed => "failed",
            State::Lost => "lost",
        }
    }

    fn parse(text: &str) -> Result<State, SchedError> {
        Ok(match text {
            "starting" => State::Starting,
            "running" => State::Running,
            "exited" => State::Exited,
            "failed" => State::Failed,
            "lost" => State::Lost,
            other => return Err(SchedError::Corrupt(format!("process state {other:?}"))),
        })
    }

    /// Whether it runs on a computer now (as far as the agent knows).
    pub fn is_live(self) -> bool {
        matches!(self, State::Starting | State::Running)
    }
}

fn restart_name(restart: Restart) -> &'static str {
    match restart {
        Restart::Never => "never",
        Restart::OnFailure => "on-failure",
        Restart::Always => "always",
    }
}

fn parse_restart(text: &str) -> Result<Restart, SchedError> {
    Ok(match text {
        "never" => Restart::Never,
        "on-failure" => Restart::OnFailure,
        "always" => Restart::Always,
        other => return Err(SchedError::Corrupt(format!("restart policy {other:?}"))),
    })
}

/// One process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub id: String,
    pub command: String,
    pub cwd: String,
    pub env: BTreeMap<String, String>,
    pub ports: Vec<u16>,
    pub restart: Restart,
    pub keep_awake: bool,
    pub state: State,
    /// The container instance its current run is on.
    pub instance: Option<String>,
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Starts after the first, on any computer.
    pub restarts: u32,
    /// Those before the current computer's.
    pub base_restarts: u32,
    pub stopped: bool,
    pub error: Option<String>,
    /// The job whose log holds its output.
    pub job: i64,
    /// Bytes of the current run's output already in the log.
    pub offset: u64,
    pub created_ms: i64,
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
}

impl Process {
    /// What the computer is asked to run.
    pub fn spec(&self) -> ProcessSpec {
        ProcessSpec {
            id: self.id.clone(),
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            restart: self.restart,
            ports: self.ports.clone(),
            keep_awake: self.keep_awake,
        }
    }

    /// The API's view.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "command": self.command,
            "cwd": self.cwd,
            "env": self.env,
            "ports": self.ports,
            "restart": restart_name(self.restart),
            "keep_awake": self.keep_awake,
            "state": self.state,
            "pid": self.pid,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "restarts": self.restarts,
            "stopped": self.stopped,
            "error": self.error,
            "job": self.job,
            "created_ms": self.created_ms,
            "started_ms": self.started_ms,
            "ended_ms": self.ended_ms,
        })
    }
}

const COLUMNS: &str = "id, command, cwd, env, ports, restart, keep_awake, state, instance, pid, \
    exit_code, signal, restarts, base_restarts, stopped, error, job_id, output_offset, \
    created_ms, started_ms, ended_ms";

fn from_row(row: &Row) -> Result<Process, SchedError> {
    let json = |column: usize| -> Result<Value, SchedError> {
        serde_json::from_str(row.text(column)?).map_err(|e| SchedError::Corrupt(e.to_string()))
    };
    let small = |value: Option<i64>| value.and_then(|v| i32::try_from(v).ok());
    Ok(Process {
        id: row.text(0)?.to_string(),
        command: row.text(1)?.to_string(),
        cwd: row.text(2)?.to_string(),
        env: serde_json::from_value(json(3)?).map_err(|e| SchedError::Corrupt(e.to_string()))?,
        ports: serde_json::from_value(json(4)?).map_err(|e| SchedError::Corrupt(e.to_string()))?,
        restart: parse_restart(row.text(5)?)?,
        keep_awake: row.int(6)? != 0,
        state: State::parse(row.text(7)?)?,
        instance: row.opt_text(8)?.map(str::to_string),
        pid: row.opt_int(9)?.and_then(|v| u32::try_from(v).ok()),
        exit_code: small(row.opt_int(10)?),
        signal: small(row.opt_int(11)?),
        restarts: u32::try_from(row.int(12)?).unwrap_or(0),
        base_restarts: u32::try_from(row.int(13)?).unwrap_or(0),
        stopped: row.int(14)? != 0,
        error: row.opt_text(15)?.map(str::to_string),
        job: row.int(16)?,
        offset: u64::try_from(row.int(17)?).unwrap_or(0),
        created_ms: row.int(18)?,
        started_ms: row.opt_int(19)?,
        ended_ms: row.opt_int(20)?,
    })
}

/// Saves `process` (a new one or a change).
pub fn save(db: &impl Sql, process: &Process) -> Result<(), SqlError> {
    let env = serde_json::to_string(&process.env).expect("maps serialize");
    let ports = serde_json::to_string(&process.ports).expect("lists serialize");
    db.execute(
        &format!(
            "INSERT OR REPLACE INTO processes ({COLUMNS}) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ),
        params![
            process.id.as_str(),
            process.command.as_str(),
            process.cwd.as_str(),
            env.as_str(),
            ports.as_str(),
            restart_name(process.restart),
            process.keep_awake,
            process.state.as_str(),
            process.instance.as_deref(),
            process.pid.map(i64::from),
            process.exit_code.map(i64::from),
            process.signal.map(i64::from),
            i64::from(process.restarts),
            i64::from(process.base_restarts),
            process.stopped,
            process.error.as_deref(),
            process.job,
            i64::try_from(process.offset).unwrap_or(i64::MAX),
            process.created_ms,
            process.started_ms,
            process.ended_ms,
        ],
    )?;
    Ok(())
}

/// Process `id`, if there is one.
pub fn get(db: &impl Sql, id: &str) -> Result<Option<Process>, SchedError> {
    db.query_row(
        &format!("SELECT {COLUMNS} FROM processes WHERE id = ?"),
        params![id],
    )?
    .map(|row| from_row(&row))
    .transpose()
}

/// Whether any process is running: asked after every write (see
/// `crate::processes::serve`), so it reads no record.
pub fn any_running(db: &impl Sql) -> Result<bool, SchedError> {
    let row = db.query_row(
        "SELECT 1 FROM processes WHERE state = ? LIMIT 1",
        params![State::Running.as_str()],
    )?;
    Ok(row.is_some())
}

/// Every process, oldest first.
pub fn all(db: &impl Sql) -> Result<Vec<Process>, SchedError> {
    db.query(
        &format!("SELECT {COLUMNS} FROM processes ORDER BY created_ms, id"),
        params![],
    )?
    .iter()
    .map(from_row)
    .collect()
}

/// Removes process `id`'s record.
pub fn remove(db: &impl Sql, id: &str) -> Result<(), SqlError> {
    db.execute("DELETE FROM processes WHERE id = ?", params![id])?;
    Ok(())
}

/// The jobs of processes that have not ended for good (their logs are
/// still being written).
pub fn open_jobs(db: &impl Sql) -> Result<Vec<i64>, SqlError> {
    db.query(
        "SELECT job_id FROM processes WHERE state IN ('starting', 'running') \
         OR (state = 'lost' AND restart != 'never' AND stopped = 0)",
        params![],
    )?
    .iter()
    .map(|row| row.int(0))
    .collect()
}
