//! stead-bench: measures the real Worker against baselines taken in the same
//! run, prints a table and writes `bench/out/results.json`; `shell` runs agent
//! scripts through stead's shell, just-bash and GNU bash and writes
//! `bench/out/shell.json`; `checkpoint` measures checkpoints, diffs and forks
//! on the VFS over SQLite and writes `bench/out/checkpoint.json`; `mcp`
//! measures a tool call over MCP against its HTTP route and writes
//! `bench/out/mcp.json`; `cli` measures `stead push` (cold against one
//! tar upload, and warm) and writes `bench/out/cli.json`; `ports` measures a dev server on the computer
//! (the port route, live sync both ways) and writes `bench/out/ports.json`;
//! `ui` measures the inspector in a real browser (navigation to an
//! interactive tree of 10,000 files, the page's size) and writes
//! `bench/out/ui.json`.
//!
//! ```text
//! cargo run --release -p stead-bench -- [shell|computer|ports|checkpoint|mcp|cli|git|terminal|ui] [--quick] [--url http://host:port]
//! ```
//!
//! Without `--url` it starts its own `wrangler dev` through the harness.
//! Figures are reported against their aims, never asserted.

mod agent;
mod breakdown;
mod checkpoint;
mod cli;
mod computer;
mod environment;
mod find;
mod gen;
mod git;
mod grep;
mod large_file;
mod mcp;
mod ports;
mod report;
mod shell;
mod sidecar;
mod small_files;
mod stats;
mod terminal;
mod tier;
mod ui;
mod ws;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use stead_harness::{temp_state, Client, ComputerMode, Runtime, DEV_TOKEN};
use tempfile::TempDir;

use agent::Agent;
use report::Report;
use stats::MIB;

const USAGE: &str =
    "usage: stead-bench [shell|computer|environment|ports|checkpoint|mcp|cli|git|terminal|ui] [--quick] [--url http://host:port]
  shell       agent scripts through stead's exec, just-bash and GNU bash
  ws          200 WebSocket clients following a job's output (see bench/src/ws.rs)
  tier        a large file read out of the chunk tier (R2) vs out of SQLite (see bench/src/tier.rs)
  computer    bytes and time the computer backend's sync costs
  environment a cold start with a restored 200 MB environment vs one without
              (real containers only)
  ports       a dev server on the computer: the port route against a direct
              request, and live sync both ways (see bench/src/ports.rs)
  checkpoint  checkpoints, diffs and forks on the VFS over SQLite (no Worker)
  mcp         a tool call over MCP (both revisions) vs its HTTP route
  cli         `stead push` of a tree, cold vs one tar upload, and warm
  git         `git status` on 10,000 files in the light shell vs real git (no Worker)
  terminal    keystroke to echo on the terminal vs a WebSocket ping
  ui          the inspector in Chromium: navigation to an interactive tree
              of 10,000 files against the listing's floor, and its size
              (without any: the file tools)
  --quick   small sizes, finishes in seconds (CI smoke test)
  --url     benchmark a running Worker instead of starting wrangler dev
            (token from STEAD_TOKEN, else the dev token)";

/// How much work each measure does.
#[derive(Clone, Copy)]
struct Sizes {
    small_files: usize,
    large_file_bytes: u64,
    grep_files: usize,
    grep_bytes: usize,
}

impl Sizes {
    const FULL: Sizes = Sizes {
        small_files: 1000,
        large_file_bytes: 64 * MIB,
        grep_files: 2000,
        grep_bytes: 20_000_000,
    };
    const QUICK: Sizes = Sizes {
        small_files: 100,
        large_file_bytes: 8 * MIB,
        grep_files: 200,
        grep_bytes: 2_000_000,
    };
}

struct Options {
    shell: bool,
    computer: bool,
    environment: bool,
    ports: bool,
    checkpoint: bool,
    mcp: bool,
    cli: bool,
    git: bool,
    terminal: bool,
    ui: bool,
    quick: bool,
    url: Option<String>,
}

