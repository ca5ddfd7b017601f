//! Processes and ports (`ps start kill share forward`), the change feed
//! (`watch`), tokens, schedules and hooks, `edit` and `shell`.

use std::io::{BufRead, Write};
use std::net::{TcpListener, TcpStream};

use clap::Subcommand;
use serde_json::{json, Value};

use crate::client::{agent_path, encode_component, workspace_path, Received};
use crate::error::{CliError, Failure, Result};
use crate::output;
use crate::Context;

pub fn ps(ctx: &Context) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let answer = api.json("GET", &format!("{}/processes", agent_path(agent)), None)?;
    let list = answer["processes"].as_array().cloned().unwrap_or_default();
    if ctx.json {
        list.iter().for_each(output::json);
        return Ok(0);
    }
    output::line(&format!(
        "{:<12} {:<9} {:<12} COMMAND",
        "ID", "STATE", "PORTS"
    ));
    for process in &list {
        let ports: Vec<String> = process["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(Value::to_string)
            .collect();
        output::line(&format!(
            "{:<12} {:<9} {:<12} {}",
            process["id"].as_str().unwrap_or(""),
            process["state"].as_str().unwrap_or(""),
            ports.join(","),
            process["command"].as_str().unwrap_or("")
        ));
    }
    Ok(0)
}

pub fn start(
    ctx: &Context,
    ports: Vec<u16>,
    cwd: Option<String>,
    command: Vec<String>,
) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let mut body = json!({ "command": command.join(" "), "ports": ports });
    if let Some(cwd) = cwd {
        body["cwd"] = json!(workspace_path(&cwd));
    }
    let answer = api.json(
        "POST",
        &format!("{}/processes", agent_path(agent)),
        Some(&body),
    )?;
    let id = answer["process"]["id"].as_str().unwrap_or("").to_string();
    output::done(ctx.json, &answer, &format!("started process {id}"))
}

pub fn kill(ctx: &Context, id: &str) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let path = format!("{}/processes/{}", agent_path(agent), encode_component(id));
    let answer = api.json("DELETE", &path, None)?;
    output::done(ctx.json, &answer, &format!("stopped process {id}"))
}

pub fn share(ctx: &Context, port: u16, ttl_seconds: Option<u64>) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let body = match ttl_seconds {
        Some(ttl) => json!({ "ttl_seconds": ttl }),
        None => json!({}),
    };
    let path = format!("{}/ports/{port}/share", agent_path(agent));
    let answer = api.json("POST", &path, Some(&body))?;
    let url = answer["share"]["url"]
        .as_str()
        .or_else(|| answer["url"].as_str())
        .unwrap_or("")
        .to_string();
    output::done(ctx.json, &answer, &url)
}

/// `stead forward PORT [LOCAL_PORT]`: a local listener whose every
/// connection goes to the port route, `Authorization` added. Each request
/// head is rewritten to `/agents/{id}/ports/{port}{path}`; a WebSocket
/// upgrade is then piped both ways, and any other request is sent with
/// `Connection: close`, so every request on the local side gets its own
/// rewritten head.
pub fn forward(ctx: &Context, port: u16, local_port: Option<u16>) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let upstream = api.base().strip_prefix("http://").ok_or_else(|| {
        CliError::new(
            Failure::Config,
            "forward reaches the server over plain http only (a local or tunnelled URL); for an https deployment use `stead share PORT`",
        )
    })?;
    let upstream = upstream.trim_end_matches('/').to_string();
    let listener = TcpListener::bind(("127.0.0.1", local_port.unwrap_or(port))).map_err(|e| {
        CliError::new(
            Failure::Local,
            format!(
                "cannot listen on 127.0.0.1:{}: {e}",
                local_port.unwrap_or(port)
            ),
        )
    })?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::new(Failure::Local, e.to_string()))?;
    eprintln!("forwarding http://{local} → port {port} of {agent}; Ctrl-C stops");
    let prefix = format!("{}/ports/{port}", agent_path(agent));
    let auth = format!("Bearer {}", api.token());
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        let (upstream, prefix, auth) = (upstream.clone(), prefix.clone(), auth.clone());
        std::thread::spawn(move || {
            if let Err(e) = relay(client, &upstream, &prefix, &auth) {
                eprintln!("stead: forward: {e}");
            }
        });
    }
    Ok(0)
}

