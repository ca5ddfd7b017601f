//! `stead exec`, `jobs ls` and `logs [-f]`: commands run as durable jobs,
//! and their output followed live over the agent's WebSocket.
//!
//! Following resumes after a dropped connection: each output piece carries
//! its byte offset, so a new socket subscribes from the offset after the
//! last piece printed (README, "WebSocket"), and a piece at or before one
//! already printed is skipped. Nothing is lost and nothing is printed twice.

use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::client::{agent_path, Api, Received};
use crate::error::{CliError, Failure, Result};
use crate::output;
use crate::Context;

/// Exit status of a job that ran out of time without an exit code, as
/// timeout(1) has it.
const TIMED_OUT_EXIT: i32 = 124;

/// How long following keeps trying to reconnect before it gives up.
const RECONNECT_FOR: Duration = Duration::from_secs(60);

#[derive(Args)]
pub struct ExecArgs {
    /// Run on the Linux computer (real bash in a container).
    #[arg(long, group = "backend")]
    computer: bool,
    /// Run in the light shell, inside the agent.
    #[arg(long, group = "backend")]
    light: bool,
    /// Let the agent choose (the default): the computer when the script
    /// needs a command the light shell lacks.
    #[arg(long, group = "backend")]
    auto: bool,
    /// The working directory, a workspace path (default `/`).
    #[arg(long)]
    cwd: Option<String>,
    /// Queue it as a job, print the job's id and return at once.
    #[arg(long)]
    detach: bool,
    /// Send standard input to the command.
    #[arg(long)]
    stdin: bool,
    /// Stop the command after this many milliseconds.
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// The command: its words are joined with spaces and run by bash, as
    /// ssh runs them.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

impl ExecArgs {
    fn backend(&self) -> &'static str {
        match (self.computer, self.light) {
            (true, _) => "computer",
            (_, true) => "shell",
            _ => "auto",
        }
    }
}

pub fn exec(ctx: &Context, args: ExecArgs) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let mut body = json!({ "command": args.command.join(" "), "backend": args.backend() });
    if let Some(cwd) = &args.cwd {
        body["cwd"] = json!(cwd);
    }
    if let Some(timeout) = args.timeout_ms {
        body["timeout_ms"] = json!(timeout);
    }
    if args.stdin {
        let mut input = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut input)
            .map_err(|e| CliError::local("<stdin>".as_ref(), e))?;
        body["stdin"] = json!(String::from_utf8_lossy(&input));
    }
    // `--json` without `--detach`: one answer, the whole result.
    if ctx.json && !args.detach {
        let answer = api.tool(agent, "exec", &body)?;
        output::json(&answer);
        return Ok(answer["exit_code"].as_i64().map_or(1, |c| c as i32));
    }
    body["detach"] = json!(true);
    let answer = api.tool(agent, "exec", &body)?;
    let job = answer["job"]["id"].as_i64().ok_or_else(|| {
        CliError::new(
            Failure::Server,
            format!("the exec answer names no job: {answer}"),
        )
    })?;
    if args.detach {
        return output::done(
            ctx.json,
            &answer,
            &format!("job {job} queued: `stead logs -f {job}` follows it"),
        );
    }
    let end = follow(api, agent, job, 0)?;
    Ok(end.exit_status(job))
}

#[derive(Subcommand)]
pub enum JobsCommand {
    /// The newest jobs.
    Ls {
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
}

pub fn jobs(ctx: &Context, command: JobsCommand) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    match command {
        JobsCommand::Ls { limit } => {
            let page = api.json(
                "GET",
                &format!("{}/jobs?limit={limit}", agent_path(agent)),
                None,
            )?;
            let jobs = page["jobs"].as_array().cloned().unwrap_or_default();
            if ctx.json {
                jobs.iter().for_each(output::json);
                return Ok(0);
            }
            output::line(&format!(
                "{:>6} {:<10} {:>4} {:<8} {:<19} COMMAND",
                "JOB", "STATE", "EXIT", "BACKEND", "CREATED (UTC)"
            ));
            for job in &jobs {
                let exit = job["exit_code"]
                    .as_i64()
                    .map_or("-".to_string(), |c| c.to_string());
                let command: String = job["command"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(60)
                    .collect();
                output::line(&format!(
                    "{:>6} {:<10} {:>4} {:<8} {:<19} {}",
                    job["id"],
                    job["state"].as_str().unwrap_or(""),
                    exit,
                    job["backend"].as_str().unwrap_or(""),
                    output::time(job["created_ms"].as_i64().unwrap_or(0)),
                    command.replace('\n', " ")
                ));
            }
            Ok(0)
        }
    }
}

pub fn logs(ctx: &Context, job: i64, follow_live: bool) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    if follow_live {
        let end = follow(api, agent, job, 0)?;
        return Ok(end.exit_status(job));
    }
    let mut from = 0;
    loop {
        let page = api.json(
            "GET",
            &format!("{}/jobs/{job}/output?from={from}", agent_path(agent)),
            None,
        )?;
        let pieces = page["output"].as_array().cloned().unwrap_or_default();
        for piece in &pieces {
            write_piece(piece);
        }
        let next = page["next"].as_i64().unwrap_or(from);
        if pieces.is_empty() || page["done"] == json!(true) || next <= from {
            return Ok(0);
        }
        from = next;
    }
}

