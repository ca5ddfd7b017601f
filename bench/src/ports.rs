//! `stead-bench ports`: a dev server on the agent's computer, reached
//! through the port route, and live sync both ways while it runs.
//!
//! Per mode (as in `computer`), on a fresh agent, a small Python server
//! ([`SERVER`], written into the workspace and started as a process that
//! declares its port, cwd `/`) answers a fixed body on `/hello`, serves the
//! workspace's files as `python3 -m http.server` does, and writes a file
//! on `/touch`. Three measures:
//!
//! 1. **Port route against direct**: `GET /hello` through
//!    `/agents/{id}/ports/{port}/hello` (Worker, agent object, `Computer`
//!    object, container), straight to the server from the host, and
//!    `POST /agents/{id}/ping` (the Worker-to-Durable-Object floor), sent
//!    in turn on keep-alive connections, rotating which goes first, after a
//!    warm-up. Aim: the route adds at most 1.2x the floor's median to the
//!    direct median. With real containers a fourth way, through the
//!    container's sidecar as workerd goes (`sidecar.rs`), shows what the
//!    sidecar alone costs.
//! 2. **Write to visible**: a file written through the file API with
//!    fresh content, polled through the port route until the server serves
//!    it; timed from the write's answer to the answer of the first poll
//!    that has it. Aim: median under 300 ms.
//! 3. **Back**: `/touch` makes the server write a file with fresh content;
//!    the file is polled with the `read` tool until it has it; timed from
//!    `/touch`'s answer (the file exists in the container by then) to the
//!    answer of the first read that has it. Aim: median under 1 s.
//!
//! Each sync sample starts after a pseudo-random wait of up to one alarm
//! tick, so the samples fall evenly over the agent's 500 ms tick instead of
//! locking to its phase (a write made just after the last one was seen
//! would always land at the same point of the tick). A sample not seen
//! within [`SYNC_LIMIT`] ends its measure: the row says so, with no
//! figure.

use std::time::{Duration, Instant};

use serde_json::json;
use stead_harness::computer::docker;
use stead_harness::{Client, Machine, Reply, Runtime};

use crate::agent::{expect_success, Agent, Call};
use crate::gen::Rng;
use crate::report::{Aim, Measured, Report, Row, Unit};
use crate::shell::unpanicked;
use crate::sidecar::Ingress;
use crate::stats::{millis, timed, Latency};

/// How much each measure does.
#[derive(Clone, Copy)]
pub struct Sizes {
    /// Rounds of the three requests of the route measure.
    rounds: usize,
    /// Samples of each sync direction.
    samples: usize,
}

impl Sizes {
    pub const FULL: Sizes = Sizes {
        rounds: 50,
        samples: 20,
    };
    pub const QUICK: Sizes = Sizes {
        rounds: 10,
        samples: 5,
    };
}

/// Untimed rounds before the route measure.
const WARM_UP: usize = 5;
/// Aim: the port route adds at most this times the floor's median.
const ROUTE_AIM: f64 = 1.2;
/// Aim: a write is served by the running process within this, median.
const VISIBLE_AIM_MS: f64 = 300.0;
/// Aim: a file the process writes is readable within this, median.
const BACK_AIM_MS: f64 = 1000.0;
/// Pause between two polls of a sync sample.
const POLL: Duration = Duration::from_millis(10);
/// A sync sample not seen within this is reported as not reached.
const SYNC_LIMIT: Duration = Duration::from_secs(5);
/// The agent's alarm tick while a process runs (`TICK_MS` in
/// crates/agent/src/processes/serve.rs).
const TICK_MS: usize = 500;
/// How long the server may take to answer its first request (a cold
/// container included).
const UP_LIMIT: Duration = Duration::from_secs(120);
/// The workspace folder the benchmark's files live in.
const DIR: &str = "bench-ports";
/// What `/hello` answers.
const HELLO: &[u8] = b"hello\n";

