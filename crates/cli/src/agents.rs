//! `stead agents ls|create|info|rm`.

use clap::Subcommand;
use serde_json::Value;

use crate::client::{agent_path, encode_component};
use crate::error::{CliError, Failure, Result};
use crate::output;
use crate::Context;

#[derive(Subcommand)]
pub enum AgentsCommand {
    /// The deployment's agents, newest first, with their usage.
    Ls {
        /// Agents per page (1-100).
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Every page, not only the first.
        #[arg(long)]
        all: bool,
    },
    /// Create an agent (nothing changes if it exists).
    Create { id: String },
    /// An agent's revision and usage (default: the current agent).
    Info { id: Option<String> },
    /// Delete an agent and all its files, checkpoints and jobs.
    Rm {
        id: String,
        /// Confirms the deletion: it cannot be undone.
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(ctx: &Context, command: AgentsCommand) -> Result<i32> {
    let api = ctx.api()?;
    match command {
        AgentsCommand::Ls { limit, all } => {
            let mut cursor: Option<String> = None;
            let mut rows = Vec::new();
            loop {
                let mut path = format!("/agents?limit={limit}");
                if let Some(cursor) = &cursor {
                    path.push_str(&format!("&cursor={}", encode_component(cursor)));
                }
                let page = api.json("GET", &path, None)?;
                let agents = page["agents"].as_array().cloned().unwrap_or_default();
                match ctx.json {
                    true => agents.iter().for_each(output::json),
                    false => rows.extend(agents),
                }
                cursor = page["next_cursor"].as_str().map(str::to_string);
                if !all || cursor.is_none() {
                    break;
                }
            }
            if !ctx.json {
                print_table(&rows);
                if cursor.is_some() {
                    eprintln!("(more agents: `stead agents ls --all`)");
                }
            }
            Ok(0)
        }
        AgentsCommand::Create { id } => {
            let answer = api.call("PUT", &agent_path(&id), None)?;
            let text = match answer.status {
                201 => format!("created {id}"),
                _ => format!("{id} exists already"),
            };
            output::done(ctx.json, &answer.body, &text)
        }
        AgentsCommand::Info { id } => {
            let id = match &id {
                Some(id) => id.as_str(),
                None => ctx.agent()?,
            };
            let info = api.json("GET", &agent_path(id), None)?;
            if ctx.json {
                output::json(&info);
                return Ok(0);
            }
            let usage = &info["usage"];
            output::line(&format!("agent        {id}"));
            output::line(&format!("revision     {}", usage["revision"]));
            output::line(&format!(
                "files        {} files, {} directories, {} symlinks",
                usage["files"], usage["directories"], usage["symlinks"]
            ));
            output::line(&format!(
                "bytes        {} in files, {} stored",
                output::size(usage["bytes"].as_u64().unwrap_or(0)),
                output::size(usage["stored_bytes"].as_u64().unwrap_or(0))
            ));
            Ok(0)
        }
        AgentsCommand::Rm { id, yes } => {
            if !yes {
                return Err(CliError::new(
                    Failure::Invalid,
                    format!("deleting {id} removes all its files, checkpoints and jobs for good: run `stead agents rm {id} --yes`"),
                ));
            }
            let answer = api.json("DELETE", &agent_path(&id), None)?;
            output::done(ctx.json, &answer, &format!("deleted {id}"))
        }
    }
}

fn print_table(rows: &[Value]) {
    output::line(&format!(
        "{:<24} {:<19} {:>8} {:>10}",
        "AGENT", "CREATED (UTC)", "FILES", "BYTES"
    ));
    for row in rows {
        let usage = &row["usage"];
        let files = usage["files"]
            .as_u64()
            .map_or("-".to_string(), |n| n.to_string());
        let bytes = usage["bytes"]
            .as_u64()
            .map_or("-".to_string(), output::size);
        output::line(&format!(
            "{:<24} {:<19} {:>8} {:>10}",
            row["id"].as_str().unwrap_or(""),
            output::time(row["created_ms"].as_i64().unwrap_or(0)),
            files,
            bytes
        ));
    }
    if rows.is_empty() {
        output::line("(no agents yet: `stead agents create ID`)");
    }
}