fn parse_args() -> Options {
    let mut options = Options {
        shell: false,
        computer: false,
        environment: false,
        ports: false,
        checkpoint: false,
        mcp: false,
        cli: false,
        git: false,
        terminal: false,
        ui: false,
        quick: false,
        url: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "shell" => options.shell = true,
            "computer" => options.computer = true,
            "environment" => options.environment = true,
            "ports" => options.ports = true,
            "checkpoint" => options.checkpoint = true,
            "mcp" => options.mcp = true,
            "cli" => options.cli = true,
            "git" => options.git = true,
            "terminal" => options.terminal = true,
            "ui" => options.ui = true,
            "--quick" => options.quick = true,
            "--url" => options.url = Some(args.next().unwrap_or_else(|| usage_error())),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => usage_error(),
        }
    }
    options
}

fn usage_error() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2);
}

/// A Worker started for this run; the runtime stops before its state folder
/// is removed (fields drop in order).
struct Local {
    runtime: Runtime,
    _state: TempDir,
}

fn start_local() -> Local {
    eprintln!("starting wrangler dev (builds the Worker first if needed)");
    let state = temp_state();
    Local {
        runtime: Runtime::start(state.path()),
        _state: state,
    }
}

/// A client of the Worker under test: the one at `--url`, or a local one
/// started for this run (kept alive by the returned `Local`).
fn connect(options: &Options) -> (Option<Local>, Client) {
    match &options.url {
        None => {
            let local = start_local();
            let client = local.runtime.client();
            (Some(local), client)
        }
        Some(url) => (None, remote_client(url)),
    }
}

fn remote_client(url: &str) -> Client {
    let token = std::env::var("STEAD_TOKEN").unwrap_or_else(|_| DEV_TOKEN.into());
    Client::new(url.trim_end_matches('/'), Some(&token))
}

pub fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A fresh agent id for this run.
fn agent_id(kind: &str) -> String {
    format!("{kind}-{}-{}", std::process::id(), unix_seconds())
}

fn out_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("out").join(name)
}

fn print_and_save(report: &Report, name: &str) {
    print!("{}", report.table());
    let out = out_path(name);
    report.save(&out).expect("write results");
    println!("results written to {}", out.display());
}

fn main() {
    // `ws` (the WebSocket load check) takes options of its own.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("ws") {
        return ws_main(&args[1..]);
    }
    // `tier` starts a Worker of its own, with the tier's waits shortened.
    if args.first().map(String::as_str) == Some("tier") {
        return tier::main(&args[1..]);
    }
    let options = parse_args();
    if options.shell {
        shell_main(&options);
    } else if options.computer {
        computer_main(&options);
    } else if options.environment {
        environment_main(&options);
    } else if options.ports {
        ports_main(&options);
    } else if options.checkpoint {
        checkpoint_main(&options);
    } else if options.mcp {
        mcp_main(&options);
    } else if options.cli {
        cli_main(&options);
    } else if options.git {
        git_main(&options);
    } else if options.terminal {
        terminal_main(&options);
    } else if options.ui {
        ui_main(&options);
    } else {
        files_main(&options);
    }
}

/// The shell benchmark. A Worker that fails to start or an agent that
/// cannot be created makes the stead column `n/a`, not the run fail: the
/// other two shells are still measured.
fn shell_main(options: &Options) {
    let (_local, client) = match &options.url {
        None => match shell::unpanicked(|| Ok(start_local())) {
            Ok(local) => {
                let client = local.runtime.client();
                (Some(local), Ok(client))
            }
            Err(error) => (None, Err(format!("starting the Worker failed: {error}"))),
        },
        Some(url) => (None, Ok(remote_client(url))),
    };
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let agent = client.and_then(|client| {
        shell::unpanicked(|| Agent::try_create(client, agent_id("bench-shell")))
    });
    let measured = shell::run(options.quick, agent, target);
    print_and_save(&measured.report, "shell.json");
    if !measured.stead_complete {
        eprintln!("shell: stead's side failed (see the warnings above): nothing of it is measured");
        std::process::exit(1);
    }
}