fn relay(mut client: TcpStream, upstream: &str, prefix: &str, auth: &str) -> std::io::Result<()> {
    let mut reader = std::io::BufReader::new(client.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut parts = request_line.trim_end().splitn(3, ' ');
    let (method, target, version) = (
        parts.next().unwrap_or("GET"),
        parts.next().unwrap_or("/"),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    let mut head = format!("{method} {prefix}{target} {version}\r\n");
    let mut upgrade = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
        let name = line
            .split(':')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match name.as_str() {
            "host" | "authorization" | "connection" => {
                if name == "connection" && line.to_ascii_lowercase().contains("upgrade") {
                    upgrade = true;
                }
            }
            _ => head.push_str(&line),
        }
    }
    head.push_str(&format!("host: {upstream}\r\nauthorization: {auth}\r\n"));
    head.push_str(match upgrade {
        true => "connection: upgrade\r\n\r\n",
        false => "connection: close\r\n\r\n",
    });
    let mut server = TcpStream::connect(upstream)?;
    server.write_all(head.as_bytes())?;
    // Whatever the reader buffered past the head is the body's start.
    server.write_all(reader.buffer())?;
    let mut to_server = server.try_clone()?;
    let mut from_client = client.try_clone()?;
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_server);
        let _ = to_server.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut server, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Both);
    let _ = up.join();
    Ok(())
}

/// `stead watch`: the change feed, live, from now (or `--since REV`).
pub fn watch(ctx: &Context, since: Option<i64>) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let mut socket = api.socket(agent)?;
    let mut subscribe = json!({ "type": "subscribe_changes" });
    if let Some(since) = since {
        subscribe["since"] = json!(since);
    }
    socket.send(&subscribe)?;
    loop {
        match socket.recv() {
            Received::Message(message) if message["type"] == "change" => match ctx.json {
                true => output::json(&message),
                false => output::line(&format!(
                    "{:>8} {:<9} {}",
                    message["revision"],
                    message["kind"].as_str().unwrap_or(""),
                    message["path"].as_str().unwrap_or("")
                )),
            },
            Received::Message(message) if message["type"] == "error" => {
                let body = json!({ "error": message["error"] }).to_string();
                return Err(crate::client::error_of(400, body.as_bytes()));
            }
            Received::Message(_) => {}
            Received::Idle => socket.send(&json!({ "type": "ping" }))?,
            Received::Closed(why) => {
                return Err(CliError::new(
                    Failure::Network,
                    format!("the change feed closed ({why}); run `stead watch --since REV` to go on from the last revision shown"),
                ))
            }
        }
    }
}

#[derive(Subcommand)]
pub enum TokensCommand {
    /// Mint a token for the current agent (admin token).
    Mint {
        /// Scopes, such as read,write,exec:shell.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        #[arg(long)]
        ttl_seconds: Option<u64>,
    },
    /// Revoke a token by its id.
    Revoke { id: String },
    /// The agent's tokens that have not expired, newest first (admin).
    Ls,
}

