//! The WebSocket load check: many clients on one agent follow a job's
//! output live.
//!
//! ```text
//! cargo run --release -p stead-bench -- ws [--clients 200] [--backend computer|shell]
//!     [--lines 100] [--jobs 20] [--quick] [--url http://host:port]
//! ```
//!
//! Every client subscribes to all job output (`subscribe_jobs`) and waits
//! for `job_end`. With `--backend computer` (the default) one job on the
//! computer prints `--lines` lines 20 ms apart, so output arrives as a live
//! stream; with `--backend shell` `--jobs` light-shell jobs are started 50 ms
//! apart (the shell hands over its output when it ends). Each output
//! message carries the time the agent appended it (`at_ms`); the delay is
//! the client's receive time minus that (same machine, same clock). Prints
//! delivered/expected messages (expected: the pieces in the job logs times
//! the clients) and the p50/p99/max delay. Aim: all delivered, p99 under
//! 100 ms locally. Reported, never asserted.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use stead_harness::{Client, Socket, DEV_TOKEN};

struct Options {
    clients: usize,
    computer: bool,
    lines: usize,
    jobs: usize,
    url: Option<String>,
}

const USAGE: &str = "usage: stead-bench ws [--clients N] [--backend computer|shell] [--lines N] \
[--jobs N] [--quick] [--url http://host:port]";

fn parse(args: &[String]) -> Options {
    let mut options = Options {
        clients: 200,
        computer: true,
        lines: 100,
        jobs: 20,
        url: None,
    };
    let mut args = args.iter();
    let number = |value: Option<&String>| -> usize {
        value.and_then(|v| v.parse().ok()).unwrap_or_else(|| {
            eprintln!("{USAGE}");
            std::process::exit(2)
        })
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--clients" => options.clients = number(args.next()),
            "--lines" => options.lines = number(args.next()),
            "--jobs" => options.jobs = number(args.next()),
            "--backend" => match args.next().map(String::as_str) {
                Some("computer") => options.computer = true,
                Some("shell") => options.computer = false,
                _ => {
                    eprintln!("{USAGE}");
                    std::process::exit(2)
                }
            },
            "--quick" => {
                options.clients = 20;
                options.lines = 20;
                options.jobs = 5;
            }
            "--url" => options.url = args.next().cloned(),
            _ => {
                eprintln!("{USAGE}");
                std::process::exit(2)
            }
        }
    }
    options
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// What one client saw.
#[derive(Default)]
struct Seen {
    messages: usize,
    delays_ms: Vec<f64>,
    error: Option<String>,
}

fn client(base: &str, agent: &str, jobs: usize, ready: &Barrier) -> Seen {
    let mut seen = Seen::default();
    let socket = Socket::connect(base, agent, Some(DEV_TOKEN));
    let mut socket = match socket {
        Ok(socket) => socket,
        Err(error) => {
            seen.error = Some(error);
            ready.wait();
            return seen;
        }
    };
    socket.send(&json!({ "type": "subscribe_jobs" }));
    let subscribed = socket.recv(Duration::from_secs(30));
    ready.wait();
    if subscribed.as_ref().map(|m| &m["type"]) != Some(&json!("subscribed")) {
        seen.error = Some(format!("not subscribed: {subscribed:?}"));
        return seen;
    }
    let mut ended = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while ended < jobs {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(message) = socket.recv(left) else {
            seen.error = Some(format!("timed out after {ended} of {jobs} jobs"));
            break;
        };
        match message["type"].as_str() {
            Some("output") => {
                seen.messages += 1;
                let at = message["at_ms"].as_f64().unwrap_or(0.0);
                seen.delays_ms.push(now_ms() - at);
            }
            Some("job_end") => ended += 1,
            _ => {}
        }
    }
    socket.close();
    seen
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Runs the check against `base` with `http` (a client with the token).
pub fn run(args: &[String], base: &str, http: &Client) {
    let options = parse(args);
    let agent = crate::agent_id("bench-ws");
    let created = http.create(&agent);
    assert!(
        created.status == 201,
        "creating the agent failed: {created:?}"
    );
    let jobs = if options.computer { 1 } else { options.jobs };
    eprintln!(
        "ws: {} clients on one agent, {} job(s) on the {}",
        options.clients,
        jobs,
        if options.computer {
            "computer"
        } else {
            "shell"
        }
    );
    let ready = Arc::new(Barrier::new(options.clients + 1));
    let handles: Vec<_> = (0..options.clients)
        .map(|_| {
            let (base, agent, ready) = (base.to_string(), agent.clone(), ready.clone());
            std::thread::spawn(move || client(&base, &agent, jobs, &ready))
        })
        .collect();
    ready.wait();
    let started = Instant::now();
    let mut ids = Vec::new();
    if options.computer {
        let command = format!(
            "for i in $(seq 1 {}); do echo line $i; sleep 0.02; done",
            options.lines
        );
        ids.push(start(
            http,
            &agent,
            json!({ "command": command, "backend": "computer", "timeout_ms": 120000 }),
        ));
    } else {
        for j in 0..jobs {
            let command = format!("seq 1 {} | sed 's/^/job {j} line /'", options.lines);
            ids.push(start(
                http,
                &agent,
                json!({ "command": command, "backend": "shell" }),
            ));
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let seen: Vec<Seen> = handles
        .into_iter()
        .map(|h| h.join().unwrap_or_default())
        .collect();
    let elapsed = started.elapsed();
    let pieces: usize = ids.iter().map(|id| pieces_of(http, &agent, *id)).sum();
    let expected = pieces * options.clients;
    let delivered: usize = seen.iter().map(|s| s.messages).sum();
    let mut delays: Vec<f64> = seen.iter().flat_map(|s| s.delays_ms.clone()).collect();
    delays.sort_by(|a, b| a.total_cmp(b));
    let errors: Vec<&String> = seen.iter().filter_map(|s| s.error.as_ref()).collect();
    println!("| measure | value | aim |");
    println!("|---|---|---|");
    println!("| clients | {} | 200 |", options.clients);
    println!("| output pieces per client | {pieces} | |");
    println!("| delivered / expected messages | {delivered} / {expected} | all |");
    println!("| delay p50 | {:.1} ms | |", percentile(&delays, 50.0));
    println!(
        "| delay p99 | {:.1} ms | < 100 ms |",
        percentile(&delays, 99.0)
    );
    println!("| delay max | {:.1} ms | |", percentile(&delays, 100.0));
    println!("| wall time | {:.2} s | |", elapsed.as_secs_f64());
    if !errors.is_empty() {
        println!("{} client(s) failed; first: {}", errors.len(), errors[0]);
    }
    http.send("DELETE", &format!("/agents/{agent}"), b"");
}

fn start(http: &Client, agent: &str, mut request: Value) -> i64 {
    request["detach"] = json!(true);
    let reply = http.tool(agent, "exec", request);
    assert!(reply.status == 202, "starting the job failed: {reply:?}");
    reply.json()["job"]["id"].as_i64().expect("job id")
}

/// How many pieces job `id`'s log holds (each was one message per client).
fn pieces_of(http: &Client, agent: &str, id: i64) -> usize {
    let mut count = 0;
    let mut from = 0;
    loop {
        let page = http
            .send(
                "GET",
                &format!("/agents/{agent}/jobs/{id}/output?from={from}"),
                b"",
            )
            .json();
        count += page["output"].as_array().map_or(0, Vec::len);
        if page["done"] == true || page["output"].as_array().is_none_or(Vec::is_empty) {
            return count;
        }
        from = page["next"].as_i64().unwrap_or(0);
    }
}