/// The computer benchmark: 1,000 files / 50 MB (quick: 100 / 5 MB), on
/// real containers and on the local process in the same run (real
/// containers only when a Docker engine answers), or on `--url`'s Worker.
fn computer_main(options: &Options) {
    let (files, bytes) = if options.quick {
        (100, 5_000_000)
    } else {
        (1000, 50_000_000)
    };
    let size = if options.quick { "quick" } else { "full" };
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let mut report = Report::new(
        format!("stead-bench computer ({size}) against {target}"),
        json!({ "mode": size, "target": target, "files": files, "bytes": bytes,
                "unix_time": unix_seconds() }),
    );
    let measure = |client: Client, label: &str, report: &mut Report| {
        let agent = Agent::create(client, agent_id("bench-computer"));
        computer::write_workspace(&agent, files, bytes);
        let measured = computer::run(&agent, label, files, bytes, report);
        agent.delete();
        measured
    };
    if let Some(url) = &options.url {
        measure(remote_client(url), url, &mut report);
    } else {
        let mut cold = Vec::new();
        each_mode("computer", |runtime, _, label| {
            cold.push(measure(runtime.client(), label, &mut report));
        });
        if let [container, local] = &cold[..] {
            report.rows.push(computer::compare_cold(container, local));
        }
    }
    print_and_save(&report, "computer.json");
}

/// The environment benchmark (`environment.rs`): real containers only (or
/// `--url`'s Worker, whose computer must be one).
fn environment_main(options: &Options) {
    let bytes = if options.quick {
        20_000_000
    } else {
        200_000_000
    };
    let size = if options.quick { "quick" } else { "full" };
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let mut report = Report::new(
        format!("stead-bench environment ({size}) against {target}"),
        json!({ "mode": size, "target": target, "bytes": bytes, "unix_time": unix_seconds() }),
    );
    let measure = |client: Client, report: &mut Report| {
        let agent = Agent::create(client, agent_id("bench-environment"));
        environment::run(&agent, bytes, report);
        agent.delete();
    };
    if let Some(url) = &options.url {
        measure(remote_client(url), &mut report);
    } else if ComputerMode::from_env() == ComputerMode::Container {
        eprintln!("environment: starting wrangler dev, the computer in real containers");
        let state = temp_state();
        let runtime = Runtime::start_with(state.path(), ComputerMode::Container, &[]);
        measure(runtime.client(), &mut report);
        runtime.stop();
    } else {
        // The local program is never released: nothing is ever restored.
        eprintln!(
            "environment: needs real containers (source scripts/computer-mode with a Docker \
             engine); nothing measured"
        );
    }
    print_and_save(&report, "environment.json");
}

/// The inspector benchmark (`ui.rs`).
fn ui_main(options: &Options) {
    let count = ui::files(options.quick);
    let size = if options.quick { "quick" } else { "full" };
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let mut report = Report::new(
        format!("stead-bench ui ({size}) against {target}"),
        json!({ "mode": size, "target": target, "files": count, "unix_time": unix_seconds() }),
    );
    let (local, client) = connect(options);
    let base = match (&local, &options.url) {
        (Some(local), _) => local.runtime.base().to_string(),
        (None, Some(url)) => url.trim_end_matches('/').to_string(),
        (None, None) => unreachable!("connect starts a Worker without --url"),
    };
    let token = std::env::var("STEAD_TOKEN")
        .ok()
        .filter(|_| options.url.is_some())
        .unwrap_or_else(|| DEV_TOKEN.into());
    let agent = Agent::create(client, agent_id("bench-ui"));
    eprintln!("ui: writing {count} files");
    ui::seed(&agent, count);
    ui::run(&agent, &base, &token, count, &mut report);
    agent.delete();
    print_and_save(&report, "ui.json");
}

