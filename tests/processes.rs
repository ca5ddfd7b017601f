//! End-to-end: dev servers on the computer. The real Worker under
//! `wrangler dev` starts a real `python3 -m http.server` on the agent's
//! computer (in real containers when a Docker engine runs, else as a local
//! process), lists it, serves its pages through the port route, sees an
//! edit made with the file API within 2 s (live sync), passes the server's
//! redirects and cookies through to the client rewritten under the port's
//! prefix, shares the port with a link that works without a token until it
//! is revoked or expires,
//! refuses bad input with structured errors, and stops the process; a
//! process whose computer is killed is lost, then started again by its
//! policy on a fresh computer with the agent's latest files; a process
//! that writes 5,000 files has them all back in the workspace while it
//! runs, a bounded report at a time; a small Node server's WebSocket
//! echoes through the port route.

mod common;

use std::time::{Duration, Instant};

use common::{expect_error, expect_ok, expect_status, mint, with_runtime, Agent};
use serde_json::{json, Value};
use stead_harness::{temp_state, Client, ComputerMode, Reply, Runtime, Socket};

/// A port no other process on this machine holds now (in the local-process
/// mode every agent's processes share the machine's ports).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// Starts `python3 -m http.server` on `port` in `/site`; its record.
fn serve(agent: &Agent, port: u16) -> Value {
    let reply = agent.send(
        "POST",
        "/processes",
        json!({
            "command": format!("exec python3 -m http.server {port} --bind 127.0.0.1"),
            "cwd": "/site",
            "ports": [port],
        })
        .to_string()
        .as_bytes(),
    );
    expect_status(&reply, 201);
    reply.json()["process"].clone()
}

/// `GET` of `path` under the port's prefix, until it answers 200 (the
/// server may still be starting); the answer.
fn fetch_when_up(client: &Client, agent: &Agent, port: u16, path: &str) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = client.send("GET", &agent.url(&format!("/ports/{port}{path}")), b"");
        if reply.status == 200 {
            return reply;
        }
        assert!(
            Instant::now() < deadline,
            "the port never served {path}: {} {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn text(reply: &Reply) -> String {
    String::from_utf8_lossy(&reply.body).into_owned()
}

/// The origin of `port` of `agent` under the runtime's ports host
/// (wrangler.toml: `localhost`), with the runtime's port.
fn port_origin(agent: &Agent, port: u16) -> String {
    let listening = common::base().rsplit(':').next().expect("a port");
    let label = stead_agent::front::label(&agent.id, port).expect("a label");
    format!("http://{label}.localhost:{listening}")
}

/// A request to `url` on a port's own origin, sent to the runtime's
/// address with the URL's host in `Host` (this machine need not resolve
/// `*.localhost`, as browsers do).
fn on_origin(method: &str, url: &str, headers: &[(&str, &str)]) -> Reply {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let target = if target.is_empty() { "/" } else { target };
    let mut all = vec![("Host", authority)];
    all.extend_from_slice(headers);
    common::raw(method, target, &all, b"")
}