pub fn tokens(ctx: &Context, command: TokensCommand) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    match command {
        TokensCommand::Mint {
            scopes,
            ttl_seconds,
        } => {
            let mut body = json!({ "agent": agent, "scopes": scopes });
            if let Some(ttl) = ttl_seconds {
                body["ttl_seconds"] = json!(ttl);
            }
            let answer = api.json("POST", "/tokens", Some(&body))?;
            let token = answer["token"].as_str().unwrap_or("").to_string();
            output::done(ctx.json, &answer, &token)
        }
        TokensCommand::Revoke { id } => {
            let answer = api.json(
                "POST",
                "/tokens/revoke",
                Some(&json!({ "agent": agent, "id": id })),
            )?;
            output::done(ctx.json, &answer, &format!("revoked token {id}"))
        }
        TokensCommand::Ls => {
            let answer = api.json("GET", &format!("{}/tokens", agent_path(agent)), None)?;
            for token in answer["tokens"].as_array().cloned().unwrap_or_default() {
                match ctx.json {
                    true => output::json(&token),
                    false => {
                        let scopes: Vec<&str> = token["scopes"]
                            .as_array()
                            .map(|s| s.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        let state = match token["revoked"].as_bool() {
                            Some(true) => "revoked",
                            _ => "valid",
                        };
                        output::line(&format!(
                            "{}  {:<7}  expires {}  {}",
                            token["id"].as_str().unwrap_or(""),
                            state,
                            token["expires_at"],
                            scopes.join(",")
                        ))
                    }
                }
            }
            if answer["truncated"] == true {
                output::error_bytes(
                    b"stead: more tokens than one listing holds; the oldest are not shown\n",
                );
            }
            Ok(0)
        }
    }
}

/// `schedules` and `hooks`: list, create (from a JSON body), delete.
#[derive(Subcommand)]
pub enum NamedCommand {
    /// List them.
    Ls,
    /// Create or replace NAME with a JSON body (as the HTTP route takes).
    Create { name: String, body: String },
    /// Delete NAME.
    Rm { name: String },
}

pub fn named(ctx: &Context, collection: &str, command: NamedCommand) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let base = format!("{}/{collection}", agent_path(agent));
    match command {
        NamedCommand::Ls => {
            let answer = api.json("GET", &base, None)?;
            let list = answer[collection].as_array().cloned().unwrap_or_default();
            for item in &list {
                match ctx.json {
                    true => output::json(item),
                    false => output::line(&format!(
                        "{:<24} {}",
                        item["id"].as_str().or(item["name"].as_str()).unwrap_or(""),
                        item
                    )),
                }
            }
            Ok(0)
        }
        NamedCommand::Create { name, body } => {
            let value: Value = serde_json::from_str(&body).map_err(|e| {
                CliError::new(Failure::Invalid, format!("the body is not JSON ({e}); see the README's {collection} section for its fields"))
            })?;
            let path = format!("{base}/{}", encode_component(&name));
            let answer = api.json("PUT", &path, Some(&value))?;
            if let Some(secret) = answer["secret"]
                .as_str()
                .or(answer["webhook_secret"].as_str())
            {
                eprintln!("secret (shown once): {secret}");
            }
            output::done(ctx.json, &answer, &format!("{collection}/{name} stored"))
        }
        NamedCommand::Rm { name } => {
            let path = format!("{base}/{}", encode_component(&name));
            let answer = api.json("DELETE", &path, None)?;
            output::done(ctx.json, &answer, &format!("{collection}/{name} deleted"))
        }
    }
}

