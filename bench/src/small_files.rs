//! Measure 1: create / read / stat / delete of many small files, one
//! sequential request at a time, against the transport floor (a ping to the
//! same agent) interleaved with them.

use std::time::Duration;

use serde_json::{json, Value};
use stead_harness::Reply;

use crate::agent::{expect_success, Agent, Call};
use crate::gen::{text, Rng};
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{millis, timed, Latency};

/// Aim: each statistic within 15% of the floor's.
const AIM: Aim = Aim::AtMost(1.15);
/// Aim: the floor within 10% of a bare round trip to the object.
const FLOOR_AIM: Aim = Aim::AtMost(1.1);
/// Files are spread over this many directories.
const DIRECTORIES: usize = 10;
/// Untimed requests first, so connection setup and first-use costs are not
/// measured.
const WARM_UP: usize = 50;

struct SmallFile {
    path: String,
    content: String,
}

fn files(count: usize) -> Vec<SmallFile> {
    let mut rng = Rng::new(1);
    (0..count)
        .map(|i| {
            let len = rng.between(100, 1000);
            SmallFile {
                path: format!("/small/dir{}/file{i:05}.txt", i % DIRECTORIES),
                content: text(&mut rng, len),
            }
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Op {
    Create,
    Read,
    Stat,
    Delete,
}

impl Op {
    const ALL: [Op; 4] = [Op::Create, Op::Read, Op::Stat, Op::Delete];

    fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Read => "read",
            Op::Stat => "stat",
            Op::Delete => "delete",
        }
    }

    fn tool(self) -> &'static str {
        match self {
            Op::Create => "write",
            Op::Read => "read",
            Op::Stat => "stat",
            Op::Delete => "rm",
        }
    }

    fn body(self, file: &SmallFile) -> Value {
        match self {
            Op::Create => json!({ "path": file.path, "content": file.content }),
            _ => json!({ "path": file.path }),
        }
    }
}

/// Latencies of one phase: the operation's and the floor's, same count.
struct Phase {
    op: Vec<Duration>,
    floor: Vec<Duration>,
    replies: Vec<Reply>,
    pings: Vec<Reply>,
}

/// Sends each call with a ping next to it, alternating which goes first so
/// neither always follows the other.
fn interleaved(agent: &Agent, calls: &[Call]) -> Phase {
    let ping = agent.ping_call();
    let mut phase = Phase {
        op: Vec::with_capacity(calls.len()),
        floor: Vec::with_capacity(calls.len()),
        replies: Vec::with_capacity(calls.len()),
        pings: Vec::with_capacity(calls.len()),
    };
    for (i, call) in calls.iter().enumerate() {
        let send_op = |phase: &mut Phase| {
            let (elapsed, reply) = timed(|| agent.send(call));
            phase.op.push(elapsed);
            phase.replies.push(reply);
        };
        let send_ping = |phase: &mut Phase| {
            let (elapsed, reply) = timed(|| agent.send(&ping));
            expect_success(&reply, "ping");
            phase.floor.push(elapsed);
            phase.pings.push(reply);
        };
        if i % 2 == 0 {
            send_op(&mut phase);
            send_ping(&mut phase);
        } else {
            send_ping(&mut phase);
            send_op(&mut phase);
        }
    }
    phase
}

fn warm_up(agent: &Agent) {
    let file = SmallFile {
        path: "/warm-up.txt".into(),
        content: "warm".into(),
    };
    for _ in 0..WARM_UP {
        expect_success(&agent.send(&agent.ping_call()), "ping");
        for op in Op::ALL {
            agent.tool(op.tool(), &op.body(&file));
        }
    }
}

/// Checks every reply, and that reads return what was written.
fn verify(op: Op, files: &[SmallFile], replies: &[Reply], report: &mut Report) {
    for (file, reply) in files.iter().zip(replies) {
        expect_success(reply, &format!("{} {}", op.name(), file.path));
    }
    if let Op::Read = op {
        let wrong = files
            .iter()
            .zip(replies)
            .filter(|(file, reply)| reply.json()["content"].as_str() != Some(&file.content))
            .count();
        if wrong > 0 {
            report.warn(format!(
                "{wrong} small-file reads returned other content than was written"
            ));
        }
    }
}

fn rows(section: &str, op: Op, phase: &Phase) -> impl Iterator<Item = Row> {
    let (op_stats, floor_stats) = (Latency::of(&phase.op), Latency::of(&phase.floor));
    let section = section.to_string();
    op_stats.named().into_iter().zip(floor_stats.named()).map(
        move |((stat, figure), (_, floor))| Row {
            section: section.clone(),
            measure: format!("{} {stat}", op.name()),
            figure: Ok(millis(figure)),
            unit: Unit::Millis,
            baseline: Ok(millis(floor)),
            baseline_label: format!("ping {stat}"),
            aim: Some(AIM),
        },
    )
}

pub fn run(agent: &Agent, count: usize, report: &mut Report) {
    let files = files(count);
    warm_up(agent);
    let section = format!(
        "small files: {count} files, 100-1000 B, {DIRECTORIES} dirs; sequential on one \
         connection, vs POST /ping interleaved"
    );
    let mut breakdowns: Vec<(&str, Vec<Reply>)> = Vec::new();
    let mut pings = Vec::new();
    for op in Op::ALL {
        eprintln!("small files: {} x{count}", op.name());
        let calls: Vec<Call> = files
            .iter()
            .map(|file| agent.tool_call(op.tool(), &op.body(file)))
            .collect();
        let phase = interleaved(agent, &calls);
        verify(op, &files, &phase.replies, report);
        report.rows.extend(rows(&section, op, &phase));
        breakdowns.push((op.name(), phase.replies));
        pings.extend(phase.pings);
    }
    floor(agent, count, report);
    breakdowns.push(("ping", pings));
    let section = "breakdown: Server-Timing of the requests above (local development), \
                   means; (n sql) = SQL statements";
    let mut timed = false;
    for (what, replies) in &breakdowns {
        let replies: Vec<&Reply> = replies.iter().collect();
        timed |= crate::breakdown::add(report, section, what, &replies);
    }
    if !timed {
        report.warn("no reply carried Server-Timing: not a local development Worker".into());
    }
}

/// The floor itself: the ping against a bare round trip to the agent's
/// object (answered there before any of the agent's code), interleaved.
fn floor(agent: &Agent, count: usize, report: &mut Report) {
    eprintln!("small files: ping vs bare round trip x{count}");
    let bare = agent.bare_call();
    if agent.send(&bare).status != 200 {
        report.warn("no bare round trip route: not a local development Worker".into());
        return;
    }
    let calls: Vec<Call> = (0..count).map(|_| agent.bare_call()).collect();
    let phase = interleaved(agent, &calls);
    let (bare_stats, ping_stats) = (Latency::of(&phase.op), Latency::of(&phase.floor));
    let section = format!(
        "floor: {count} pings vs POST /_bench/bare/{{id}} (reaches the object, answered \
         before any agent code), interleaved"
    );
    for ((stat, ping), (_, bare)) in ping_stats.named().into_iter().zip(bare_stats.named()) {
        report.rows.push(Row {
            section: section.clone(),
            measure: format!("ping {stat}"),
            figure: Ok(millis(ping)),
            unit: Unit::Millis,
            baseline: Ok(millis(bare)),
            baseline_label: format!("bare DO {stat}"),
            aim: Some(FLOOR_AIM),
        });
    }
}
