//! `stead ls cat put get rm mv`: single files, streamed both ways.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::client::{agent_path, encode_path, error_of, workspace_path};
use crate::error::{CliError, Failure, Result};
use crate::output;
use crate::Context;

/// Entries asked for per `ls` page.
const LS_PAGE: u32 = 1000;

pub fn ls(ctx: &Context, path: &str, long: bool) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let mut cursor: Option<String> = None;
    loop {
        let mut body = json!({ "path": workspace_path(path), "limit": LS_PAGE });
        if let Some(cursor) = &cursor {
            body["cursor"] = json!(cursor);
        }
        let page = api.tool(agent, "ls", &body)?;
        for entry in page["entries"].as_array().into_iter().flatten() {
            match (ctx.json, long) {
                (true, _) => output::json(entry),
                (false, true) => output::line(&long_line(entry)),
                (false, false) => output::line(&short_name(entry)),
            }
        }
        cursor = page["next_cursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            return Ok(0);
        }
    }
}

fn short_name(entry: &Value) -> String {
    let name = entry["name"].as_str().unwrap_or("");
    match entry["type"].as_str() {
        Some("dir") | Some("directory") => format!("{name}/"),
        _ => name.to_string(),
    }
}

fn long_line(entry: &Value) -> String {
    let kind = match entry["type"].as_str() {
        Some("dir") | Some("directory") => 'd',
        Some("symlink") => 'l',
        _ => '-',
    };
    let mut line = format!(
        "{kind} {:>4} {:>10} {} {}",
        entry["mode"].as_str().unwrap_or("?"),
        entry["size"].as_u64().unwrap_or(0),
        output::time(entry["mtime"].as_i64().unwrap_or(0)),
        short_name(entry)
    );
    if let Some(target) = entry["target"].as_str() {
        line.push_str(&format!(" -> {target}"));
    }
    line
}

/// Opens a download of `remote`: the response, its status checked.
fn download(ctx: &Context, remote: &str) -> Result<ureq::http::Response<ureq::Body>> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let path = format!("{}/files{}", agent_path(agent), encode_path(remote));
    let response = api.send("GET", &path, &[], ureq::SendBody::none())?;
    let status = response.status().as_u16();
    if status != 200 {
        let body = crate::client::read_body(response)?;
        return Err(error_of(status, &body));
    }
    Ok(response)
}

fn broken(error: std::io::Error) -> CliError {
    CliError::new(
        Failure::Network,
        format!("the download broke off ({error}); run the command again"),
    )
}

pub fn cat(ctx: &Context, remote: &str) -> Result<i32> {
    let mut reader = download(ctx, remote)?.into_body().into_reader();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        match reader.read(&mut buffer).map_err(broken)? {
            0 => return Ok(0),
            n => output::bytes(&buffer[..n]),
        }
    }
}

pub fn put(ctx: &Context, local: &Path, remote: &str) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let stdin = local == Path::new("-");
    let (body, mode, length): (Box<dyn Read + Send + Sync>, Option<u32>, Option<u64>) = match stdin
    {
        true => (Box::new(std::io::stdin()), None, None),
        false => {
            let meta = fs::metadata(local).map_err(|e| CliError::local(local, e))?;
            if meta.is_dir() {
                return Err(CliError::new(
                    Failure::Local,
                    format!("{} is a directory: `put` sends one file", local.display()),
                ));
            }
            let file = fs::File::open(local).map_err(|e| CliError::local(local, e))?;
            (
                Box::new(file),
                Some(meta.permissions().mode() & 0o7777),
                Some(meta.len()),
            )
        }
    };
    let mut path = format!("{}/files{}", agent_path(agent), encode_path(remote));
    if let Some(mode) = mode {
        path.push_str(&format!("?mode={mode:o}"));
    }
    let reader = std::io::BufReader::with_capacity(1 << 20, body);
    let send = ureq::SendBody::from_owned_reader(reader);
    // A file's length is declared, as curl declares it; standard input
    // goes chunked.
    let length = length.map(|n| n.to_string());
    let headers = match &length {
        Some(length) => [("content-length", length.as_str())],
        None => [("content-type", "application/octet-stream")],
    };
    let response = api.send("PUT", &path, &headers, send)?;
    let status = response.status().as_u16();
    let bytes = crate::client::read_body(response)?;
    if !(200..300).contains(&status) {
        return Err(error_of(status, &bytes));
    }
    let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let size = answer["size"].as_u64().unwrap_or(0);
    output::done(
        ctx.json,
        &answer,
        &format!(
            "{} → {} ({})",
            local.display(),
            workspace_path(remote),
            output::size(size)
        ),
    )
}

pub fn get(ctx: &Context, remote: &str, local: &Path) -> Result<i32> {
    if local == Path::new("-") {
        return cat(ctx, remote);
    }
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let stat = api.tool(agent, "stat", &json!({ "path": workspace_path(remote) }))?;
    // A folder given as the destination receives the file under its name.
    let target: PathBuf = match local.is_dir() {
        true => {
            let name = remote.rsplit('/').find(|s| !s.is_empty()).unwrap_or("file");
            local.join(name)
        }
        false => local.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Written beside the target and renamed over it when whole: an
    // interrupted download leaves the old file (or none), never half of one.
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let staged = dir.join(format!(".{name}.stead-part"));
    let mut reader = download(ctx, remote)?.into_body().into_reader();
    let mut file = fs::File::create(&staged).map_err(|e| CliError::local(&staged, e))?;
    let copied = std::io::copy(&mut reader, &mut file);
    let written = match copied {
        Ok(n) => n,
        Err(e) => {
            let _ = fs::remove_file(&staged);
            return Err(broken(e));
        }
    };
    file.flush().map_err(|e| CliError::local(&staged, e))?;
    if let Some(mode) = stat["mode"]
        .as_str()
        .and_then(|m| u32::from_str_radix(m, 8).ok())
    {
        fs::set_permissions(&staged, fs::Permissions::from_mode(mode))
            .map_err(|e| CliError::local(&staged, e))?;
    }
    if let Some(mtime) = stat["mtime"].as_i64() {
        let when = UNIX_EPOCH + Duration::from_millis(mtime.max(0) as u64);
        file.set_modified(when)
            .map_err(|e| CliError::local(&staged, e))?;
    }
    drop(file);
    fs::rename(&staged, &target).map_err(|e| CliError::local(&target, e))?;
    output::done(
        ctx.json,
        &json!({ "path": workspace_path(remote), "local": target, "size": written }),
        &format!(
            "{} → {} ({})",
            workspace_path(remote),
            target.display(),
            output::size(written)
        ),
    )
}

pub fn rm(ctx: &Context, path: &str, recursive: bool, force: bool) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let body = json!({ "path": workspace_path(path), "recursive": recursive, "force": force });
    let answer = api.tool(agent, "rm", &body)?;
    output::done(
        ctx.json,
        &answer,
        &format!("removed {}", workspace_path(path)),
    )
}

pub fn mv(ctx: &Context, from: &str, to: &str) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let body = json!({ "from": workspace_path(from), "to": workspace_path(to) });
    let answer = api.tool(agent, "mv", &body)?;
    output::done(
        ctx.json,
        &answer,
        &format!("{} → {}", workspace_path(from), workspace_path(to)),
    )
}