#[test]
fn a_dev_server_is_served_through_its_port_sees_edits_and_stops() {
    let agent = Agent::new("procs-dev-server");
    let client = with_runtime(|runtime| {
        eprintln!("computer: {}", runtime.mode().describe());
        runtime.client()
    });
    agent.write("/site/index.html", "<h1>first</h1>\n");
    let port = free_port();
    let process = serve(&agent, port);
    let id = process["id"].as_str().expect("a process id").to_string();
    assert_eq!(process["state"], "running", "{process}");
    assert_eq!(process["restart"], "never", "{process}");

    // Listed, and readable one by one.
    let listed = expect_ok(&agent.send("GET", "/processes", b""));
    let ids: Vec<&str> = listed["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(ids, [id.as_str()], "{listed}");
    let one = expect_ok(&agent.send("GET", &format!("/processes/{id}"), b""));
    assert_eq!(one["process"]["ports"], json!([port]), "{one}");

    // Its page through the port route.
    let page = fetch_when_up(&client, &agent, port, "/index.html");
    assert_eq!(text(&page), "<h1>first</h1>\n");
    // The port's root is the server's `/` (which serves the index).
    let root = fetch_when_up(&client, &agent, port, "");
    assert_eq!(text(&root), "<h1>first</h1>\n");

    // An edit through the file API is served within 2 s.
    agent.write("/site/index.html", "<h1>second</h1>\n");
    let edited = Instant::now();
    loop {
        let page = fetch_when_up(&client, &agent, port, "/index.html");
        if text(&page) == "<h1>second</h1>\n" {
            break;
        }
        assert!(
            edited.elapsed() < Duration::from_secs(2),
            "the edit was not served within 2 s: {}",
            text(&page)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("edit served after {:?}", edited.elapsed());

    // Its output is a job log, readable by offset.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = expect_ok(&agent.send("GET", &format!("/processes/{id}/output"), b""));
        let all: String = out["output"]
            .as_array()
            .expect("output pieces")
            .iter()
            .filter_map(|p| p["data"].as_str())
            .collect();
        if all.contains("GET /index.html") {
            break;
        }
        assert!(Instant::now() < deadline, "no request log: {out}");
        std::thread::sleep(Duration::from_millis(200));
    }

    // Stopped: the port no longer serves, the record says how it ended.
    let stopped = expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
    assert_eq!(stopped["process"]["state"], "exited", "{stopped}");
    expect_error(
        &client.send("GET", &agent.url(&format!("/ports/{port}/")), b""),
        404,
        "PORT_NOT_SERVED",
    );
}

#[test]
fn a_share_link_opens_its_port_without_a_token_until_revoked_or_expired() {
    let agent = Agent::new("procs-share");
    let anonymous = with_runtime(|runtime| runtime.client().with_token(None));
    agent.write("/site/index.html", "shared\n");
    let port = free_port();
    let process = serve(&agent, port);
    let id = process["id"].as_str().unwrap().to_string();
    let authorized = with_runtime(|runtime| runtime.client());
    fetch_when_up(&authorized, &agent, port, "/index.html");

    // Without a credential the port is closed.
    expect_error(
        &anonymous.send("GET", &agent.url(&format!("/ports/{port}/index.html")), b""),
        401,
        "UNAUTHORIZED",
    );

    let share = |ttl: i64| -> Value {
        let reply = agent.send(
            "POST",
            &format!("/ports/{port}/share"),
            json!({ "ttl_seconds": ttl }).to_string().as_bytes(),
        );
        expect_status(&reply, 201);
        reply.json()["share"].clone()
    };
    let link = share(600);
    let url = link["url"].as_str().expect("a share URL");
    // The link is on the port's own origin, never the API's.
    let origin = port_origin(&agent, port);
    let query = url
        .strip_prefix(&format!("{origin}/?"))
        .unwrap_or_else(|| panic!("a link on {origin}: {url}"));
    assert!(query.starts_with("stead_share=shr_"), "{url}");
    let page = on_origin("GET", &format!("{origin}/index.html?{query}"), &[]);
    expect_status(&page, 200);
    assert_eq!(text(&page), "shared\n");
    // The answer keeps the capability as a cookie for the page's own
    // requests: host-only (no Domain), so no other port's origin under the
    // same parent receives it, on every path of the origin.
    let cookie = page.header("set-cookie").expect("a cookie").to_string();
    let attributes: Vec<String> = cookie
        .split(';')
        .map(|part| part.trim().to_ascii_lowercase())
        .collect();
    assert!(
        !attributes.iter().any(|a| a.starts_with("domain")),
        "{cookie}"
    );
    for wanted in ["path=/", "httponly", "samesite=lax"] {
        assert!(attributes.iter().any(|a| a == wanted), "{cookie}");
    }
    // Plain HTTP here: a Secure cookie would never come back.
    assert!(!attributes.iter().any(|a| a == "secure"), "{cookie}");
    let pair = cookie.split(';').next().unwrap().to_string();
    let again = on_origin("GET", &format!("{origin}/index.html"), &[("Cookie", &pair)]);
    expect_status(&again, 200);
    assert_eq!(text(&again), "shared\n");

    // A forged link (its signature changed) is refused.
    let forged = {
        let mut forged = query.to_string();
        let last = forged.pop().unwrap();
        forged.push(if last == '0' { '1' } else { '0' });
        forged
    };
    expect_error(
        &on_origin("GET", &format!("{origin}/index.html?{forged}"), &[]),
        401,
        "SHARE_LINK_INVALID",
    );
    // A link opens only its port on its own origin: not the port's path on
    // the API's origin, nor the agent's other routes.
    let api_path = agent.url(&format!("/ports/{port}/index.html"));
    expect_error(
        &anonymous.send("GET", &format!("{api_path}?{query}"), b""),
        401,
        "UNAUTHORIZED",
    );
    let other = anonymous.send("GET", &format!("{}?{query}", agent.url("/processes")), b"");
    assert!(
        matches!(other.status, 401 | 403),
        "a share link opened another route: {} {}",
        other.status,
        text(&other)
    );

    // Revoked: refused from then on.
    let share_id = link["id"].as_str().expect("a share id");
    expect_ok(&agent.send("DELETE", &format!("/shares/{share_id}"), b""));
    expect_error(
        &on_origin("GET", &format!("{origin}/index.html?{query}"), &[]),
        401,
        "SHARE_LINK_REVOKED",
    );

    // Expired: a two-second link stops working (it lives two to three
    // seconds: expiry is in whole seconds, rounded up).
    let short = share(2);
    let url = short["url"].as_str().unwrap();
    expect_status(&on_origin("GET", url, &[]), 200);
    std::thread::sleep(Duration::from_millis(3100));
    expect_error(&on_origin("GET", url, &[]), 401, "SHARE_LINK_EXPIRED");

    expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
}

#[test]
fn a_port_has_an_origin_of_its_own_where_no_api_answers() {
    let agent = Agent::new("Procs-Origin");
    let client = with_runtime(|runtime| runtime.client());
    // A page with absolute links: on its own origin they just work.
    agent.write("/site/index.html", "<script src=\"/app.js\"></script>\n");
    agent.write("/site/app.js", "console.log(1)\n");
    let port = free_port();
    let process = serve(&agent, port);
    let id = process["id"].as_str().unwrap().to_string();
    fetch_when_up(&client, &agent, port, "/");
    let origin = port_origin(&agent, port);
    assert!(
        origin.starts_with(&format!("http://{port}--procs-0-origin.localhost:")),
        "{origin}"
    );
    let bearer = common::bearer();
    let token = [("Authorization", bearer.as_str())];

    // With a token, the page at `/` and its absolute link at `/app.js`.
    let page = on_origin("GET", &format!("{origin}/"), &token);
    expect_status(&page, 200);
    assert_eq!(text(&page), "<script src=\"/app.js\"></script>\n");
    assert_eq!(page.header("content-security-policy"), None);
    let script = on_origin("GET", &format!("{origin}/app.js"), &token);
    expect_status(&script, 200);
    assert_eq!(text(&script), "console.log(1)\n");

    // The API's routes are the dev server's paths there: its own 404s.
    for path in [
        "/health".to_string(),
        format!("/agents/{}/processes", agent.id),
        format!("/agents/{}/ports/{port}/index.html", agent.id),
        "/tools".to_string(),
    ] {
        let reply = on_origin("GET", &format!("{origin}{path}"), &token);
        expect_status(&reply, 404);
        assert!(
            !text(&reply).contains("\"error\"") && !text(&reply).contains("\"ok\""),
            "{path} answered by the API: {}",
            text(&reply)
        );
    }
    // A host under the ports host that names no port: nothing answers.
    let listening = common::base().rsplit(':').next().unwrap();
    for host in ["api.localhost", "80-a-3.localhost", "x.80-a.localhost"] {
        let reply = on_origin("GET", &format!("http://{host}:{listening}/health"), &token);
        expect_error(&reply, 404, "NOT_A_PORT_ORIGIN");
    }
    // Without a credential, refused.
    expect_error(
        &on_origin("GET", &format!("{origin}/"), &[]),
        401,
        "UNAUTHORIZED",
    );

    // On the API's origin the same page is answered sandboxed: its scripts
    // run with an opaque origin, and nothing is sniffed.
    let sandboxed = client.send("GET", &agent.url(&format!("/ports/{port}/")), b"");
    expect_status(&sandboxed, 200);
    let policy = sandboxed
        .header("content-security-policy")
        .expect("a sandbox policy");
    assert!(
        policy.starts_with("sandbox") && !policy.contains("allow-same-origin"),
        "{policy}"
    );
    assert_eq!(sandboxed.header("x-content-type-options"), Some("nosniff"));

    expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
}

/// A dev server that redirects with a cookie: `GET /login` answers `302
/// Location: /target` with `Set-Cookie: session=...; Path=/`, `/target`
/// answers 200. `python3 -m http.server`'s own `301 /about -> /about/`
/// comes from the directory `/site/about`.
const REDIRECTING_SERVER: &str = r#"
import http.server, sys

class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/login":
            self.send_response(302)
            self.send_header("Location", "/target")
            self.send_header("Set-Cookie", "session=abc; Path=/; HttpOnly")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/target":
            body = b"the target\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()

http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"#;

#[test]
fn a_dev_servers_redirects_pass_under_the_prefix_and_as_they_are_on_its_origin() {
    let agent = Agent::new("procs-redirects");
    let client = with_runtime(|runtime| runtime.client());
    agent.write("/site/server.py", REDIRECTING_SERVER);
    agent.write("/site/about/index.html", "about\n");
    let port = free_port();
    let reply = agent.send(
        "POST",
        "/processes",
        json!({
            "command": format!("exec python3 server.py {port}"),
            "cwd": "/site",
            "ports": [port],
        })
        .to_string()
        .as_bytes(),
    );
    expect_status(&reply, 201);
    let id = reply.json()["process"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        text(&fetch_when_up(&client, &agent, port, "/target")),
        "the target\n"
    );
    let prefix = format!("/agents/{}/ports/{port}", agent.id);

    // The 302 itself, not the page it points to: its Location and its
    // cookie moved under the port's prefix.
    let login = client.send("GET", &agent.url(&format!("/ports/{port}/login")), b"");
    expect_status(&login, 302);
    assert_eq!(
        login.header("location"),
        Some(format!("{prefix}/target").as_str()),
        "{:?}",
        login.headers
    );
    let cookie = login.header("set-cookie").expect("the dev server's cookie");
    assert!(cookie.starts_with("session=abc"), "{cookie}");
    assert!(cookie.contains(&format!("Path={prefix}/")), "{cookie}");

    // http.server's own redirect of a directory to its slash form.
    let about = client.send("GET", &agent.url(&format!("/ports/{port}/about")), b"");
    expect_status(&about, 301);
    assert_eq!(
        about.header("location"),
        Some(format!("{prefix}/about/").as_str())
    );

    // Through a share link, on the port's own origin: the dev server's
    // paths are the URL's, so its redirect and cookie pass as they are.
    let share = agent.send(
        "POST",
        &format!("/ports/{port}/share"),
        json!({ "ttl_seconds": 600 }).to_string().as_bytes(),
    );
    expect_status(&share, 201);
    let url = share.json()["share"]["url"].as_str().unwrap().to_string();
    let (origin, query) = url.split_once("/?").expect("a link to the origin's root");
    let shared = on_origin("GET", &format!("{origin}/login?{query}"), &[]);
    expect_status(&shared, 302);
    assert_eq!(shared.header("location"), Some("/target"));
    let cookies: Vec<&str> = shared
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, value)| value.as_str())
        .collect();
    assert!(
        cookies.contains(&"session=abc; Path=/; HttpOnly"),
        "{cookies:?}"
    );

    expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
}

