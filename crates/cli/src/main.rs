//! `stead`: the command line of a stead deployment.
//!
//! Every command is a thin client of the HTTP API (README, "Quick start
//! with the CLI"): agents, files, commands and their jobs, time travel.
//! Failures print one line, `stead: <what and how to fix it>`, and exit
//! with the code of their [`Failure`] kind; `exec` and `logs -f` exit with
//! the command's own status.

mod agents;
mod client;
mod config;
mod error;
mod files;
mod follow;
mod more;
mod output;
mod terminal;
mod timetravel;
mod transfer;

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

use client::Api;
use config::Config;
use error::{CliError, Failure, Result};

/// The command line of a stead deployment: durable workspaces for AI agents.
#[derive(Parser)]
#[command(name = "stead", version, about, propagate_version = true)]
struct Cli {
    /// The deployment's URL (default: the profile's).
    #[arg(long, env = "STEAD_URL", global = true)]
    url: Option<String>,
    /// The API token (default: the profile's).
    #[arg(long, env = "STEAD_TOKEN", global = true, hide_env_values = true)]
    token: Option<String>,
    /// The stored profile to use (default: the one `login` stored last).
    #[arg(long, env = "STEAD_PROFILE", global = true)]
    profile: Option<String>,
    /// The agent (default: the one `stead use` recorded for this directory).
    #[arg(short, long, env = "STEAD_AGENT", global = true)]
    agent: Option<String>,
    /// Print the server's answers as JSON, one object per line.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Store a profile (URL and token), checked against the server first.
    Login {
        #[arg(long)]
        url: String,
        #[arg(long)]
        token: String,
    },
    /// Record AGENT as the default agent of the current directory.
    Use { agent: String },
    /// List, create, inspect and delete agents (admin token).
    #[command(subcommand)]
    Agents(agents::AgentsCommand),
    /// List a directory.
    Ls {
        #[arg(default_value = "/")]
        path: String,
        /// Type, mode, size and modification time of each entry.
        #[arg(short, long)]
        long: bool,
    },
    /// Print a file.
    Cat { path: String },
    /// Upload a local file (`-` reads standard input).
    Put { local: PathBuf, remote: String },
    /// Download a file (`-` writes standard output).
    Get { remote: String, local: PathBuf },
    /// Remove a file or, with -r, a directory.
    Rm {
        path: String,
        #[arg(short, long)]
        recursive: bool,
        /// No error when the path does not exist.
        #[arg(short, long)]
        force: bool,
    },
    /// Move or rename.
    Mv { from: String, to: String },
    /// Send a local directory's tree to the workspace: only content it
    /// lacks crosses.
    Push {
        local: PathBuf,
        /// The workspace directory (default `/`).
        remote: Option<String>,
        #[command(flatten)]
        options: TransferFlags,
    },
    /// Bring a workspace directory's tree here: only content no local file
    /// holds crosses.
    Pull {
        remote: String,
        /// The local directory (default `.`).
        local: Option<PathBuf>,
        #[command(flatten)]
        options: TransferFlags,
    },
    /// Mirror one way per call: the destination becomes the source,
    /// deletions included (`push --delete` or `pull --delete`).
    #[command(group(clap::ArgGroup::new("way").required(true).args(["up", "down"])))]
    Sync {
        /// Local to workspace.
        #[arg(long)]
        up: bool,
        /// Workspace to local.
        #[arg(long)]
        down: bool,
        local: PathBuf,
        remote: String,
        #[arg(long)]
        dry_run: bool,
    },
    /// Run a command; its output streams as it comes, and its exit status
    /// is stead's.
    Exec(follow::ExecArgs),
    /// The agent's jobs.
    #[command(subcommand)]
    Jobs(follow::JobsCommand),
    /// A job's output; -f follows it live, resuming after a dropped
    /// connection.
    Logs {
        job: i64,
        #[arg(short, long)]
        follow: bool,
    },
    /// The processes on the agent's computer.
    Ps,
    /// Start a long-running process (a dev server) on the computer.
    Start {
        /// A port it serves (repeat for more).
        #[arg(long = "port")]
        ports: Vec<u16>,
        #[arg(long)]
        cwd: Option<String>,
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Stop a process.
    Kill { id: String },
    /// A share link to a port (anyone with it may open the port).
    Share {
        port: u16,
        #[arg(long)]
        ttl_seconds: Option<u64>,
    },
    /// Serve a port of the computer on a local port (HTTP and WebSocket).
    Forward { port: u16, local_port: Option<u16> },
    /// The workspace's changes, live.
    Watch {
        /// Start after this revision (default: now).
        #[arg(long)]
        since: Option<i64>,
    },
    /// Mint, list and revoke the agent's tokens (admin token).
    #[command(subcommand)]
    Tokens(more::TokensCommand),
    /// The agent's schedules.
    #[command(subcommand)]
    Schedules(more::NamedCommand),
    /// The agent's webhook hooks.
    #[command(subcommand)]
    Hooks(more::NamedCommand),
    /// Edit a file with $EDITOR; written back only if it did not change
    /// meanwhile.
    Edit { path: String },
    /// The agent's shell. On a terminal: its interactive terminal, in raw
    /// mode (the light shell's line editor; a session that survives
    /// reconnects). With input from a pipe: line by line, printing only
    /// what the commands print; `cd` and variables carry over.
    Shell(ShellArgs),
    /// Pin the workspace as it is.
    Checkpoint {
        /// A name to find it by later.
        name: Option<String>,
        /// A note saying what it is for.
        #[arg(short, long)]
        message: Option<String>,
    },
    /// The checkpoints, newest first.
    Checkpoints {
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// What differs between two points (a checkpoint's id or name,
    /// `rev:N`, or `now`): by default the newest checkpoint and now.
    Diff {
        from: Option<String>,
        to: Option<String>,
        /// Only these paths (and their subtrees).
        #[arg(long = "path")]
        paths: Vec<String>,
    },
    /// Put a checkpoint back, wholly or at some paths.
    Restore {
        checkpoint: String,
        paths: Vec<String>,
    },
    /// Take back the last operation that changed files.
    Undo,
    /// Copy the workspace (or a checkpoint) into a new agent.
    Fork {
        new_agent: String,
        #[arg(long)]
        checkpoint: Option<String>,
    },
    /// The MCP endpoint's snippet for an agent harness.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Shell completions, for `source <(stead completions bash)`.
    Completions { shell: clap_complete::Shell },
}

#[derive(Args)]
struct ShellArgs {
    /// Open the terminal even when standard input is not a terminal (its
    /// bytes are typed as they come; its end types Ctrl-D).
    #[arg(short = 't', long)]
    terminal: bool,
    /// A bash on the Linux computer instead of the light shell.
    #[arg(long)]
    computer: bool,
    /// Attach to this terminal session (its transcript is replayed).
    #[arg(long)]
    session: Option<String>,
}

#[derive(Args)]
struct TransferFlags {
    /// Also remove what the other side has and this one does not.
    #[arg(long)]
    delete: bool,
    /// Say what would change and what would cross; change nothing.
    #[arg(long)]
    dry_run: bool,
}

impl TransferFlags {
    fn options(&self) -> transfer::Options {
        transfer::Options {
            delete: self.delete,
            dry_run: self.dry_run,
        }
    }
}

#[derive(Subcommand)]
enum McpCommand {
    /// Print what plugs the agent's MCP endpoint into CLIENT.
    Config(McpConfig),
}

#[derive(Args)]
struct McpConfig {
    #[arg(long, value_enum)]
    client: McpClient,
}

/// The MCP clients `mcp config` knows.
#[derive(Clone, Copy, clap::ValueEnum)]
enum McpClient {
    ClaudeCode,
    Cursor,
    Codex,
    Vscode,
    Json,
}

/// What every command works with: the server, the agent, the output mode.
pub struct Context {
    api: Option<Api>,
    agent: Option<String>,
    pub json: bool,
    /// Why there is no server, when there is none.
    missing: String,
}

impl Context {
    pub fn api(&self) -> Result<&Api> {
        self.api
            .as_ref()
            .ok_or_else(|| CliError::new(Failure::Config, self.missing.clone()))
    }

    pub fn agent(&self) -> Result<&str> {
        self.agent.as_deref().ok_or_else(|| {
            CliError::new(
                Failure::Config,
                "no agent: pass --agent ID, set STEAD_AGENT, or run `stead use ID` in this directory",
            )
        })
    }
}

fn context(cli: &Cli) -> Result<Context> {
    let stored = Config::load()?;
    let profile = stored.profile(cli.profile.as_deref())?;
    let url = cli
        .url
        .clone()
        .or_else(|| profile.map(|(_, p)| p.url.clone()));
    let token = cli
        .token
        .clone()
        .or_else(|| profile.map(|(_, p)| p.token.clone()));
    let (api, missing) = match (url, token) {
        (Some(url), Some(token)) => (Some(Api::new(&url, &token)), String::new()),
        (url, _) => {
            let what = match url {
                Some(_) => "no token",
                None => "no server URL",
            };
            (
                None,
                format!("{what}: run `stead login --url URL --token TOKEN`, or set STEAD_URL and STEAD_TOKEN"),
            )
        }
    };
    let agent = match &cli.agent {
        Some(agent) => Some(agent.clone()),
        None => {
            let here = std::env::current_dir().map_err(|e| CliError::local(".".as_ref(), e))?;
            config::find_directory_defaults(&here)?.map(|(_, defaults)| defaults.agent)
        }
    };
    Ok(Context {
        api,
        agent,
        json: cli.json,
        missing,
    })
}

fn run(cli: Cli) -> Result<i32> {
    // `login` makes the profile the others read: it needs none to exist.
    if let Command::Login { url, token } = &cli.command {
        return login(&cli.profile, url, token, cli.json);
    }
    let ctx = context(&cli)?;
    match cli.command {
        Command::Login { .. } => unreachable!("answered above"),
        Command::Use { agent } => use_agent(&ctx, &agent),
        Command::Agents(command) => agents::run(&ctx, command),
        Command::Ls { path, long } => files::ls(&ctx, &path, long),
        Command::Cat { path } => files::cat(&ctx, &path),
        Command::Put { local, remote } => files::put(&ctx, &local, &remote),
        Command::Get { remote, local } => files::get(&ctx, &remote, &local),
        Command::Rm {
            path,
            recursive,
            force,
        } => files::rm(&ctx, &path, recursive, force),
        Command::Mv { from, to } => files::mv(&ctx, &from, &to),
        Command::Push {
            local,
            remote,
            options,
        } => transfer::push(&ctx, &local, remote.as_deref(), &options.options()),
        Command::Pull {
            remote,
            local,
            options,
        } => transfer::pull(&ctx, &remote, local.as_deref(), &options.options()),
        Command::Sync {
            up,
            down: _,
            local,
            remote,
            dry_run,
        } => {
            let options = transfer::Options {
                delete: true,
                dry_run,
            };
            match up {
                true => transfer::push(&ctx, &local, Some(&remote), &options),
                false => transfer::pull(&ctx, &remote, Some(&local), &options),
            }
        }
        Command::Exec(args) => follow::exec(&ctx, args),
        Command::Jobs(command) => follow::jobs(&ctx, command),
        Command::Logs { job, follow } => follow::logs(&ctx, job, follow),
        Command::Ps => more::ps(&ctx),
        Command::Start {
            ports,
            cwd,
            command,
        } => more::start(&ctx, ports, cwd, command),
        Command::Kill { id } => more::kill(&ctx, &id),
        Command::Share { port, ttl_seconds } => more::share(&ctx, port, ttl_seconds),
        Command::Forward { port, local_port } => more::forward(&ctx, port, local_port),
        Command::Watch { since } => more::watch(&ctx, since),
        Command::Tokens(command) => more::tokens(&ctx, command),
        Command::Schedules(command) => more::named(&ctx, "schedules", command),
        Command::Hooks(command) => more::named(&ctx, "hooks", command),
        Command::Edit { path } => more::edit(&ctx, &path),
        Command::Shell(args) => shell(&ctx, args),
        Command::Checkpoint { name, message } => timetravel::checkpoint(&ctx, name, message),
        Command::Checkpoints { limit } => timetravel::checkpoints(&ctx, limit),
        Command::Diff { from, to, paths } => timetravel::diff(&ctx, from, to, paths),
        Command::Restore { checkpoint, paths } => timetravel::restore(&ctx, &checkpoint, paths),
        Command::Undo => timetravel::undo(&ctx),
        Command::Fork {
            new_agent,
            checkpoint,
        } => timetravel::fork(&ctx, &new_agent, checkpoint),
        Command::Mcp(McpCommand::Config(McpConfig { client })) => mcp_config(&ctx, client),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "stead", &mut std::io::stdout());
            Ok(0)
        }
    }
}

