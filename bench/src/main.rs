//! stead-bench: measures the real Worker against baselines taken in the same
//! run, prints a table and writes `bench/out/results.json`.
//!
//! ```text
//! cargo run --release -p stead-bench -- [--quick] [--url http://host:port]
//! ```
//!
//! Without `--url` it starts its own `wrangler dev` through the harness.
//! Figures are reported against their aims, never asserted.

mod agent;
mod gen;
mod grep;
mod large_file;
mod report;
mod small_files;
mod stats;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use stead_harness::{temp_state, Client, Runtime, DEV_TOKEN};
use tempfile::TempDir;

use agent::Agent;
use report::Report;
use stats::MIB;

const USAGE: &str = "usage: stead-bench [--quick] [--url http://host:port]
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
    quick: bool,
    url: Option<String>,
}

fn parse_args() -> Options {
    let mut options = Options {
        quick: false,
        url: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
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

fn remote_client(url: &str) -> Client {
    let token = std::env::var("STEAD_TOKEN").unwrap_or_else(|_| DEV_TOKEN.into());
    Client::new(url.trim_end_matches('/'), Some(&token))
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn main() {
    let options = parse_args();
    let sizes = if options.quick {
        Sizes::QUICK
    } else {
        Sizes::FULL
    };
    // `_local` lives to the end of main: dropping it stops the Worker.
    let (_local, client) = match &options.url {
        None => {
            let local = start_local();
            let client = local.runtime.client();
            (Some(local), client)
        }
        Some(url) => (None, remote_client(url)),
    };
    let target = options.url.as_deref().unwrap_or("local wrangler dev");
    let agent = Agent::create(
        client,
        format!("bench-{}-{}", std::process::id(), unix_seconds()),
    );

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
    grep::run(&agent, sizes.grep_files, sizes.grep_bytes, &mut report);
    agent.delete();

    print!("{}", report.table());
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("out/results.json");
    report.save(&out).expect("write results");
    println!("results written to {}", out.display());
}
