//! Authorization and audit, for each entry point: HTTP requests, tool calls
//! over a WebSocket, and hook calls, all through the one dispatch.

mod common;

use base64::Engine;
use common::*;
use serde_json::{json, Value};
use stead_agent::auth::{Caller, Scope};
use stead_agent::protocol::SocketState;
use stead_agent::socket::Incoming;
use stead_agent::{Action, Tool};
use stead_sql::Sql;

fn audit_entries(agent: &stead_agent::Agent<FakeHost>) -> Vec<Value> {
    ok(agent, "a", Action::Audit, "")["entries"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn each_action_needs_its_scope_over_http() {
    let agent = agent();
    create(&agent, "a");
    let write = r#"{"path":"/f","content":"x"}"#;
    let reader = token("r", &[Scope::Read]);
    let writer = token("w", &[Scope::Write]);
    let cases: Vec<(Action, &str, Caller, u16)> = vec![
        (Action::Tool(Tool::Write), write, reader.clone(), 403),
        (Action::Tool(Tool::Write), write, writer.clone(), 200),
        (
            Action::Tool(Tool::Read),
            r#"{"path":"/f"}"#,
            reader.clone(),
            200,
        ),
        (
            Action::Tool(Tool::Read),
            r#"{"path":"/f"}"#,
            writer.clone(),
            403,
        ),
        (
            Action::Exec,
            r#"{"command":"echo hi"}"#,
            reader.clone(),
            403,
        ),
        (Action::Audit, "", writer.clone(), 403),
        (Action::Delete, "", writer.clone(), 403),
        (
            Action::Tool(Tool::Read),
            r#"{"path":"/f"}"#,
            Caller::Anonymous,
            401,
        ),
        (
            Action::ScheduleCreate,
            r#"{"delay_ms":1000,"exec":{"command":"true"}}"#,
            token("s", &[Scope::Schedule]),
            403, // binding a command needs the scope to run it
        ),
        (
            Action::ScheduleCreate,
            r#"{"delay_ms":1000,"exec":{"command":"true"}}"#,
            token("s", &[Scope::Schedule, Scope::ExecShell]),
            201,
        ),
    ];
    for (action, body, caller, want) in cases {
        let (status, answer) = call(&agent, request("a", action.clone(), caller.clone(), body));
        assert_eq!(status, want, "{action:?} as {caller:?}: {answer}");
    }
}

#[test]
fn a_computer_only_token_may_run_on_the_computer_but_not_in_the_shell() {
    let agent = agent();
    create(&agent, "a");
    let computer_only = token("c", &[Scope::ExecComputer]);
    let (status, body) = call(
        &agent,
        request(
            "a",
            Action::Exec,
            computer_only.clone(),
            r#"{"command":"echo hi"}"#,
        ),
    );
    assert_eq!(status, 403, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("exec:shell"));
    // On the computer it is let through: no computer is configured here,
    // which is the error it meets instead of a refusal.
    let (status, body) = call(
        &agent,
        request(
            "a",
            Action::Exec,
            computer_only,
            r#"{"command":"echo hi","backend":"computer"}"#,
        ),
    );
    assert_eq!(body["error"]["code"], "COMPUTER_UNAVAILABLE", "{body}");
    assert_eq!(status, 503);
}

/// A refused command names the scope it needs where it would run, not
/// the other exec scope, whichever exec scopes the token lacks.
#[test]
fn a_refused_command_names_the_scope_its_backend_needs() {
    let agent = agent();
    create(&agent, "a");
    let reader = token("r", &[Scope::Read]);
    for (body, needed, other) in [
        (r#"{"command":"echo hi"}"#, "exec:shell", "exec:computer"),
        (
            r#"{"command":"echo hi","backend":"computer"}"#,
            "exec:computer",
            "exec:shell",
        ),
    ] {
        let (status, answer) = call(&agent, request("a", Action::Exec, reader.clone(), body));
        assert_eq!(failure(status, &answer), (403, "FORBIDDEN"), "{body}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(needed) && !message.contains(other),
            "{body}: {message}"
        );
    }
    // Cancelling a job needs the scope its command ran with.
    let shell = token("s", &[Scope::ExecShell]);
    let queued = ok(
        &agent,
        "a",
        Action::Exec,
        r#"{"command":"sleep 1","detach":true}"#,
    );
    let job = queued["job"]["id"].as_i64().unwrap();
    let (status, answer) = call(&agent, request("a", Action::JobCancel(job), reader, ""));
    assert_eq!(failure(status, &answer), (403, "FORBIDDEN"));
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("exec:shell"));
    let (status, answer) = call(&agent, request("a", Action::JobCancel(job), shell, ""));
    assert_eq!(status, 200, "{answer}");
}

#[test]
fn revoked_tokens_are_refused_on_every_entry_point() {
    let agent = agent();
    create(&agent, "a");
    ok(&agent, "a", Action::RevokeToken, r#"{"id":"gone"}"#);
    let revoked = token("gone", &[Scope::Read, Scope::Write, Scope::ExecShell]);
    let (status, body) = call(
        &agent,
        request(
            "a",
            Action::Tool(Tool::Read),
            revoked.clone(),
            r#"{"path":"/"}"#,
        ),
    );
    assert_eq!(failure(status, &body), (401, "TOKEN_REVOKED"));
    // A socket opened before the revocation cannot call tools after it.
    let socket = agent.host().accept(&SocketState {
        agent: "a".into(),
        caller: revoked,
        ..SocketState::default()
    });
    let message = json!({"type":"call","id":1,"tool":"write","args":{"path":"/x","content":"y"}});
    block_on(agent.socket_message(&socket, Incoming::Text(message.to_string())));
    let sent = socket.take();
    assert_eq!(sent[0]["type"], "error", "{sent:?}");
    assert_eq!(sent[0]["error"]["code"], "TOKEN_REVOKED");
    assert_eq!(sent[0]["id"], 1);
    let (_, stat) = call(
        &agent,
        request(
            "a",
            Action::Tool(Tool::Stat),
            Caller::Admin,
            r#"{"path":"/x"}"#,
        ),
    );
    assert_eq!(stat["error"]["code"], "ENOENT", "the write never happened");
}

#[test]
fn the_revocation_check_fails_closed_when_storage_fails() {
    let agent = agent();
    create(&agent, "a");
    ok(&agent, "a", Action::RevokeToken, r#"{"id":"t"}"#);
    // A new instance over the same database, whose first look at it fails
    // (the next one would succeed): the revoked token must not get through.
    let db = agent.host().db.clone();
    let restarted = stead_agent::Agent::new(FakeHost::new(db.clone()));
    db.fail_once("sqlite_master");
    let read = || {
        request(
            "a",
            Action::Tool(Tool::Read),
            token("t", &[Scope::Read]),
            r#"{"path":"/"}"#,
        )
    };
    let (status, body) = call(&restarted, read());
    assert_eq!(status, 500, "{body}");
    let (status, body) = call(&restarted, read());
    assert_eq!(failure(status, &body), (401, "TOKEN_REVOKED"));
}

#[test]
fn socket_calls_are_authorized_and_audited_like_http() {
    let agent = agent();
    create(&agent, "a");
    let socket = agent.host().accept(&SocketState {
        agent: "a".into(),
        caller: token("sock", &[Scope::Read]),
        ..SocketState::default()
    });
    let write = json!({"type":"call","id":"w","tool":"write","args":{"path":"/x","content":"y"}});
    block_on(agent.socket_message(&socket, Incoming::Text(write.to_string())));
    let refused = socket.take();
    assert_eq!(refused[0]["error"]["code"], "FORBIDDEN", "{refused:?}");
    let writer = agent.host().accept(&SocketState {
        agent: "a".into(),
        caller: token("sock2", &[Scope::Write]),
        ..SocketState::default()
    });
    block_on(agent.socket_message(&writer, Incoming::Text(write.to_string())));
    let done = writer.take();
    assert_eq!(done[0]["type"], "result", "{done:?}");
    assert_eq!(done[0]["result"]["size"], 1);
    let entries = audit_entries(&agent);
    let recorded: Vec<(String, String, String)> = entries
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap().to_string(),
                e["action"].as_str().unwrap().to_string(),
                e["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        recorded.contains(&("token:sock2".into(), "write".into(), "ok".into())),
        "{recorded:?}"
    );
    assert!(
        recorded.contains(&("token:sock".into(), "write".into(), "FORBIDDEN".into())),
        "a refused call is audited too: {recorded:?}"
    );
    // Reads are not audited.
    let read = json!({"type":"call","tool":"read","args":{"path":"/x"}});
    block_on(agent.socket_message(&writer, Incoming::Text(read.to_string())));
    assert_eq!(audit_entries(&agent).len(), entries.len());
}

#[test]
fn hook_calls_need_the_hooks_secret() {
    let agent = agent();
    create(&agent, "a");
    let hook = ok(
        &agent,
        "a",
        Action::HookPut("gh".into()),
        r#"{"exec":{"command":"cat"},"secret":"a-long-enough-secret"}"#,
    );
    assert_eq!(hook["secret"], "a-long-enough-secret");
    let call_with = |secret: Option<&str>| {
        let mut req = request(
            "a",
            Action::HookCall("gh".into()),
            Caller::Anonymous,
            "payload",
        );
        req.hook.secret = secret.map(str::to_string);
        call(&agent, req)
    };
    let (status, body) = call_with(Some("wrong"));
    assert_eq!(failure(status, &body), (401, "HOOK_REFUSED"));
    let (status, _) = call_with(None);
    assert_eq!(status, 401);
    let (status, body) = call_with(Some("a-long-enough-secret"));
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["job"]["state"], "queued");
    // An unknown agent's hook says no more than a wrong secret.
    let other = common::agent();
    let mut req = request(
        "nobody",
        Action::HookCall("gh".into()),
        Caller::Anonymous,
        "",
    );
    req.hook.secret = Some("a-long-enough-secret".into());
    let (status, body) = call(&other, req);
    assert_eq!(failure(status, &body), (401, "HOOK_REFUSED"));
}

#[test]
fn storage_failures_do_not_show_sql_to_callers() {
    let agent = agent();
    create(&agent, "a");
    agent.host().db.fail("FROM dirents");
    let (status, body) = call(
        &agent,
        request(
            "a",
            Action::Tool(Tool::Ls),
            Caller::Admin,
            r#"{"path":"/"}"#,
        ),
    );
    assert_eq!(status, 500, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        !message.contains("SELECT") && !message.contains("dirents"),
        "{message}"
    );
    assert_eq!(body["error"]["code"], "EIO");
}

#[test]
fn unknown_agents_are_refused_and_leave_nothing() {
    let agent = agent();
    let (status, body) = call(
        &agent,
        request(
            "ghost",
            Action::Tool(Tool::Read),
            Caller::Admin,
            r#"{"path":"/"}"#,
        ),
    );
    assert_eq!(failure(status, &body), (404, "AGENT_NOT_FOUND"));
    let tables = agent
        .host()
        .db
        .query("SELECT name FROM sqlite_master", &[])
        .unwrap();
    assert!(tables.is_empty(), "an unknown agent left storage behind");
}

/// The isolate cannot block inside an exec, so the light shell's `sleep`
/// moves the exec's clock and the agent waits the time once the exec is
/// done: `sleep` takes its time, as in bash, and `date` sees it pass.
#[test]
fn light_shell_sleep_takes_its_time() {
    let agent = agent();
    create(&agent, "a");
    let started = std::time::Instant::now();
    let body = r#"{"command":"a=$(date +%s%N); sleep 0.4; b=$(date +%s%N); echo $(( (b - a) / 1000000 >= 400 ))","backend":"shell"}"#;
    let result = ok(&agent, "a", Action::Exec, body);
    assert_eq!(result["stdout"], "1\n", "{result}");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn exec_output_can_come_back_byte_exact() {
    let agent = agent();
    create(&agent, "a");
    let body = r#"{"command":"printf hello | gzip -c","output_encoding":"base64"}"#;
    let result = ok(&agent, "a", Action::Exec, body);
    assert_eq!(result["output_encoding"], "base64");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(result["stdout"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        &bytes[..2],
        [0x1f, 0x8b],
        "gzip's magic, byte-exact: {result}"
    );
    let text = ok(
        &agent,
        "a",
        Action::Exec,
        r#"{"command":"printf hello | gzip -c"}"#,
    );
    assert!(
        text["stdout"].as_str().unwrap().contains('\u{fffd}'),
        "{text}"
    );
    assert_eq!(text["status"], "exited");
    let (status, bad) = call(
        &agent,
        request(
            "a",
            Action::Exec,
            Caller::Admin,
            r#"{"command":"true","output_encoding":"hex"}"#,
        ),
    );
    assert_eq!(failure(status, &bad), (400, "INVALID_REQUEST"));
}

#[test]
fn the_change_feed_pages_inside_a_revision() {
    let agent = agent();
    create(&agent, "a");
    let files: Vec<stead_sync::Change> = (0..25)
        .map(|i| stead_sync::Change {
            path: format!("/f{i:02}"),
            entry: Some(stead_sync::Entry::Dir { mode: 0o755 }),
            mtime_ms: None,
        })
        .collect();
    agent.vfs().apply_sync(0, &files).unwrap();
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let body = json!({"since": 0, "limit": 10, "cursor": cursor}).to_string();
        let page = ok(&agent, "a", Action::Tool(Tool::Changes), &body);
        for change in page["changes"].as_array().unwrap() {
            seen.push(change["path"].as_str().unwrap().to_string());
        }
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(seen.len(), 25, "{seen:?}");
    let (status, body) = call(
        &agent,
        request(
            "a",
            Action::Tool(Tool::Changes),
            Caller::Admin,
            r#"{"cursor":"soon"}"#,
        ),
    );
    assert_eq!(failure(status, &body), (400, "EINVAL"));
}

/// A settings change is recorded against the agent with what it changed:
/// each changed key with its old and new value, nothing that stayed.
#[test]
fn a_settings_change_is_audited_with_its_target_and_what_changed() {
    let agent = agent();
    create(&agent, "a");
    ok(
        &agent,
        "a",
        Action::SettingsPut,
        r#"{"quotas":{"max_nodes":10},"computer":{"internet":true}}"#,
    );
    let entry = audit_entries(&agent)[0].clone();
    assert_eq!(entry["action"], "settings.put", "{entry}");
    assert_eq!(entry["target"], "a", "{entry}");
    let changed = entry["detail"]["changed"].as_object().expect("changes");
    let mut keys: Vec<&str> = changed.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        ["computer.internet", "computer.network", "quotas.max_nodes"],
        "{entry}"
    );
    assert_eq!(changed["quotas.max_nodes"]["new"], 10);
    assert_eq!(
        changed["computer.internet"],
        json!({"old": false, "new": true})
    );
    assert_eq!(
        changed["computer.network"],
        json!({"old": "off", "new": "on"})
    );
}

/// An unknown field's error lists the fields the route takes, from the
/// type that decodes them: `exec` lists `detach` too.
#[test]
fn an_unknown_exec_field_lists_every_field_the_route_takes() {
    let agent = agent();
    create(&agent, "a");
    let (status, answer) = call(
        &agent,
        request(
            "a",
            Action::Exec,
            Caller::Admin,
            r#"{"command":"true","detah":true}"#,
        ),
    );
    assert_eq!(failure(status, &answer), (400, "INVALID_REQUEST"));
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("detah") && message.contains("`detach`"),
        "{message}"
    );
    // A stored command always runs as a job: it takes no detach.
    let (status, answer) = call(
        &agent,
        request(
            "a",
            Action::ScheduleCreate,
            Caller::Admin,
            r#"{"delay_ms":1000,"exec":{"command":"true","detach":true}}"#,
        ),
    );
    assert_eq!(
        failure(status, &answer),
        (400, "INVALID_REQUEST"),
        "{answer}"
    );
}

/// The status, body and `Location` of a request dispatched as the admin.
fn answered(
    agent: &stead_agent::Agent<FakeHost>,
    action: Action,
    body: &str,
) -> (u16, Value, Option<String>) {
    match block_on(agent.dispatch(request("a", action, Caller::Admin, body))).unwrap() {
        stead_agent::Reply::Json {
            status,
            body,
            headers,
        } => {
            let location = headers.into_iter().find(|(name, _)| *name == "location");
            (status, body, location.map(|(_, value)| value))
        }
        other => panic!("not JSON: {other:?}"),
    }
}

/// One rule for every answer: a single resource comes under its kind's
/// name; a request that creates one answers 201 with its Location, a PUT
/// that replaces one 200, one that queues a job 202 pointing at the job.
#[test]
fn every_route_answers_by_one_envelope_and_status_rule() {
    let agent = agent();
    let (status, body, location) = answered(&agent, Action::Create, "");
    assert_eq!(
        (status, location.as_deref()),
        (201, Some("/agents/a")),
        "{body}"
    );
    let (status, _, location) = answered(&agent, Action::Create, "");
    assert_eq!((status, location), (200, None), "PUT of one that exists");
    let schedule = r#"{"delay_ms":60000,"exec":{"command":"true"}}"#;
    for (action, path) in [
        (Action::SchedulePut("n.1".into()), "/agents/a/schedules/n.1"),
        (Action::HookPut("gh".into()), "/agents/a/hooks/gh"),
    ] {
        let body = match action {
            Action::HookPut(_) => r#"{"exec":{"command":"cat"}}"#,
            _ => schedule,
        };
        let (status, answer, location) = answered(&agent, action.clone(), body);
        assert_eq!(
            (status, location.as_deref()),
            (201, Some(path)),
            "{action:?}: {answer}"
        );
        let (status, answer, location) = answered(&agent, action.clone(), body);
        assert_eq!(
            (status, location),
            (200, None),
            "{action:?} replaced: {answer}"
        );
    }
    let (status, created, location) = answered(&agent, Action::ScheduleCreate, schedule);
    let id = created["schedule"]["id"].as_str().unwrap();
    assert_eq!(status, 201);
    assert_eq!(location, Some(format!("/agents/a/schedules/{id}")));
    let (status, created, location) = answered(&agent, Action::CheckpointCreate, "{}");
    let id = created["checkpoint"]["id"].as_i64().unwrap();
    assert_eq!(
        (status, location),
        (201, Some(format!("/agents/a/checkpoints/{id}")))
    );
    // A queued job: 202, and the job under "job" wherever it is shown.
    let (status, queued, location) = answered(
        &agent,
        Action::Exec,
        r#"{"command":"sleep 5","detach":true}"#,
    );
    let job = queued["job"]["id"].as_i64().expect("the job under job");
    assert_eq!(
        (status, location),
        (202, Some(format!("/agents/a/jobs/{job}")))
    );
    let shown = ok(&agent, "a", Action::Job(job), "");
    assert_eq!(shown["job"]["id"], job, "GET /jobs/{{id}}: {shown}");
    let cancelled = ok(&agent, "a", Action::JobCancel(job), "");
    assert_eq!(
        cancelled["job"]["state"], "cancelled",
        "cancel: {cancelled}"
    );
}

#[test]
fn out_of_range_queries_and_timeouts_are_refused() {
    let agent = agent();
    create(&agent, "a");
    let mut audit = request("a", Action::Audit, Caller::Admin, "");
    audit.query = vec![("limit".into(), "-1".into())];
    let (status, body) = call(&agent, audit);
    assert_eq!(failure(status, &body), (400, "INVALID_REQUEST"));
    for body in [
        r#"{"command":"true","timeout_ms":1000000000000000000}"#,
        r#"{"command":"true","timeout_ms":0}"#,
        r#"{"command":"true","backend":"computer","timeout_ms":3600001}"#,
    ] {
        let (status, answer) = call(&agent, request("a", Action::Exec, Caller::Admin, body));
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("timeout_ms"));
    }
    let mut jobs = request("a", Action::Jobs, Caller::Admin, "");
    jobs.query = vec![("limit".into(), "201".into())];
    assert_eq!(call(&agent, jobs).0, 400);
}

fn hook_call(
    agent: &stead_agent::Agent<FakeHost>,
    body: &str,
    hook: stead_agent::HookHeaders,
) -> (u16, Value) {
    let mut req = request("a", Action::HookCall("ci".into()), Caller::Anonymous, body);
    req.hook = hook;
    call(agent, req)
}

#[test]
fn signed_hook_calls_cannot_be_replayed() {
    use stead_agent::Host;
    let agent = agent();
    create(&agent, "a");
    ok(
        &agent,
        "a",
        Action::HookPut("ci".into()),
        r#"{"exec":{"command":"cat"},"secret":"a-long-enough-secret","signed":true}"#,
    );
    let now = agent.host().now_ms();
    let body = r#"{"ref":"main"}"#;
    let signed = |at: i64| stead_agent::HookHeaders {
        timestamp: Some(at.to_string()),
        signature: Some(stead_scheduler::signing::signature(
            "a-long-enough-secret",
            at,
            body.as_bytes(),
        )),
        ..Default::default()
    };
    let (status, first) = hook_call(&agent, body, signed(now));
    assert_eq!(status, 202, "{first}");
    let (status, again) = hook_call(&agent, body, signed(now));
    assert_eq!(failure(status, &again), (409, "HOOK_REPLAYED"));
    // Stale, tampered, or the bare secret: refused, nothing run.
    let (status, _) = hook_call(&agent, body, signed(now - 301_000));
    assert_eq!(status, 401);
    let (status, _) = hook_call(&agent, r#"{"ref":"evil"}"#, signed(now - 1));
    assert_eq!(status, 401);
    let bare = stead_agent::HookHeaders {
        secret: Some("a-long-enough-secret".into()),
        ..Default::default()
    };
    assert_eq!(hook_call(&agent, body, bare).0, 401);
    let jobs = ok(&agent, "a", Action::Jobs, "")["jobs"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(jobs, 1, "one call ran");
}

#[test]
fn an_idempotency_key_runs_a_hook_once() {
    let agent = agent();
    create(&agent, "a");
    ok(
        &agent,
        "a",
        Action::HookPut("ci".into()),
        r#"{"exec":{"command":"cat"},"secret":"a-long-enough-secret"}"#,
    );
    let keyed = |key: &str| stead_agent::HookHeaders {
        secret: Some("a-long-enough-secret".into()),
        idempotency_key: Some(key.into()),
        ..Default::default()
    };
    let (status, first) = hook_call(&agent, "one", keyed("delivery-1"));
    assert_eq!(status, 202, "{first}");
    let (status, again) = hook_call(&agent, "one", keyed("delivery-1"));
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["replayed"], true);
    assert_eq!(again["job"]["id"], first["job"]["id"]);
    let (status, other) = hook_call(&agent, "two", keyed("delivery-2"));
    assert_eq!(status, 202, "{other}");
    let jobs = ok(&agent, "a", Action::Jobs, "")["jobs"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(jobs, 2);
    // After the window, the key is forgotten.
    agent.host().advance(300_001);
    assert_eq!(hook_call(&agent, "one", keyed("delivery-1")).0, 202);
}

#[test]
fn http_dates_are_imf_fixdates() {
    use stead_agent::dispatch::http_date;
    assert_eq!(http_date(784_111_777_000), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(http_date(951_782_400_999), "Tue, 29 Feb 2000 00:00:00 GMT");
}

/// `GET /files/<dir>` is refused as `EISDIR` with a message that points to
/// `ls`.
#[test]
fn downloading_a_directory_points_to_ls() {
    let agent = agent();
    create(&agent, "a");
    ok(&agent, "a", Action::Tool(Tool::Mkdir), r#"{"path":"/src"}"#);
    let (status, body) = call(
        &agent,
        request("a", Action::Download("/src".into()), Caller::Admin, ""),
    );
    assert_eq!(failure(status, &body), (409, "EISDIR"), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("/ls") && message.contains("\"/src\""),
        "{message}"
    );
    assert_eq!(body["error"]["path"], "/src");
}

/// An upload's `?mode=` reads octal as the file tools' `mode` does, with or
/// without `0`/`0o`, and refuses what is not octal or is past `07777`.
#[test]
fn upload_modes_are_read_as_the_tools_read_them() {
    let agent = agent();
    create(&agent, "a");
    let upload = |path: &str, mode: &str| {
        let mut put = request("a", Action::Upload(path.into()), Caller::Admin, "hi");
        put.query = vec![("mode".to_string(), mode.to_string())];
        call(&agent, put)
    };
    for (path, mode) in [("/p", "755"), ("/q", "0755"), ("/r", "0o755")] {
        let (status, body) = upload(path, mode);
        assert!(status < 300, "mode={mode}: {body}");
        let stat = ok(
            &agent,
            "a",
            Action::Tool(Tool::Stat),
            &format!(r#"{{"path":"{path}"}}"#),
        );
        assert_eq!(stat["mode"], "0755", "mode={mode}: {stat}");
    }
    for mode in ["9", "+755", "", "0o", "17777"] {
        let (status, body) = upload("/bad", mode);
        assert_eq!(
            failure(status, &body),
            (400, "INVALID_REQUEST"),
            "mode={mode}: {body}"
        );
    }
    let (status, body) = call(
        &agent,
        request(
            "a",
            Action::Tool(Tool::Stat),
            Caller::Admin,
            r#"{"path":"/bad"}"#,
        ),
    );
    assert_eq!(
        failure(status, &body),
        (404, "ENOENT"),
        "a refused upload wrote nothing: {body}"
    );
}

/// An agent deleted and made again under the same id is a new agent: a
/// token minted for the one before (known or not to the old ledger, used
/// or not by this instance) does not open it; one minted for it does.
#[test]
fn tokens_of_a_deleted_agent_do_not_open_its_successor() {
    let agent = agent();
    create(&agent, "a");
    let scopes = [Scope::Read];
    let stat = |caller: Caller| {
        call(
            &agent,
            request("a", Action::Tool(Tool::Stat), caller, r#"{"path":"/"}"#),
        )
    };
    let record = |id: &str| {
        let minted =
            json!({"id": id, "scopes": ["read"], "minted_at": 1, "expires_at": 4_000_000_000i64});
        ok(&agent, "a", Action::TokenMinted, &minted.to_string());
    };
    // Before any deletion: a token from before the ledger stands, as does
    // a recorded one. Both are now remembered by this instance.
    record("recorded-before");
    for id in ["unrecorded", "recorded-before"] {
        let (status, body) = stat(token(id, &scopes));
        assert_eq!(status, 200, "{id}: {body}");
    }
    ok(&agent, "a", Action::Delete, "");
    create(&agent, "a");
    for id in ["unrecorded", "recorded-before"] {
        let (status, body) = stat(token(id, &scopes));
        assert_eq!(
            failure(status, &body),
            (401, "TOKEN_PREDATES_AGENT"),
            "{id}: {body}"
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("mint a new token"), "{message}");
    }
    record("recorded-after");
    let (status, body) = stat(token("recorded-after", &scopes));
    assert_eq!(status, 200, "{body}");
}