/// Runs `measure` on each way the computer can run, each on a `wrangler
/// dev` of its own: real containers first (only when a Docker engine
/// answers), then the local process. `measure` gets the mode and its label.
fn each_mode(bench: &str, mut measure: impl FnMut(&Runtime, ComputerMode, &str)) {
    let mut modes = vec![ComputerMode::LocalProcess];
    if ComputerMode::from_env() == ComputerMode::Container {
        modes.insert(0, ComputerMode::Container);
    }
    for mode in modes {
        let label = match mode {
            ComputerMode::Container => "real container",
            ComputerMode::LocalProcess => "local process",
        };
        eprintln!(
            "{bench}: starting wrangler dev, the computer {}",
            mode.describe()
        );
        let state = temp_state();
        let runtime = Runtime::start_with(state.path(), mode, &[]);
        measure(&runtime, mode, label);
        runtime.stop();
    }
}

/// The ports benchmark (see `ports.rs`): per mode as the computer
/// benchmark, or on `--url`'s Worker (without the direct requests).
fn ports_main(options: &Options) {
    let (sizes, size) = if options.quick {
        (ports::Sizes::QUICK, "quick")
    } else {
        (ports::Sizes::FULL, "full")
    };
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let mut report = Report::new(
        format!("stead-bench ports ({size}) against {target}"),
        json!({ "mode": size, "target": target, "unix_time": unix_seconds() }),
    );
    let measure = |client: Client, label: &str, direct: ports::Direct, report: &mut Report| {
        let agent = Agent::create(client, agent_id("bench-ports"));
        ports::run(&agent, label, direct, sizes, report);
        agent.delete();
    };
    if let Some(url) = &options.url {
        let direct = ports::Direct::Unavailable("a Worker at --url: its containers are not here");
        measure(remote_client(url), url, direct, &mut report);
    } else {
        each_mode("ports", |runtime, mode, label| {
            let direct = match mode {
                ComputerMode::Container => ports::Direct::Bridge(runtime),
                ComputerMode::LocalProcess => ports::Direct::Loopback,
            };
            measure(runtime.client(), label, direct, &mut report);
        });
    }
    print_and_save(&report, "ports.json");
}

/// The checkpoint benchmark: the VFS over SQLite in this process, no Worker
/// (so `--url` does not apply).
fn checkpoint_main(options: &Options) {
    let sizes = if options.quick {
        checkpoint::Sizes::QUICK
    } else {
        checkpoint::Sizes::FULL
    };
    let mode = if options.quick { "quick" } else { "full" };
    let mut report = Report::new(
        format!("stead-bench checkpoint ({mode}): the VFS on SQLite"),
        json!({ "mode": mode, "unix_time": unix_seconds() }),
    );
    checkpoint::run(sizes, &mut report);
    print_and_save(&report, "checkpoint.json");
}

/// `git status` in the light shell against the real git (see `git.rs`).
fn git_main(options: &Options) {
    let sizes = if options.quick {
        git::Sizes::QUICK
    } else {
        git::Sizes::FULL
    };
    let mode = if options.quick { "quick" } else { "full" };
    let mut report = Report::new(
        format!("stead-bench git ({mode}): the light shell's git on SQLite vs real git"),
        json!({ "mode": mode, "unix_time": unix_seconds() }),
    );
    git::run(sizes, &mut report);
    print_and_save(&report, "git.json");
}

/// `stead push` against a tar upload (see `cli.rs`).
fn cli_main(options: &Options) {
    let sizes = if options.quick {
        cli::Sizes::QUICK
    } else {
        cli::Sizes::FULL
    };
    let (local, client) = connect(options);
    let base = match (&local, &options.url) {
        (Some(local), _) => local.runtime.base().to_string(),
        (None, url) => url.clone().unwrap_or_default(),
    };
    let token = std::env::var("STEAD_TOKEN").unwrap_or_else(|_| DEV_TOKEN.into());
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let agent = Agent::create(client, agent_id("bench-cli"));
    let mode = if options.quick { "quick" } else { "full" };
    let mut report = Report::new(
        format!("stead-bench cli ({mode}) against {target}"),
        json!({ "mode": mode, "target": target, "files": sizes.files, "bytes": sizes.bytes,
                "unix_time": unix_seconds() }),
    );
    cli::run(
        &agent,
        base.trim_end_matches('/'),
        &token,
        sizes,
        &mut report,
    );
    agent.delete();
    print_and_save(&report, "cli.json");
}