/// The benchmark's dev server (see the module docs). `sys.argv`: the port
/// and the address to listen on.
const SERVER: &str = r#"# stead-bench ports: the dev server (bench/src/ports.rs).
import http.server, os, sys, urllib.parse

class Handler(http.server.SimpleHTTPRequestHandler):
    # HTTP/1.1 keeps connections open (every answer has a length), and
    # without Nagle a header and its body leave at once.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/hello":
            self.answer(b"hello\n")
        elif url.path == "/touch":
            query = urllib.parse.parse_qs(url.query)
            name = os.path.basename(query["name"][0])
            os.makedirs("bench-ports/back", exist_ok=True)
            with open(os.path.join("bench-ports/back", name), "w") as out:
                out.write(query["content"][0])
            self.answer(b"written\n")
        else:
            super().do_GET()

    def answer(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # Quiet: every logged request would be output for the agent to keep.
    def log_message(self, *args):
        pass

port, address = int(sys.argv[1]), sys.argv[2]
http.server.ThreadingHTTPServer((address, port), Handler).serve_forever()
"#;

/// How the benchmark reaches the server without stead in between.
pub enum Direct<'a> {
    /// The local process: the server listens on the host's loopback.
    Loopback,
    /// Real containers: the server listens on every interface of its
    /// container, reached at the container's address on Docker's bridge
    /// network (found through the runtime once the container runs).
    Bridge(&'a Runtime),
    /// A Worker elsewhere (`--url`): no direct path; the reason.
    Unavailable(&'static str),
}

impl Direct<'_> {
    /// The address the server listens on.
    fn listen(&self) -> &'static str {
        match self {
            Direct::Loopback | Direct::Unavailable(_) => "127.0.0.1",
            Direct::Bridge(_) => "0.0.0.0",
        }
    }

    /// The ways to the server at `port` that bypass stead.
    fn bypass(&self, agent: &Agent, port: u16) -> Bypass {
        let client = |host: &str| Client::new(&format!("http://{host}:{port}"), None);
        match self {
            Direct::Loopback => Bypass {
                direct: Ok(client("127.0.0.1")),
                ingress: None,
            },
            Direct::Bridge(runtime) => match sidecar_of(runtime, agent) {
                Ok((sidecar, address)) => Bypass {
                    direct: Ok(client(&address)),
                    ingress: Some(Ingress::find(&sidecar, port)),
                },
                Err(why) => Bypass {
                    direct: Err(why.clone()),
                    ingress: Some(Err(why)),
                },
            },
            Direct::Unavailable(why) => Bypass {
                direct: Err(why.to_string()),
                ingress: None,
            },
        }
    }
}

/// The ways to the server that bypass stead.
struct Bypass {
    /// Straight to the server.
    direct: Result<Client, String>,
    /// Through the container's sidecar as workerd goes (see `sidecar.rs`);
    /// `None` where there is no sidecar.
    ingress: Option<Result<Ingress, String>>,
}

/// The sidecar of the agent's container (whose network the container
/// shares), and its address on Docker's bridge network.
fn sidecar_of(runtime: &Runtime, agent: &Agent) -> Result<(String, String), String> {
    let name = match unpanicked(|| Ok(runtime.machine(agent.id())))? {
        Machine::Container { name } => name,
        Machine::Local { .. } => return Err("the computer is a local process".into()),
    };
    let network = docker(&["inspect", "--format", "{{.HostConfig.NetworkMode}}", &name])?;
    let sidecar = network
        .strip_prefix("container:")
        .ok_or_else(|| format!("container {name} shares no other container's network: {network}"))?
        .to_string();
    let address = docker(&[
        "inspect",
        "--format",
        "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
        &sidecar,
    ])?;
    let address = address
        .split_whitespace()
        .next()
        .ok_or_else(|| format!("container {sidecar} has no address on a Docker network"))?
        .to_string();
    Ok((sidecar, address))
}

/// A port no other process on this machine holds now (in the
/// local-process mode every agent's processes share the host's ports).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("its address").port()
}