#[test]
fn bad_process_and_port_requests_get_structured_errors_and_start_nothing() {
    let agent = Agent::new("procs-bad-input");
    agent.write("/site/index.html", "x\n");
    let client = with_runtime(|runtime| runtime.client());
    let post = |body: Value| agent.send("POST", "/processes", body.to_string().as_bytes());

    expect_error(&post(json!({ "command": "" })), 400, "INVALID_REQUEST");
    expect_error(
        &post(json!({ "command": "true", "restart": "sometimes" })),
        400,
        "INVALID_REQUEST",
    );
    expect_error(
        &post(json!({ "command": "true", "ports": [8080] })),
        400,
        "INVALID_REQUEST",
    );
    expect_error(
        &post(json!({ "command": "true", "cwd": "/no/such/dir" })),
        404,
        "ENOENT",
    );
    let listed = expect_ok(&agent.send("GET", "/processes", b""));
    assert_eq!(listed["processes"], json!([]), "nothing started: {listed}");

    // Unknown process.
    expect_error(
        &agent.send("GET", "/processes/p-nope", b""),
        404,
        "PROCESS_NOT_FOUND",
    );
    expect_error(
        &agent.send("POST", "/processes/p-nope/signal", br#"{"signal":"HUP"}"#),
        404,
        "PROCESS_NOT_FOUND",
    );
    expect_error(
        &agent.send("DELETE", "/processes/p-nope", b""),
        404,
        "PROCESS_NOT_FOUND",
    );
    // A port no process declared, and one that is not a port.
    expect_error(
        &client.send("GET", &agent.url("/ports/4999/"), b""),
        404,
        "PORT_NOT_SERVED",
    );
    expect_error(
        &client.send("GET", &agent.url("/ports/70000/"), b""),
        400,
        "INVALID_REQUEST",
    );

    // A running process: a signal that does not exist is refused, and it
    // runs on.
    let port = free_port();
    let process = serve(&agent, port);
    let id = process["id"].as_str().unwrap().to_string();
    expect_error(
        &agent.send(
            "POST",
            &format!("/processes/{id}/signal"),
            br#"{"signal":"SIGNOPE"}"#,
        ),
        400,
        "INVALID_REQUEST",
    );
    // A port it did not declare is not served.
    let undeclared = if port == 65535 { port - 1 } else { port + 1 };
    expect_error(
        &client.send("GET", &agent.url(&format!("/ports/{undeclared}/")), b""),
        404,
        "PORT_NOT_SERVED",
    );
    let after = expect_ok(&agent.send("GET", &format!("/processes/{id}"), b""));
    assert_eq!(after["process"]["state"], "running", "{after}");
    expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
}

/// The process's output so far.
fn output_of(agent: &Agent, id: &str) -> String {
    let out = expect_ok(&agent.send("GET", &format!("/processes/{id}/output"), b""));
    out["output"]
        .as_array()
        .expect("output pieces")
        .iter()
        .filter_map(|p| p["data"].as_str())
        .collect()
}

/// Polls process `id` until `done` holds for it (at most 60 s).
fn wait_process(agent: &Agent, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let process =
            expect_ok(&agent.send("GET", &format!("/processes/{id}"), b""))["process"].clone();
        if done(&process) {
            return process;
        }
        assert!(Instant::now() < deadline, "{what}: {process}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_process_whose_computer_is_killed_is_lost_then_restarted_by_its_policy() {
    let state = temp_state();
    let runtime = Runtime::start(state.path());
    eprintln!("computer: {}", runtime.mode().describe());
    let agent = Agent::create_on(runtime.client(), "procs-killed");
    agent.write("/app/version.txt", "v1\n");
    let reply = agent.send(
        "POST",
        "/processes",
        json!({
            "command": "echo started $(cat version.txt); exec sleep 120",
            "cwd": "/app",
            "restart": "always",
        })
        .to_string()
        .as_bytes(),
    );
    expect_status(&reply, 201);
    let id = reply.json()["process"]["id"].as_str().unwrap().to_string();
    let first = wait_process(&agent, &id, "never ran", |_| {
        output_of(&agent, &id).contains("started v1")
    });
    assert_eq!(first["restarts"], 0, "{first}");
    agent.write("/app/version.txt", "v2\n");

    // The computer dies (a container that vanishes): the process does not
    // end by anyone's choice, so a fresh computer is brought up for it and
    // it starts again there with the workspace as it is now.
    let machine = runtime.machine(&agent.id);
    machine.kill();
    let again = wait_process(&agent, &id, "never started again", |p| {
        p["state"] == "running" && p["restarts"] == 1
    });
    // A new start (a fresh container's pids may repeat the old ones).
    assert!(
        again["started_ms"].as_i64() > first["started_ms"].as_i64(),
        "started again: {again}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !output_of(&agent, &id).contains("started v2") {
        assert!(
            Instant::now() < deadline,
            "the restarted process never ran on the latest files: {}",
            output_of(&agent, &id)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
}

#[test]
fn a_stop_holds_until_the_next_command_which_brings_an_always_process_back() {
    let agent = Agent::new("procs-stop-holds");
    let mode = with_runtime(|runtime| runtime.mode());
    let reply = agent.send(
        "POST",
        "/processes",
        json!({ "command": "echo up; exec sleep 600", "restart": "always" })
            .to_string()
            .as_bytes(),
    );
    expect_status(&reply, 201);
    let id = reply.json()["process"]["id"].as_str().unwrap().to_string();
    wait_process(&agent, &id, "never ran", |_| {
        output_of(&agent, &id).contains("up")
    });

    let stopped = expect_ok(&agent.send("POST", "/computer/stop", b""));
    if mode == ComputerMode::LocalProcess {
        // The one local program is never stopped from the Worker: nothing
        // is lost (README, "The computer").
        assert_eq!(stopped["computer"]["state"], "running", "{stopped}");
        let process = wait_process(&agent, &id, "still running", |_| true);
        assert_eq!(process["state"], "running", "{process}");
        expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
        return;
    }
    assert_eq!(stopped["computer"]["state"], "stopped", "{stopped}");
    let lost = wait_process(&agent, &id, "lost at once", |_| true);
    assert_eq!(lost["state"], "lost", "{lost}");
    // The stop holds: several ticks later nothing has brought a computer
    // back for the process.
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(300));
        let computer = expect_ok(&agent.send("GET", "/computer", b""));
        assert_eq!(computer["computer"]["state"], "stopped", "{computer}");
        let process = wait_process(&agent, &id, "read", |_| true);
        assert_eq!(process["state"], "lost", "{process}");
    }
    // The next command brings the computer up, and the process with it.
    let ran = agent.ok(
        "exec",
        json!({ "command": "echo hi", "backend": "computer" }),
    );
    assert_eq!(ran["stdout"], "hi\n", "{ran}");
    let back = wait_process(&agent, &id, "never came back", |p| {
        p["state"] == "running" && p["restarts"] == 1
    });
    assert_eq!(back["restarts"], 1, "{back}");
    expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
}

/// A WebSocket echo server in plain Node (no packages): the RFC 6455
/// handshake, then each masked text frame from the client (under 126
/// bytes) sent back unmasked, prefixed `echo: `.
const ECHO_SERVER: &str = r#"
const http = require('http'), crypto = require('crypto');
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const server = http.createServer((req, res) => res.end('plain http\n'));
server.on('upgrade', (req, socket) => {
  const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + GUID).digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
    'Sec-WebSocket-Accept: ' + accept + '\r\n\r\n');
  socket.on('data', (frame) => {
    if ((frame[0] & 0x0f) !== 1) return;
    const len = frame[1] & 0x7f, mask = frame.slice(2, 6);
    const text = Buffer.from(frame.slice(6, 6 + len).map((b, i) => b ^ mask[i % 4])).toString();
    const out = Buffer.from('echo: ' + text);
    socket.write(Buffer.concat([Buffer.from([0x81, out.length]), out]));
  });
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => console.log('listening'));
"#;

/// Files the many-files process writes.
const MANY_FILES: usize = 5_000;

/// Writes COUNT small files, says so, and runs on.
const WRITE_MANY: &str = r#"import os, time
os.makedirs("out", exist_ok=True)
for i in range(COUNT):
    with open(f"out/f{i:05}.txt", "w") as f:
        f.write(f"file {i}\n")
with open("done", "w") as f:
    f.write("yes\n")
print("wrote", flush=True)
time.sleep(600)
"#;

#[test]
fn a_process_writing_thousands_of_files_brings_them_all_back_while_it_runs() {
    let agent = Agent::new("procs-many-files");
    let script = WRITE_MANY.replace("COUNT", &MANY_FILES.to_string());
    agent.write("/build/write.py", &script);
    let reply = agent.send(
        "POST",
        "/processes",
        json!({ "command": "exec python3 write.py", "cwd": "/build" })
            .to_string()
            .as_bytes(),
    );
    expect_status(&reply, 201);
    let id = reply.json()["process"]["id"].as_str().unwrap().to_string();

    // No command runs: only live sync can bring them.
    let deadline = Instant::now() + Duration::from_secs(180);
    let live = loop {
        let computer = expect_ok(&agent.send("GET", "/computer", b""));
        let live = computer["live_sync"].clone();
        if live["files"].as_u64() >= Some(MANY_FILES as u64 + 2) {
            break live;
        }
        assert!(
            Instant::now() < deadline,
            "not every file came back within 180 s: {live}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let page = agent.ok(
        "glob",
        json!({ "pattern": "*.txt", "path": "/build/out", "limit": 10000 }),
    );
    assert_eq!(
        page["matches"].as_array().unwrap().len(),
        MANY_FILES,
        "{live}"
    );
    assert_eq!(agent.read("/build/done"), "yes\n");
    for i in [0, MANY_FILES / 2, MANY_FILES - 1] {
        assert_eq!(
            agent.read(&format!("/build/out/f{i:05}.txt")),
            format!("file {i}\n")
        );
    }
    // In bounded memory: one bounded report at a time.
    let limit = live["report_limit"].as_u64().unwrap();
    assert!(limit < MANY_FILES as u64, "{live}");
    assert!(live["largest_report"].as_u64().unwrap() <= limit, "{live}");
    assert!(
        live["pulls"].as_u64().unwrap() >= (MANY_FILES as u64).div_ceil(limit),
        "{live}"
    );
    assert_eq!(live["last_error"], Value::Null, "{live}");
    let process = expect_ok(&agent.send("GET", &format!("/processes/{id}"), b""));
    assert_eq!(process["process"]["state"], "running", "{process}");
    expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
}

#[test]
fn a_websocket_echoes_through_the_port_route() {
    let agent = Agent::new("procs-websocket");
    agent.write("/ws/echo.js", ECHO_SERVER);
    let port = free_port();
    let reply = agent.send(
        "POST",
        "/processes",
        json!({ "command": format!("exec node echo.js {port}"), "cwd": "/ws", "ports": [port] })
            .to_string()
            .as_bytes(),
    );
    expect_status(&reply, 201);
    let id = reply.json()["process"]["id"].as_str().unwrap().to_string();
    let client = with_runtime(|runtime| runtime.client());
    let plain = fetch_when_up(&client, &agent, port, "/");
    assert_eq!(text(&plain), "plain http\n");

    let path = agent.url(&format!("/ports/{port}/socket"));
    let token = stead_harness::DEV_TOKEN;
    let mut socket = Socket::connect_to(common::base(), &path, Some(token))
        .unwrap_or_else(|e| panic!("the upgrade through the port route: {e}"));
    for message in ["hello", "second message"] {
        socket.send_text(message);
        let echoed = socket
            .recv_text(Duration::from_secs(10))
            .expect("an echo within 10 s");
        assert_eq!(echoed, format!("echo: {message}"));
    }
    // Without a credential the upgrade is refused.
    let refused = Socket::connect_to(common::base(), &path, None).err();
    assert!(
        refused.as_deref().is_some_and(|e| e.contains("401")),
        "{refused:?}"
    );
    expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
}

/// The port route goes from the Worker to the computer's owner, which
/// keeps what the agent admitted: that never lets a wrong caller in, nor
/// opens a port no process declared, and a revocation closes the port at
/// once for a caller the owner had admitted.
#[test]
fn the_port_route_refuses_undeclared_ports_and_wrong_callers_after_admitting_others() {
    let agent = Agent::new("procs-port-callers");
    let other = Agent::new("procs-port-other");
    let client = with_runtime(|runtime| runtime.client());
    agent.write("/site/index.html", "mine\n");
    let port = free_port();
    let process = serve(&agent, port);
    let id = process["id"].as_str().unwrap().to_string();
    let path = agent.url(&format!("/ports/{port}/index.html"));
    fetch_when_up(&client, &agent, port, "/index.html");

    // Admitted: a token of this agent's with the `ports` scope, twice (the
    // second from the owner's grant).
    let (token, token_id) = mint(&agent.id, &["ports"], None);
    let holder = client.with_token(Some(&token));
    for _ in 0..2 {
        let page = holder.send("GET", &path, b"");
        expect_status(&page, 200);
        assert_eq!(text(&page), "mine\n");
    }

    // A token for another agent, and one of this agent's without the
    // scope: refused, though the port is open to others.
    let (elsewhere, _) = mint(&other.id, &["ports"], None);
    expect_error(
        &client.with_token(Some(&elsewhere)).send("GET", &path, b""),
        403,
        "FORBIDDEN",
    );
    let (reader, _) = mint(&agent.id, &["read"], None);
    expect_error(
        &client.with_token(Some(&reader)).send("GET", &path, b""),
        403,
        "FORBIDDEN",
    );
    // The other agent's same port is not this one's: nothing serves it.
    expect_error(
        &client.send("GET", &other.url(&format!("/ports/{port}/index.html")), b""),
        404,
        "PORT_NOT_SERVED",
    );
    // A port the process did not declare, for the caller admitted to the
    // declared one.
    let undeclared = if port == 65535 { port - 1 } else { port + 1 };
    expect_error(
        &holder.send("GET", &agent.url(&format!("/ports/{undeclared}/")), b""),
        404,
        "PORT_NOT_SERVED",
    );

    // Revoked: refused from the next request on.
    let revoked = common::client().send(
        "POST",
        "/tokens/revoke",
        json!({ "agent": agent.id, "id": token_id })
            .to_string()
            .as_bytes(),
    );
    expect_status(&revoked, 200);
    expect_error(&holder.send("GET", &path, b""), 401, "TOKEN_REVOKED");
    // Others still get in.
    expect_status(&client.send("GET", &path, b""), 200);

    // Stopped: closed for the callers the owner had admitted.
    expect_ok(&agent.send("DELETE", &format!("/processes/{id}"), b""));
    expect_error(&client.send("GET", &path, b""), 404, "PORT_NOT_SERVED");
}