/// MCP against HTTP (see `mcp.rs`): 1,000 rounds (quick: 50).
fn mcp_main(options: &Options) {
    let rounds = if options.quick { 50 } else { 1000 };
    let (_local, client) = connect(options);
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let agent = Agent::create(client, agent_id("bench-mcp"));
    let mode = if options.quick { "quick" } else { "full" };
    let mut report = Report::new(
        format!(
            "stead-bench mcp ({mode}) against {target}, agent {}",
            agent.id()
        ),
        json!({ "mode": mode, "target": target, "rounds": rounds, "unix_time": unix_seconds() }),
    );
    mcp::run(&agent, rounds, &mut report);
    agent.delete();
    print_and_save(&report, "mcp.json");
}

/// The terminal benchmark (see `terminal.rs`), on a local Worker unless
/// `--url` names one.
fn terminal_main(options: &Options) {
    let rounds = if options.quick { 50 } else { 1000 };
    let (local, client) = connect(options);
    let (base, token) = match (&local, &options.url) {
        (Some(local), _) => (local.runtime.base().to_string(), DEV_TOKEN.to_string()),
        (None, Some(url)) => (
            url.trim_end_matches('/').to_string(),
            std::env::var("STEAD_TOKEN").unwrap_or_else(|_| DEV_TOKEN.into()),
        ),
        (None, None) => unreachable!("a local runtime starts without --url"),
    };
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let agent = Agent::create(client, agent_id("bench-terminal"));
    let mode = if options.quick { "quick" } else { "full" };
    let mut report = Report::new(
        format!(
            "stead-bench terminal ({mode}) against {target}, agent {}",
            agent.id()
        ),
        json!({ "mode": mode, "target": target, "rounds": rounds, "unix_time": unix_seconds() }),
    );
    terminal::run(&agent, &base, &token, rounds, &mut report);
    agent.delete();
    print_and_save(&report, "terminal.json");
}

/// The WebSocket load check (see `ws.rs`), on a local Worker unless
/// `--url` names one.
fn ws_main(args: &[String]) {
    let url = args
        .iter()
        .position(|a| a == "--url")
        .and_then(|i| args.get(i + 1));
    let local = url.is_none().then(start_local);
    let (base, client) = match (&local, url) {
        (Some(local), _) => (local.runtime.base().to_string(), local.runtime.client()),
        (None, Some(url)) => (url.trim_end_matches('/').to_string(), remote_client(url)),
        (None, None) => unreachable!("a local runtime starts without --url"),
    };
    ws::run(args, &base, &client);
}

/// The file tools benchmark.
fn files_main(options: &Options) {
    let sizes = if options.quick {
        Sizes::QUICK
    } else {
        Sizes::FULL
    };
    // `_local` lives to the end: dropping it stops the Worker.
    let (_local, client) = connect(options);
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let agent = Agent::create(client, agent_id("bench"));

    let mode = if options.quick { "quick" } else { "full" };
    let mut report = Report::new(
        format!(
            "stead-bench ({mode}) against {target}, agent {}",
            agent.id()
        ),
        json!({
            "mode": mode,
            "target": target,
            "agent": agent.id(),
            "unix_time": unix_seconds(),
            "sizes": {
                "small_files": sizes.small_files,
                "large_file_bytes": sizes.large_file_bytes,
                "grep_files": sizes.grep_files,
                "grep_bytes": sizes.grep_bytes,
            },
        }),
    );
    small_files::run(&agent, sizes.small_files, &mut report);
    large_file::run(&agent, sizes.large_file_bytes, &mut report);
    let corpus = grep::run(&agent, sizes.grep_files, sizes.grep_bytes, &mut report);
    find::run(&agent, corpus.path(), sizes.grep_files, &mut report);
    agent.delete();
    print_and_save(&report, "results.json");
}