/// `stead login`: checks the URL and token, then stores them.
fn login(profile: &Option<String>, url: &str, token: &str, json: bool) -> Result<i32> {
    let api = Api::new(url, token);
    // `GET /tools` takes any valid credential: a wrong URL or token fails
    // here, not at the first real command.
    api.json("GET", "/tools?format=mcp", None)?;
    let name = profile.as_deref().unwrap_or(config::DEFAULT_PROFILE);
    let mut stored = Config::load()?;
    stored.profiles.insert(
        name.to_string(),
        config::Profile {
            url: api.base().to_string(),
            token: token.to_string(),
        },
    );
    stored.current = Some(name.to_string());
    stored.save()?;
    let dir = config::config_dir()?;
    output::done(
        json,
        &serde_json::json!({ "profile": name, "url": api.base(), "config": dir.join("config.json") }),
        &format!("logged in to {} as profile {name:?}", api.base()),
    )
}

/// `stead use AGENT`: checks that the agent exists, then records it.
fn use_agent(ctx: &Context, agent: &str) -> Result<i32> {
    ctx.api()?.json("GET", &client::agent_path(agent), None)?;
    let here = std::env::current_dir().map_err(|e| CliError::local(".".as_ref(), e))?;
    let path = config::write_directory_defaults(&here, agent)?;
    output::done(
        ctx.json,
        &serde_json::json!({ "agent": agent, "file": path }),
        &format!("{agent} is the default agent under {}", here.display()),
    )
}

