//! `tier`: a large file streamed out of the chunk tier (the local R2
//! binding) against the same file streamed out of SQLite, in the same run
//! on the same Worker; and how fast the alarm moves it there.
//!
//! The Worker runs with the tier's waits shortened (`TIER_HOT_MS`: the file
//! stays inline long enough for its inline reads; `TIER_GRACE_MS`: moves
//! are confirmed at once), so it starts its own `wrangler dev` (no `--url`).

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stead_harness::{temp_state, ComputerMode, Runtime};

use crate::agent::Agent;
use crate::gen::Noise;
use crate::large_file::{drain, same_bytes, throughput_row};
use crate::report::Report;
use crate::stats::{best_of, mib_per_sec, timed, MIB};

const PATH: &str = "/tiered.bin";
const SEED: u64 = 77;
const RUNS: usize = 3;
const CHUNK: u64 = 512 * 1024;

/// How long a written chunk stays inline: the inline reads happen inside it.
const HOT_MS: u64 = 30_000;

pub fn main(args: &[String]) {
    let quick = args.iter().any(|a| a == "--quick");
    let bytes = if quick { 32 * MIB } else { 1024 * MIB };
    eprintln!("tier: starting wrangler dev with the tier's waits shortened");
    let state = temp_state();
    let hot = format!("TIER_HOT_MS:{HOT_MS}");
    let runtime = Runtime::start_with(
        state.path(),
        ComputerMode::from_env(),
        &[&hot, "TIER_GRACE_MS:0"],
    );
    let agent = Agent::create(runtime.client(), crate::agent_id("bench-tier"));
    let mode = if quick { "quick" } else { "full" };
    let mut report = Report::new(
        format!(
            "stead-bench tier ({mode}): {} MiB streamed out of R2 vs out of SQLite",
            bytes / MIB
        ),
        json!({ "mode": mode, "bytes": bytes, "unix_time": crate::unix_seconds() }),
    );
    run(&agent, bytes, &mut report);
    agent.delete();
    runtime.stop();
    crate::print_and_save(&report, "tier.json");
}

fn verify(agent: &Agent) -> Value {
    agent
        .send(&agent.route_call("GET", "verify", Vec::new()))
        .json()
}

fn tiered(report: &Value) -> u64 {
    report["usage"]["tiered"][0].as_u64().unwrap_or(0)
}

fn read_best(agent: &Agent, bytes: u64, what: &str) -> Duration {
    best_of(RUNS, |run| {
        eprintln!("tier: read {what}, run {}", run + 1);
        let (elapsed, got) = timed(|| drain(agent.download(PATH)).expect("download body"));
        assert_eq!(got, bytes, "read {what}");
        (elapsed, ())
    })
    .0
}

fn run(agent: &Agent, bytes: u64, report: &mut Report) {
    eprintln!("tier: write {} MiB", bytes / MIB);
    let started = Instant::now();
    agent.upload_sized(PATH, bytes, Noise::new(SEED, bytes));
    let write = started.elapsed();
    let inline = read_best(agent, bytes, "inline");
    if tiered(&verify(agent)) > 0 || started.elapsed() > Duration::from_millis(HOT_MS) {
        report
            .warn("chunks moved before the inline reads ended: the inline figure is mixed".into());
    }
    // Every chunk of the file is full or at least half a chunk: all move.
    let chunks = bytes.div_ceil(CHUNK);
    eprintln!("tier: waiting for {chunks} chunks to move");
    let moving = Instant::now();
    while tiered(&verify(agent)) < chunks {
        assert!(
            moving.elapsed() < Duration::from_secs(1800),
            "the move stalled"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The move starts once the chunks are cold, `HOT_MS` after the write.
    let moved = (started + Duration::from_millis(HOT_MS)).elapsed();
    let from_tier = read_best(agent, bytes, "from the tier");
    if !same_bytes(agent.download(PATH), Noise::new(SEED, bytes)).expect("download body") {
        report.warn(format!(
            "{PATH} read back from the tier differs from what was written"
        ));
    }
    let section = format!("tier: {} MiB, best of {RUNS}", bytes / MIB);
    let row = |measure: &str, elapsed: Duration, baseline: f64, label: &str| {
        throughput_row(&section, bytes, measure, elapsed, (baseline, label), None)
    };
    let inline_read = mib_per_sec(bytes, inline);
    report.rows.extend([
        row(
            "read from the tier (R2)",
            from_tier,
            inline_read,
            "read inline (SQLite)",
        ),
        row("read inline (SQLite)", inline, 600.0, "aim"),
        row("write (lands inline)", write, 200.0, "aim"),
        row(
            "move to the tier (alarm, background)",
            moved,
            mib_per_sec(bytes, write),
            "write",
        ),
    ]);
}