/// `stead edit PATH`: `$EDITOR` on a local copy, written back only if the
/// file's revision has not moved meanwhile.
pub fn edit(ctx: &Context, path: &str) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let path = workspace_path(path);
    let stat = |api: &crate::client::Api| api.tool(agent, "stat", &json!({ "path": path }));
    let before = stat(api)?;
    let read = api.tool(
        agent,
        "read",
        &json!({ "path": path, "byte_offset": 0, "byte_length": 262144, "encoding": "base64" }),
    )?;
    if before["size"].as_u64().unwrap_or(0) > 262_144 {
        return Err(CliError::new(
            Failure::Invalid,
            format!("{path} is larger than 256 KiB: `stead get` it, edit it, `stead put` it back"),
        ));
    }
    use base64::Engine;
    let original = base64::engine::general_purpose::STANDARD
        .decode(read["content"].as_str().unwrap_or(""))
        .map_err(|e| CliError::new(Failure::Server, format!("read: {e}")))?;
    let name = path.rsplit('/').next().unwrap_or("file");
    let copy = std::env::temp_dir().join(format!("stead-edit-{}-{name}", std::process::id()));
    std::fs::write(&copy, &original).map_err(|e| CliError::local(&copy, e))?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".to_string());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&copy)
        .status()
        .map_err(|e| {
            CliError::new(
                Failure::Local,
                format!("cannot start the editor {editor:?}: {e}"),
            )
        })?;
    if !status.success() {
        return Err(CliError::new(
            Failure::Local,
            format!(
                "the editor exited with {status}; nothing was written (your copy: {})",
                copy.display()
            ),
        ));
    }
    let edited = std::fs::read(&copy).map_err(|e| CliError::local(&copy, e))?;
    if edited == original {
        let _ = std::fs::remove_file(&copy);
        return output::done(
            ctx.json,
            &json!({ "path": path, "changed": false }),
            "no change",
        );
    }
    let now = stat(api)?;
    if now["rev"] != before["rev"] {
        return Err(CliError::new(
            Failure::Conflict,
            format!(
                "{path} changed in the workspace while you edited it (revision {} → {}); nothing was written; your copy is {}",
                before["rev"], now["rev"], copy.display()
            ),
        ));
    }
    let content = base64::engine::general_purpose::STANDARD.encode(&edited);
    let answer = api.tool(
        agent,
        "write",
        &json!({ "path": path, "content": content, "encoding": "base64", "mode": before["mode"] }),
    )?;
    let _ = std::fs::remove_file(&copy);
    output::done(ctx.json, &answer, &format!("{path} written"))
}

/// Ends each shell line's script: the line's status, then the state the
/// next line starts from, after a marker no command prints.
const STATE_MARKER: &str = "\u{1e}stead-state\u{1e}";

/// `stead shell`: a line-by-line loop on the light shell that keeps the
/// working directory and the variables between lines (every variable is
/// exported, `set -a`, so the next line receives it in its environment).
pub fn shell(ctx: &Context) -> Result<i32> {
    let (api, agent) = (ctx.api()?, ctx.agent()?);
    let mut cwd = "/".to_string();
    let mut env: serde_json::Map<String, Value> = serde_json::Map::new();
    let mut status = 0;
    let stdin = std::io::stdin();
    let interactive = std::io::IsTerminal::is_terminal(&stdin);
    loop {
        if interactive {
            output::error_bytes(format!("{agent}:{cwd}$ ").as_bytes());
        }
        let mut line = String::new();
        if stdin
            .lock()
            .read_line(&mut line)
            .map_err(|e| CliError::local("<stdin>".as_ref(), e))?
            == 0
        {
            return Ok(status);
        }
        if line.trim().is_empty() {
            continue;
        }
        let script = format!(
            "set -a\n{line}\n__stead_status=$?\nprintf '{STATE_MARKER}%s\\n' \"$__stead_status\"\npwd\nenv\n"
        );
        let body = json!({ "command": script, "cwd": cwd, "env": env, "backend": "shell" });
        let answer = api.tool(agent, "exec", &body)?;
        let stdout = answer["stdout"].as_str().unwrap_or("");
        output::error_bytes(answer["stderr"].as_str().unwrap_or("").as_bytes());
        match stdout.split_once(STATE_MARKER) {
            Some((printed, state)) => {
                output::bytes(printed.as_bytes());
                let mut lines = state.lines();
                status = lines.next().and_then(|s| s.parse().ok()).unwrap_or(1);
                if let Some(dir) = lines.next() {
                    cwd = dir.to_string();
                }
                env = lines
                    .filter_map(|l| l.split_once('='))
                    .filter(|(k, _)| {
                        !matches!(*k, "PWD" | "OLDPWD" | "__stead_status" | "SHLVL" | "_")
                    })
                    .map(|(k, v)| (k.to_string(), json!(v)))
                    .collect();
            }
            // The line ended the script (`exit`): its status ends the loop.
            None => {
                output::bytes(stdout.as_bytes());
                return Ok(answer["exit_code"].as_i64().unwrap_or(0) as i32);
            }
        }
    }
}