/// `stead shell`: the terminal, unless the input is a script to run line by
/// line.
fn shell(ctx: &Context, args: ShellArgs) -> Result<i32> {
    use std::io::IsTerminal;
    let raw = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if !(raw || args.terminal || args.computer || args.session.is_some()) {
        return more::shell(ctx);
    }
    let options = terminal::Options {
        backend: if args.computer { "computer" } else { "light" },
        session: args.session,
        raw,
    };
    terminal::run(ctx.api()?, ctx.agent()?, options)
}

/// `stead mcp config`: the agent's MCP endpoint, as each client takes it.
fn mcp_config(ctx: &Context, client: McpClient) -> Result<i32> {
    let api = ctx.api()?;
    let agent = ctx.agent()?;
    let url = format!("{}{}/mcp", api.base(), client::agent_path(agent));
    let auth = format!("Bearer {}", api.token());
    let server = serde_json::json!({ "url": url, "headers": { "Authorization": auth } });
    let name = format!("stead-{agent}");
    let text = match client {
        McpClient::ClaudeCode => format!(
            "claude mcp add --transport http {name} {url} --header \"Authorization: {auth}\""
        ),
        McpClient::Cursor => serde_json::to_string_pretty(
            &serde_json::json!({ "mcpServers": { &name: server } }),
        )
        .expect("serializes"),
        McpClient::Vscode => serde_json::to_string_pretty(&serde_json::json!({
            "servers": { &name: { "type": "http", "url": url, "headers": { "Authorization": auth } } }
        }))
        .expect("serializes"),
        McpClient::Codex => format!(
            "[mcp_servers.{name}]\nurl = \"{url}\"\nhttp_headers = {{ \"Authorization\" = \"{auth}\" }}"
        ),
        McpClient::Json => server.to_string(),
    };
    output::line(&text);
    Ok(0)
}

fn main() {
    // A bug must still end in one line, never a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("stead: internal error ({info}); please report it");
        std::process::exit(70);
    }));
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("stead: {error}");
            error.failure.exit_code()
        }
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `sync` takes exactly one direction, and its usage says so.
    #[test]
    fn sync_takes_one_direction() {
        let parse = |args: &[&str]| Cli::try_parse_from(["stead", "sync"].iter().chain(args));
        assert!(parse(&["--up", "dir", "/r"]).is_ok());
        assert!(parse(&["--down", "dir", "/r"]).is_ok());
        assert!(parse(&["--up", "--down", "dir", "/r"]).is_err());
        assert!(parse(&["dir", "/r"]).is_err());
        let mut command = Cli::command();
        let usage = command
            .find_subcommand_mut("sync")
            .expect("sync")
            .render_usage()
            .to_string();
        assert!(usage.contains("<--up|--down>"), "{usage}");
    }
}