fn write_piece(piece: &Value) {
    let data = piece["data"].as_str().unwrap_or("").as_bytes();
    match piece["stream"].as_str() {
        Some("stderr") => output::error_bytes(data),
        _ => output::bytes(data),
    }
}

/// How a followed job ended.
pub struct JobEnd {
    state: String,
    exit_code: Option<i64>,
    error: Option<String>,
}

impl JobEnd {
    /// The status stead exits with: the command's, else 124 for a job that
    /// timed out and 1 for one that ended otherwise without an exit code.
    fn exit_status(&self, job: i64) -> i32 {
        match (self.exit_code, self.state.as_str()) {
            (Some(code), _) => code as i32,
            (None, "succeeded") => 0,
            (None, state) => {
                let why = self.error.as_deref().unwrap_or("no exit code");
                eprintln!("stead: job {job} ended {state}: {why}");
                match state {
                    "timed_out" => TIMED_OUT_EXIT,
                    _ => Failure::Failed.exit_code(),
                }
            }
        }
    }
}

/// Prints job `job`'s output from byte `from` as it comes, over the
/// WebSocket, reconnecting when the connection drops, until the job ends.
pub fn follow(api: &Api, agent: &str, job: i64, from: i64) -> Result<JobEnd> {
    // The offset to resume from, and the offset of the last piece printed.
    let mut next = from;
    let mut last_printed: Option<i64> = None;
    let mut lost_since: Option<Instant> = None;
    let mut backoff = Duration::from_millis(200);
    loop {
        let mut socket = match api.socket(agent) {
            Ok(socket) => socket,
            Err(error) if error.failure == Failure::Network => {
                let since = *lost_since.get_or_insert_with(Instant::now);
                if since.elapsed() > RECONNECT_FOR {
                    return Err(CliError::new(
                        Failure::Network,
                        format!("{error}; follow on with `stead logs -f {job}`"),
                    ));
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
            Err(error) => return Err(error),
        };
        socket.send(&json!({ "type": "subscribe_job", "job": job, "from": next }))?;
        let mut idle = false;
        let why = loop {
            let message = match socket.recv() {
                Received::Message(message) => message,
                Received::Idle if !idle => {
                    // A keepalive; a second silent wait means the link is dead.
                    idle = true;
                    socket.send(&json!({ "type": "ping" }))?;
                    continue;
                }
                Received::Idle => break "the connection went silent".to_string(),
                Received::Closed(why) => break why,
            };
            idle = false;
            lost_since = None;
            backoff = Duration::from_millis(200);
            match message["type"].as_str() {
                Some("output") if message["job"] == json!(job) => {
                    let offset = message["offset"].as_i64().unwrap_or(0);
                    if last_printed.is_some_and(|last| offset <= last) {
                        continue;
                    }
                    write_piece(&message);
                    last_printed = Some(offset);
                    let length = message["data"].as_str().map_or(0, str::len) as i64;
                    next = next.max(offset + length);
                }
                Some("job_end") if message["job"] == json!(job) => {
                    return Ok(JobEnd {
                        state: message["state"].as_str().unwrap_or("").to_string(),
                        exit_code: message["exit_code"].as_i64(),
                        error: message["error"].as_str().map(str::to_string),
                    });
                }
                Some("error") => {
                    let error = &message["error"];
                    let code = error["code"].as_str().unwrap_or("");
                    let status = match code {
                        "JOB_NOT_FOUND" => 404,
                        "OUTPUT_PRUNED" => 410,
                        _ => 400,
                    };
                    let body = json!({ "error": error }).to_string();
                    return Err(crate::client::error_of(status, body.as_bytes()));
                }
                _ => {}
            }
        };
        eprintln!("stead: connection lost ({why}); resuming job {job} from byte {next}");
        lost_since.get_or_insert_with(Instant::now);
    }
}
