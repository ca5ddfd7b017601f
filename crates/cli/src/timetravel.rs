//! `stead checkpoint(s) diff restore undo fork`.

use serde_json::{json, Value};

use crate::client::{agent_path, workspace_path};
use crate::error::{CliError, Failure, Result};
use crate::output;
use crate::Context;

pub fn checkpoint(ctx: &Context, name: Option<String>, note: Option<String>) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let answer = api.json(
        "POST",
        &format!("{}/checkpoints", agent_path(agent)),
        Some(&json!({ "name": name, "note": note })),
    )?;
    let checkpoint = &answer["checkpoint"];
    let label = match checkpoint["name"].as_str() {
        Some(name) => format!("{} ({name})", checkpoint["id"]),
        None => checkpoint["id"].to_string(),
    };
    output::done(
        ctx.json,
        &answer,
        &format!("checkpoint {label} at revision {}", checkpoint["revision"]),
    )
}

/// One page of checkpoints, newest first.
fn page(ctx: &Context, limit: u32, before: Option<i64>) -> Result<Value> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let mut path = format!("{}/checkpoints?limit={limit}", agent_path(agent));
    if let Some(before) = before {
        path.push_str(&format!("&before={before}"));
    }
    api.json("GET", &path, None)
}

pub fn checkpoints(ctx: &Context, limit: u32) -> Result<i32> {
    let answer = page(ctx, limit, None)?;
    let list = answer["checkpoints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if ctx.json {
        list.iter().for_each(output::json);
        return Ok(0);
    }
    output::line(&format!(
        "{:>6} {:<19} {:>8} {:<9} NAME / OPERATION",
        "ID", "CREATED (UTC)", "REVISION", "KIND"
    ));
    for checkpoint in &list {
        let what = checkpoint["name"]
            .as_str()
            .map(str::to_string)
            .or_else(|| {
                checkpoint["operation"]
                    .as_object()
                    .map(|_| checkpoint["operation"].to_string())
                    .or_else(|| checkpoint["operation"].as_str().map(str::to_string))
            })
            .unwrap_or_default();
        let kind = match checkpoint["whole"].as_bool() {
            Some(true) => checkpoint["kind"].as_str().unwrap_or("").to_string(),
            _ => format!("{} (paths)", checkpoint["kind"].as_str().unwrap_or("")),
        };
        output::line(&format!(
            "{:>6} {:<19} {:>8} {:<9} {what}",
            checkpoint["id"],
            output::time(checkpoint["created_ms"].as_i64().unwrap_or(0)),
            checkpoint["revision"],
            kind,
        ));
    }
    Ok(0)
}

/// The newest checkpoint that pins the whole workspace: what `diff` with
/// no arguments compares against.
fn newest_whole(ctx: &Context) -> Result<String> {
    let mut before = None;
    loop {
        let answer = page(ctx, 100, before)?;
        let list = answer["checkpoints"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let Some(found) = list.iter().find(|c| c["whole"] == json!(true)) {
            return Ok(found["id"].to_string());
        }
        match answer["next_before"].as_i64() {
            Some(next) => before = Some(next),
            None => {
                return Err(CliError::new(
                    Failure::NotFound,
                    "no checkpoint of the whole workspace to compare with: take one with `stead checkpoint`, or name two points",
                ))
            }
        }
    }
}

pub fn diff(
    ctx: &Context,
    from: Option<String>,
    to: Option<String>,
    paths: Vec<String>,
) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let from = match from {
        Some(from) => from,
        None => newest_whole(ctx)?,
    };
    let to = to.unwrap_or_else(|| "now".to_string());
    let colour = !ctx.json && output::is_terminal();
    let mut cursor: Option<String> = None;
    let mut differing = 0;
    loop {
        let mut body = json!({ "from": from, "to": to, "text": true,
                               "paths": paths.iter().map(|p| workspace_path(p)).collect::<Vec<_>>() });
        if let Some(cursor) = &cursor {
            body["cursor"] = json!(cursor);
        }
        let answer = api.json("POST", &format!("{}/diff", agent_path(agent)), Some(&body))?;
        if ctx.json {
            output::json(&answer);
        } else {
            for entry in answer["entries"].as_array().into_iter().flatten() {
                differing += 1;
                print_entry(entry, colour);
            }
        }
        cursor = answer["next_cursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    if !ctx.json && differing == 0 {
        eprintln!("no differences between {from} and {to}");
    }
    Ok(0)
}

fn print_entry(entry: &Value, colour: bool) {
    let path = entry["path"].as_str().unwrap_or("");
    let change = entry["change"].as_str().unwrap_or("");
    let patch = match entry["text"]["kind"].as_str() {
        Some("unified") => entry["text"]["patch"].as_str(),
        _ => None,
    };
    match patch {
        Some(patch) => {
            for line in patch.lines() {
                let paint = match line.as_bytes().first() {
                    _ if !colour => None,
                    Some(b'+') if line.starts_with("+++") => Some("1"),
                    Some(b'-') if line.starts_with("---") => Some("1"),
                    Some(b'+') => Some("32"),
                    Some(b'-') => Some("31"),
                    Some(b'@') => Some("36"),
                    _ => None,
                };
                match paint {
                    Some(code) => output::line(&format!("\x1b[{code}m{line}\x1b[0m")),
                    None => output::line(line),
                }
            }
        }
        None => {
            let detail = match (
                change,
                entry["from"].as_str(),
                entry["text"]["kind"].as_str(),
            ) {
                ("moved", Some(from), _) => format!(" (from {from})"),
                (_, _, Some("binary")) => " (binary files differ)".to_string(),
                (_, _, Some("too_large")) => " (too large for a text diff)".to_string(),
                _ => String::new(),
            };
            output::line(&format!("{change} {path}{detail}"));
        }
    }
}

pub fn restore(ctx: &Context, checkpoint: &str, paths: Vec<String>) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let mut body = json!({ "checkpoint": checkpoint });
    if !paths.is_empty() {
        body["paths"] = json!(paths.iter().map(|p| workspace_path(p)).collect::<Vec<_>>());
    }
    let answer = api.json(
        "POST",
        &format!("{}/restore", agent_path(agent)),
        Some(&body),
    )?;
    output::done(
        ctx.json,
        &answer,
        &format!("restored checkpoint {checkpoint}"),
    )
}

pub fn undo(ctx: &Context) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let answer = api.json(
        "POST",
        &format!("{}/undo", agent_path(agent)),
        Some(&json!({})),
    )?;
    let operation = &answer["undone"]["checkpoint"]["operation"];
    let what = match operation {
        Value::Null => "the last change".to_string(),
        other => other.as_str().map_or(other.to_string(), str::to_string),
    };
    output::done(ctx.json, &answer, &format!("undid {what}"))
}

pub fn fork(ctx: &Context, new_agent: &str, checkpoint: Option<String>) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let body = json!({ "to": new_agent, "checkpoint": checkpoint });
    let answer = api.json("POST", &format!("{}/fork", agent_path(agent)), Some(&body))?;
    output::done(
        ctx.json,
        &answer,
        &format!("forked {agent} into {new_agent}"),
    )
}
