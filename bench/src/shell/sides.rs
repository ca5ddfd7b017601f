//! The three shells a script runs through: stead's over HTTP, just-bash in
//! Node, and GNU bash as a local process. Each runs a script `runs` times and
//! returns every time with the last run's output, or why it could not.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use stead_harness::Reply;

use crate::agent::{check, Agent};
use crate::stats::{millis, timed};

use super::scripts::{DataSet, Script};

/// What a side's runs of one script gave.
pub struct Outcome {
    pub times: Vec<Duration>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn best(&self) -> Duration {
        self.times.iter().copied().min().unwrap_or_default()
    }
}

/// An outcome, or why there is none (the side failed, lacks a feature, or
/// the script exited non-zero).
pub type Ran = Result<Outcome, String>;

/// The first line of `text`, at most `max` characters.
pub fn first_line(text: &str, max: usize) -> String {
    text.lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(max)
        .collect()
}

/// Every script here exits 0 when it works; anything else is a failure.
fn exit_error(exit_code: i64, stderr: &str) -> String {
    format!("exit {exit_code}: {}", first_line(stderr, 200))
}

/// What one run gave: its time, and stdout and stderr or why it failed.
type OneRun = (Duration, Result<(String, String), String>);

/// How many runs to make: `max` at most, and no further run once `budget`
/// has been spent (slow scripts on slow sides run fewer times).
#[derive(Clone, Copy)]
pub struct Runs {
    pub max: usize,
    pub budget: Duration,
}

/// Collects runs, stopping at the first failure.
fn repeat(runs: Runs, mut run: impl FnMut() -> OneRun) -> Ran {
    let mut outcome = Outcome {
        times: Vec::with_capacity(runs.max),
        stdout: String::new(),
        stderr: String::new(),
    };
    while outcome.times.len() < runs.max && outcome.times.iter().sum::<Duration>() < runs.budget {
        let (elapsed, result) = run();
        (outcome.stdout, outcome.stderr) = result?;
        outcome.times.push(elapsed);
    }
    Ok(outcome)
}

/// GNU bash and coreutils: `bash -c <script>` in `dir`, process spawn
/// included, in the C locale.
pub fn gnu(dir: &Path, script: &Script, runs: Runs) -> Ran {
    let mut bash = Command::new("bash");
    bash.arg("-c")
        .arg(&script.command)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    repeat(runs, || {
        let (elapsed, output) = timed(|| bash.output());
        (elapsed, gnu_result(output))
    })
}

fn gnu_result(output: std::io::Result<Output>) -> Result<(String, String), String> {
    let output = output.map_err(|e| format!("cannot run bash: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    match output.status.code() {
        Some(0) => Ok((stdout, stderr)),
        code => Err(exit_error(code.map_or(-1, i64::from), &stderr)),
    }
}

/// just-bash, through `bench/just-bash/run.mjs` on Node.
pub struct JustBash {
    node: PathBuf,
    runner: PathBuf,
    /// Why just-bash cannot run, found once.
    broken: Option<String>,
}

impl JustBash {
    /// Finds Node (the project's Node 22 if installed, else `node`) and
    /// installs just-bash with `npm ci` if it is missing.
    pub fn new() -> JustBash {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("just-bash");
        let project_node = stead_harness::repo_root().join("node_modules/.bin/node");
        let node = if project_node.exists() {
            project_node
        } else {
            PathBuf::from("node")
        };
        let broken = if folder.join("node_modules/just-bash").exists() {
            None
        } else {
            npm_ci(&folder).err()
        };
        JustBash {
            node,
            runner: folder.join("run.mjs"),
            broken,
        }
    }

    /// "Node v22.x, just-bash 3.4.2", for the setup.
    pub fn versions(&self) -> Value {
        let node = Command::new(&self.node)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|e| format!("unknown ({e})"));
        let package = self
            .runner
            .with_file_name("node_modules/just-bash/package.json");
        let just_bash = std::fs::read(package)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .map(|package| package["version"].clone())
            .unwrap_or(Value::Null);
        json!({ "node": node, "just_bash": just_bash })
    }

    /// Loads `dir` into just-bash's in-memory filesystem and runs the script
    /// there; only the runs are timed (inside Node).
    pub fn run(&self, dir: &Path, script: &Script, runs: Runs) -> Ran {
        if let Some(error) = &self.broken {
            return Err(error.clone());
        }
        let request = json!({
            "dir": dir,
            "script": script.command,
            "runs": runs.max,
            "budget_ms": millis(runs.budget),
        });
        let mut child = Command::new(&self.node)
            .arg(&self.runner)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.node.display()))?;
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(request.to_string().as_bytes())
            .map_err(|e| format!("writing to the just-bash runner: {e}"))?;
        let output = child
            .wait_with_output()
            .map_err(|e| format!("just-bash runner: {e}"))?;
        let answer: Value = serde_json::from_slice(&output.stdout).map_err(|_| {
            format!(
                "just-bash runner failed: {}",
                first_line(&String::from_utf8_lossy(&output.stderr), 300)
            )
        })?;
        if let Some(error) = answer["error"].as_str() {
            return Err(format!("just-bash threw: {}", first_line(error, 300)));
        }
        let text = |key: &str| answer[key].as_str().unwrap_or("").to_string();
        let exit_code = answer["exit_code"].as_i64().unwrap_or(-1);
        if exit_code != 0 {
            return Err(exit_error(exit_code, &text("stderr")));
        }
        let times = answer["times_ms"]
            .as_array()
            .map(|times| {
                times
                    .iter()
                    .filter_map(Value::as_f64)
                    .map(|ms| Duration::from_secs_f64(ms / 1e3))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Outcome {
            times,
            stdout: text("stdout"),
            stderr: text("stderr"),
        })
    }
}

