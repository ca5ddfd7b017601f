//! A tool call over MCP against the same call over its HTTP route.
//!
//! ```text
//! cargo run --release -p stead-bench -- mcp [--quick] [--url http://host:port]
//! ```
//!
//! The same `read` (a 1 KiB file) and `write` (1 KiB) are sent as
//! `POST /agents/{id}/{tool}` and as MCP `tools/call` over Streamable HTTP,
//! in both revisions: 2026-07-28 (stateless: `_meta` and headers on every
//! request) and 2025-11-25 (in a session made once, so each call also finds
//! its session in SQLite). The three are sent in turn, rotating which goes
//! first, on one keep-alive connection, after a warm-up. Rows: the MCP
//! call's mean, p50 and p99 against the HTTP call's. Aim: MCP adds at most
//! 10% to the median. Reported, never asserted.

use std::time::Duration;

use serde_json::{json, Value};
use stead_harness::Reply;

use crate::agent::{expect_success, Agent, Call};
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{millis, timed, Latency};

const AIM: Aim = Aim::AtMost(1.10);
const WARM_UP: usize = 50;

/// How a call travels.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Http,
    Stateless,
    Session,
}

impl Way {
    const ALL: [Way; 3] = [Way::Http, Way::Stateless, Way::Session];

    fn label(self) -> &'static str {
        match self {
            Way::Http => "HTTP route",
            Way::Stateless => "MCP 2026-07-28",
            Way::Session => "MCP 2025-11-25",
        }
    }
}

fn mcp_headers(extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("content-type", "application/json".to_string()),
        ("accept", "application/json, text/event-stream".to_string()),
    ];
    headers.extend(extra.iter().map(|(name, value)| (*name, value.to_string())));
    headers
}

/// Starts a 2025-11-25 session; its id.
fn initialize(agent: &Agent) -> String {
    let message = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": { "name": "stead-bench", "version": "1" } },
    });
    let reply = agent.send(&agent.mcp_call(mcp_headers(&[]), &message));
    expect_success(&reply, "initialize");
    reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_string()
}

/// The call of `tool` with `arguments`, the `Way` asks.
fn call(agent: &Agent, way: Way, session: &str, tool: &str, arguments: &Value) -> Call {
    match way {
        Way::Http => agent.tool_call(tool, arguments),
        Way::Stateless => {
            let message = json!({
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": { "name": tool, "arguments": arguments, "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                } },
            });
            let headers = mcp_headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", tool),
            ]);
            agent.mcp_call(headers, &message)
        }
        Way::Session => {
            let message = json!({
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": { "name": tool, "arguments": arguments },
            });
            let headers = mcp_headers(&[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-session-id", session),
            ]);
            agent.mcp_call(headers, &message)
        }
    }
}

/// The tool's answer, from either kind of reply.
fn answer(way: Way, reply: &Reply) -> Value {
    match way {
        Way::Http => reply.json(),
        Way::Stateless | Way::Session => {
            let result = &reply.json()["result"];
            assert_eq!(result["isError"], false, "tool failed: {result}");
            result["structuredContent"].clone()
        }
    }
}

/// Sends `calls` rounds of the three ways, rotating the order; each way's
/// latencies.
fn measure(
    agent: &Agent,
    session: &str,
    tool: &str,
    arguments: &Value,
    rounds: usize,
) -> [Vec<Duration>; 3] {
    let calls: Vec<Call> = Way::ALL
        .iter()
        .map(|way| call(agent, *way, session, tool, arguments))
        .collect();
    let mut latencies: [Vec<Duration>; 3] = Default::default();
    for round in 0..rounds {
        for step in 0..Way::ALL.len() {
            let at = (round + step) % Way::ALL.len();
            let (elapsed, reply) = timed(|| agent.send(&calls[at]));
            expect_success(&reply, &format!("{tool} over {}", Way::ALL[at].label()));
            let _ = answer(Way::ALL[at], &reply);
            latencies[at].push(elapsed);
        }
    }
    latencies
}

pub fn run(agent: &Agent, rounds: usize, report: &mut Report) {
    let session = initialize(agent);
    let content: String = "stead mcp bench ".repeat(64);
    let read = json!({ "path": "/bench/read.txt" });
    let write = json!({ "path": "/bench/write.txt", "content": content });
    agent.tool(
        "write",
        &json!({ "path": "/bench/read.txt", "content": content }),
    );
    // The three ways answer the same.
    for way in Way::ALL {
        let reply = agent.send(&call(agent, way, &session, "read", &read));
        expect_success(&reply, way.label());
        assert_eq!(
            answer(way, &reply)["content"],
            content.as_str(),
            "{}",
            way.label()
        );
    }
    measure(agent, &session, "read", &read, WARM_UP);
    let section = format!(
        "a tool call over MCP vs its HTTP route: {rounds} rounds, the three in turn on one \
         connection"
    );
    for (tool, arguments) in [("read", &read), ("write", &write)] {
        eprintln!("mcp: {tool} x{rounds} each way");
        let [http, stateless, session_calls] = measure(agent, &session, tool, arguments, rounds);
        let floor = Latency::of(&http);
        for (way, samples) in [(Way::Stateless, stateless), (Way::Session, session_calls)] {
            let stats = Latency::of(&samples);
            for ((stat, figure), (_, baseline)) in stats.named().into_iter().zip(floor.named()) {
                report.rows.push(Row {
                    section: section.clone(),
                    measure: format!("{tool} {stat}, {}", way.label()),
                    figure: Ok(millis(figure)),
                    unit: Unit::Millis,
                    baseline: Ok(millis(baseline)),
                    baseline_label: format!("{} {stat}", Way::Http.label()),
                    aim: (stat == "p50").then_some(AIM),
                });
            }
        }
    }
}