/// `GET /agents/{id}/ports/{port}{path}`.
fn port_call(agent: &Agent, port: u16, path: &str) -> Call {
    agent.route_call("GET", &format!("ports/{port}{path}"), Vec::new())
}

/// Writes the server into the workspace and starts it; its process id.
fn start_server(agent: &Agent, port: u16, listen: &str) -> String {
    agent.tool(
        "write",
        &json!({ "path": format!("/{DIR}/server.py"), "content": SERVER }),
    );
    let request = json!({
        "command": format!("exec python3 {DIR}/server.py {port} {listen}"),
        "cwd": "/",
        "ports": [port],
    });
    let reply = agent.send(&agent.tool_call("processes", &request));
    expect_success(&reply, "start the server");
    let process = reply.json();
    process["process"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no process id in {process}"))
        .to_string()
}

/// Polls `/hello` through the port route until the server answers.
fn wait_up(agent: &Agent, port: u16) {
    let call = port_call(agent, port, "/hello");
    let deadline = Instant::now() + UP_LIMIT;
    loop {
        let reply = agent.send(&call);
        if reply.status == 200 && reply.body == HELLO {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not answer within {UP_LIMIT:?}: HTTP {} {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn expect_hello(reply: &Reply, way: Way) {
    expect_success(reply, way.label());
    assert_eq!(reply.body, HELLO, "{}: another body", way.label());
}

/// One statistic of a [`Latency`].
type Stat = fn(&Latency) -> Duration;

/// How a request of the route measure travels.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Route,
    Direct,
    Ingress,
    Floor,
}

impl Way {
    const ALL: [Way; 4] = [Way::Route, Way::Direct, Way::Ingress, Way::Floor];

    fn label(self) -> &'static str {
        match self {
            Way::Route => "GET /hello through the port route",
            Way::Direct => "GET /hello straight to the server",
            Way::Ingress => "GET /hello through the sidecar's ingress",
            Way::Floor => "POST /ping",
        }
    }
}

/// Measures one mode's computer (`label` names it) on a fresh agent.
pub fn run(agent: &Agent, label: &str, direct: Direct, sizes: Sizes, report: &mut Report) {
    let section = format!("ports ({label})");
    let port = free_port();
    eprintln!("ports ({label}): starting the server on port {port}");
    let process = start_server(agent, port, direct.listen());
    wait_up(agent, port);
    let bypass = direct.bypass(agent, port);
    if let Err(why) = &bypass.direct {
        report.warn(format!("{section}: no direct path to the server: {why}"));
    }
    if let Some(Err(why)) = &bypass.ingress {
        report.warn(format!(
            "{section}: no path through the sidecar's ingress: {why}"
        ));
    }
    eprintln!("ports ({label}): {} rounds of the requests", sizes.rounds);
    route_against_direct(agent, port, &bypass, sizes.rounds, &section, report);
    // Seeded: the same waits every run.
    let mut rng = Rng::new(16);
    eprintln!(
        "ports ({label}): write to visible, {} samples",
        sizes.samples
    );
    write_to_visible(agent, port, sizes.samples, &mut rng, &section, report);
    eprintln!(
        "ports ({label}): back from the process, {} samples",
        sizes.samples
    );
    back_from_process(agent, port, sizes.samples, &mut rng, &section, report);
    let stop = agent.send(&agent.route_call("DELETE", &format!("processes/{process}"), Vec::new()));
    expect_success(&stop, "stop the server");
}

fn route_against_direct(
    agent: &Agent,
    port: u16,
    bypass: &Bypass,
    rounds: usize,
    section: &str,
    report: &mut Report,
) {
    let route = port_call(agent, port, "/hello");
    let ping = agent.ping_call();
    let ingress = bypass.ingress.as_ref().and_then(|i| i.as_ref().ok());
    let mut samples: [Vec<Duration>; 4] = Default::default();
    for round in 0..WARM_UP + rounds {
        for turn in 0..Way::ALL.len() {
            let index = (round + turn) % Way::ALL.len();
            let way = Way::ALL[index];
            let elapsed = match (way, &bypass.direct, ingress) {
                (Way::Route, _, _) => {
                    let (elapsed, reply) = timed(|| agent.send(&route));
                    expect_hello(&reply, way);
                    elapsed
                }
                (Way::Direct, Ok(client), _) => {
                    let (elapsed, reply) = timed(|| client.send("GET", "/hello", b""));
                    expect_hello(&reply, way);
                    elapsed
                }
                (Way::Ingress, _, Some(ingress)) => {
                    let (elapsed, body) = timed(|| ingress.get("/hello"));
                    let body = body.unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!(body, HELLO, "{}: another body", way.label());
                    elapsed
                }
                (Way::Floor, _, _) => {
                    let (elapsed, reply) = timed(|| agent.send(&ping));
                    expect_success(&reply, way.label());
                    elapsed
                }
                (Way::Direct, Err(_), _) | (Way::Ingress, _, None) => continue,
            };
            if round >= WARM_UP {
                samples[index].push(elapsed);
            }
        }
    }
    let [route, straight, through_ingress, floor] = &samples;
    let (route, floor) = (Latency::of(route), Latency::of(floor));
    let straight = bypass.direct.as_ref().map(|_| Latency::of(straight));
    let percentiles: [(&str, Stat); 2] = [("p50", |l| l.p50), ("p90", |l| l.p90)];
    for (stat, of) in percentiles {
        let direct = straight
            .as_ref()
            .map(|l| millis(of(l)))
            .map_err(|why| why.to_string());
        report.rows.push(millis_row(
            section,
            format!("{} ({stat}, {rounds} rounds)", Way::Route.label()),
            Ok(millis(of(&route))),
            direct.clone(),
            "straight to the server",
            None,
        ));
        // The aim is on the median; the p90 row shows the spread.
        report.rows.push(millis_row(
            section,
            format!("port route - direct ({stat})"),
            direct.map(|direct| millis(of(&route)) - direct),
            Ok(millis(of(&floor))),
            "POST /ping (Worker-to-DO floor)",
            (stat == "p50").then_some(Aim::AtMost(ROUTE_AIM)),
        ));
    }
    // What the sidecar alone costs, where there is one.
    if let Some(ingress) = &bypass.ingress {
        let figure = ingress
            .as_ref()
            .map(|_| millis(Latency::of(through_ingress).p50))
            .map_err(|why| why.to_string());
        let direct = straight
            .as_ref()
            .map(|l| millis(l.p50))
            .map_err(|why| why.to_string());
        report.rows.push(millis_row(
            section,
            format!("{}, a tunnel per request (p50)", Way::Ingress.label()),
            figure,
            direct,
            "straight to the server",
            None,
        ));
    }
}

/// A row of milliseconds in `section`.
fn millis_row(
    section: &str,
    measure: String,
    figure: Measured,
    baseline: Measured,
    baseline_label: &str,
    aim: Option<Aim>,
) -> Row {
    Row {
        section: section.into(),
        measure,
        figure,
        unit: Unit::Millis,
        baseline,
        baseline_label: baseline_label.into(),
        aim,
    }
}

/// Polls with `seen` every [`POLL`] until it holds; the time from the call
/// to the answer that held, or `None` after [`SYNC_LIMIT`].
fn poll_until(mut seen: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if seen() {
            return Some(start.elapsed());
        }
        if start.elapsed() > SYNC_LIMIT {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Waits a pseudo-random part of one alarm tick (see the module docs).
fn random_phase(rng: &mut Rng) {
    std::thread::sleep(Duration::from_millis(rng.between(0, TICK_MS) as u64));
}

/// The delays of `samples` sync samples, or why they stopped.
struct Synced {
    delays: Result<Vec<Duration>, String>,
    /// Round trips of the polls, for the resolution.
    polls: Vec<Duration>,
}

impl Synced {
    /// Runs `sample(i, polls)` for each sample, stopping at the first that
    /// is not seen; `unseen` says what was not, for the row (`not served`).
    fn collect(
        samples: usize,
        rng: &mut Rng,
        unseen: &str,
        mut sample: impl FnMut(usize, &mut Vec<Duration>) -> Option<Duration>,
    ) -> Synced {
        let mut polls = Vec::new();
        let mut delays = Vec::new();
        for i in 0..samples {
            random_phase(rng);
            match sample(i, &mut polls) {
                Some(delay) => delays.push(delay),
                None => {
                    let delays = Err(format!(
                        "{unseen} within {SYNC_LIMIT:?} (sample {} of {samples})",
                        i + 1
                    ));
                    return Synced { delays, polls };
                }
            }
        }
        Synced {
            delays: Ok(delays),
            polls,
        }
    }

    /// The rows: median against the aim, p90, and the poll's round trip.
    fn rows(&self, measure: &str, aim_ms: f64, section: &str, report: &mut Report) {
        let latency = self.delays.as_ref().map(|d| Latency::of(d));
        let figure = |of: Stat| -> Measured {
            latency
                .as_ref()
                .map(|l| millis(of(l)))
                .map_err(|e| e.to_string())
        };
        if let Err(why) = &self.delays {
            report.warn(format!("{section}: {measure}: {why}"));
        }
        let median = match &self.delays {
            Ok(delays) => format!("p50, {} samples", delays.len()),
            Err(_) => "p50".into(),
        };
        report.rows.push(millis_row(
            section,
            format!("{measure} ({median})"),
            figure(|l| l.p50),
            Ok(aim_ms),
            "aim",
            Some(Aim::AtMost(1.0)),
        ));
        report.rows.push(millis_row(
            section,
            format!("{measure} (p90)"),
            figure(|l| l.p90),
            Ok(aim_ms),
            "aim (for the median)",
            None,
        ));
        if !self.polls.is_empty() {
            let poll = Latency::of(&self.polls).p50 + POLL;
            report.rows.push(millis_row(
                section,
                "  resolution: one poll's round trip + pause (p50)".into(),
                Ok(millis(poll)),
                figure(|l| l.p50),
                "of the median above",
                None,
            ));
        }
    }
}

fn write_to_visible(
    agent: &Agent,
    port: u16,
    samples: usize,
    rng: &mut Rng,
    section: &str,
    report: &mut Report,
) {
    let path = format!("/{DIR}/seen.txt");
    let poll = port_call(agent, port, &path);
    let synced = Synced::collect(samples, rng, "not served", |i, polls| {
        let content = format!("edit {i} of agent {}\n", agent.id());
        agent.tool("write", &json!({ "path": path, "content": content }));
        poll_until(|| {
            let (elapsed, reply) = timed(|| agent.send(&poll));
            polls.push(elapsed);
            reply.status == 200 && reply.body == content.as_bytes()
        })
    });
    synced.rows(
        "write -> served by the process",
        VISIBLE_AIM_MS,
        section,
        report,
    );
}

fn back_from_process(
    agent: &Agent,
    port: u16,
    samples: usize,
    rng: &mut Rng,
    section: &str,
    report: &mut Report,
) {
    let synced = Synced::collect(samples, rng, "not readable", |i, polls| {
        let name = format!("back-{i}.txt");
        let content = format!("back-{i}-of-{}", agent.id());
        let touch = port_call(
            agent,
            port,
            &format!("/touch?name={name}&content={content}"),
        );
        expect_success(&agent.send(&touch), "touch");
        let read = agent.tool_call("read", &json!({ "path": format!("/{DIR}/back/{name}") }));
        poll_until(|| {
            let (elapsed, reply) = timed(|| agent.send(&read));
            polls.push(elapsed);
            reply.status == 200 && reply.json()["content"] == content.as_str()
        })
    });
    synced.rows(
        "process writes -> readable through the file API",
        BACK_AIM_MS,
        section,
        report,
    );
}