fn npm_ci(folder: &Path) -> Result<(), String> {
    eprintln!(
        "shell: installing just-bash (npm ci in {})",
        folder.display()
    );
    // npm runs on the first `node` on PATH: the project's Node 22 if there.
    let bin = stead_harness::repo_root().join("node_modules/.bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(folder)
        .env("PATH", path)
        .output()
        .map_err(|e| format!("cannot run npm: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "npm ci for just-bash failed: {}",
            first_line(&String::from_utf8_lossy(&output.stderr), 300)
        ))
    }
}

/// Files this large are streamed with `PUT /files`, smaller ones go through
/// the JSON `write` tool.
const STREAM_FROM: usize = 1 << 20;

/// stead's shell: `POST /agents/{id}/exec`, the request timed, with the
/// data uploaded into the agent first.
pub struct Stead {
    agent: Result<Agent, String>,
    /// Where the data sets go in the workspace.
    root: &'static str,
}

impl Stead {
    pub fn new(agent: Result<Agent, String>) -> Stead {
        Stead {
            agent,
            root: "/shell",
        }
    }

    pub fn agent(&self) -> Option<&Agent> {
        self.agent.as_ref().ok()
    }

    pub fn into_agent(self) -> Option<Agent> {
        self.agent.ok()
    }

    /// The data set's folder in the workspace: the scripts' cwd.
    pub fn folder(&self, data: &DataSet) -> String {
        format!("{}/{}", self.root, data.name)
    }

    /// Uploads a data set into its folder (not timed).
    pub fn upload(&self, data: &DataSet) -> Result<(), String> {
        let agent = self.agent.as_ref().map_err(Clone::clone)?;
        let folder = self.folder(data);
        let mkdir = json!({ "path": folder, "parents": true });
        check(&agent.send(&agent.tool_call("mkdir", &mkdir)), "mkdir")?;
        for file in &data.files {
            let path = format!("{folder}/{}", file.path);
            if file.content.len() >= STREAM_FROM {
                let content = std::io::Cursor::new(file.content.clone().into_bytes());
                agent.try_upload(&path, content)?;
            } else {
                let write = json!({ "path": path, "content": file.content });
                let reply = agent.send(&agent.tool_call("write", &write));
                check(&reply, &format!("write {path}"))?;
            }
        }
        Ok(())
    }

    /// Runs the script in its data set's folder; `upload` must have
    /// succeeded.
    pub fn run(&self, data: &DataSet, script: &Script, runs: Runs) -> Ran {
        let agent = self.agent.as_ref().map_err(Clone::clone)?;
        let call = agent.tool_call(
            "exec",
            &json!({ "command": script.command, "cwd": self.folder(data) }),
        );
        repeat(runs, || {
            let (elapsed, reply) = timed(|| agent.send(&call));
            (elapsed, exec_result(&reply))
        })
    }
}

fn exec_result(reply: &Reply) -> Result<(String, String), String> {
    check(reply, "exec")?;
    let answer: Value =
        serde_json::from_slice(&reply.body).map_err(|e| format!("exec answered no JSON: {e}"))?;
    let text = |key: &str| answer[key].as_str().unwrap_or("").to_string();
    if let Some(limit) = answer["limit"].as_str() {
        return Err(format!("limit {limit} exceeded"));
    }
    if answer["truncated"] == true {
        return Err("output truncated".into());
    }
    match answer["exit_code"].as_i64() {
        Some(0) => Ok((text("stdout"), text("stderr"))),
        code => Err(exit_error(code.unwrap_or(-1), &text("stderr"))),
    }
}
