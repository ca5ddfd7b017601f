//! The computer driver against a real `stead-computer` process: sync both
//! ways, conflicts, cancel, and a failure at every step of the protocol,
//! after which the workspace is as it was and the next command works.

mod common;

use common::*;
use serde_json::{json, Value};
use stead_agent::auth::Caller;
use stead_agent::environment::store::{self, EnvState};
use stead_agent::{Action, Agent, Tool};

fn exec(agent: &Agent<FakeHost>, command: &str) -> (u16, Value) {
    let body = json!({ "command": command, "backend": "computer" }).to_string();
    call(agent, request("a", Action::Exec, Caller::Admin, &body))
}

fn write(agent: &Agent<FakeHost>, path: &str, content: &str) {
    let body = json!({ "path": path, "content": content }).to_string();
    ok(agent, "a", Action::Tool(Tool::Write), &body);
}

fn read(agent: &Agent<FakeHost>, path: &str) -> Value {
    let body = json!({ "path": path }).to_string();
    call(
        agent,
        request("a", Action::Tool(Tool::Read), Caller::Admin, &body),
    )
    .1
}

fn revision(agent: &Agent<FakeHost>) -> i64 {
    ok(agent, "a", Action::Tool(Tool::Changes), r#"{"limit":1}"#)["revision"]
        .as_i64()
        .unwrap()
}

/// An agent with a real computer, and two files in its workspace.
fn setup() -> (
    Agent<FakeHost>,
    stead_harness::ComputerProcess,
    tempfile::TempDir,
) {
    let (agent, process, dir) = agent_with_computer();
    write(&agent, "/notes/plan.md", "step one\n");
    write(&agent, "/keep.txt", "kept\n");
    (agent, process, dir)
}

fn transport(agent: &Agent<FakeHost>) -> FaultyTransport {
    agent.host().computer.borrow().clone().unwrap()
}

#[test]
fn commands_see_the_workspace_and_their_changes_come_back() {
    let (agent, _process, _dir) = setup();
    let (status, result) = exec(
        &agent,
        "cat notes/plan.md && echo made > out.txt && mkdir -p build && printf x > build/a && rm keep.txt",
    );
    assert_eq!(status, 200, "{result}");
    assert_eq!(
        (result["status"].clone(), result["exit_code"].clone()),
        (json!("exited"), json!(0))
    );
    assert_eq!(result["stdout"], "step one\n");
    let mut changed: Vec<&str> = result["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    changed.sort_unstable();
    assert_eq!(changed, ["/build", "/build/a", "/keep.txt", "/out.txt"]);
    assert_eq!(read(&agent, "/out.txt")["content"], "made\n");
    assert_eq!(read(&agent, "/keep.txt")["error"]["code"], "ENOENT");
    // Warm: only what changed since travels.
    write(&agent, "/notes/plan.md", "step two\n");
    let (_, warm) = exec(&agent, "cat notes/plan.md");
    assert_eq!(warm["stdout"], "step two\n");
    assert_eq!(warm["sync"]["sent"]["files"], 1, "{warm}");
    assert_eq!(warm["sync"]["sent"]["bytes"], 9);
}

#[test]
fn both_sides_changing_a_file_keeps_both_versions() {
    let (agent, _process, _dir) = setup();
    let command = async {
        let body = json!({
            "command": "sleep 1; echo container > notes/plan.md",
            "backend": "computer"
        });
        agent
            .dispatch(request("a", Action::Exec, Caller::Admin, &body.to_string()))
            .await
    };
    let meanwhile = async {
        pause(300).await;
        let body = json!({ "path": "/notes/plan.md", "content": "workspace\n" }).to_string();
        let written = agent
            .dispatch(request(
                "a",
                Action::Tool(Tool::Write),
                Caller::Admin,
                &body,
            ))
            .await;
        assert!(written.is_ok(), "{written:?}");
    };
    let (reply, ()) = block_on(futures::future::join(command, meanwhile));
    let stead_agent::Reply::Json { body: result, .. } = reply.unwrap() else {
        panic!("not JSON")
    };
    let conflicts = result["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{result}");
    assert_eq!(conflicts[0]["path"], "/notes/plan.md");
    let copy = conflicts[0]["container_copy"].as_str().unwrap();
    assert_eq!(read(&agent, "/notes/plan.md")["content"], "workspace\n");
    assert_eq!(read(&agent, copy)["content"], "container\n");
}

#[test]
fn cancelling_a_job_stops_its_command_on_the_computer() {
    let (agent, _process, _dir) = setup();
    let queued = ok(
        &agent,
        "a",
        Action::Exec,
        r#"{"command":"echo started; sleep 30; echo finished","backend":"computer","detach":true}"#,
    );
    let id = queued["job"]["id"].as_i64().unwrap();
    let run = agent.alarm();
    let cancel = async {
        pause(700).await;
        agent
            .dispatch(request("a", Action::JobCancel(id), Caller::Admin, ""))
            .await
    };
    let (ran, cancelled) = block_on(futures::future::join(run, cancel));
    ran.unwrap();
    let stead_agent::Reply::Json {
        body: cancelled, ..
    } = cancelled.unwrap()
    else {
        panic!("not JSON")
    };
    assert_eq!(cancelled["job"]["cancel_requested"], true, "{cancelled}");
    let job = ok(&agent, "a", Action::Job(id), "")["job"].clone();
    assert_eq!(job["state"], "cancelled", "{job}");
    // Stopped, not run to its end: killed by a signal, before `finished`.
    assert!(job["exit_code"].as_i64().unwrap() > 128, "{job}");
    let text = job_text(&agent, id);
    assert_eq!(text, "started\n");
}

/// Breaks `fault`, runs a command that would change the workspace, and
/// checks the failure left the workspace as it was; then heals and checks
/// the next command works.
fn survives(fault: Fault) -> Value {
    let (agent, _process, _dir) = setup();
    let warm = exec(&agent, "true");
    assert_eq!(warm.0, 200, "{}", warm.1);
    write(&agent, "/notes/plan.md", "edited\n");
    let before = revision(&agent);
    transport(&agent).break_next(fault.clone());
    let (status, failed) = exec(&agent, "echo broken > notes/plan.md; echo new > new.txt");
    let unchanged = revision(&agent) == before
        && read(&agent, "/notes/plan.md")["content"] == "edited\n"
        && read(&agent, "/new.txt")["error"]["code"] == "ENOENT";
    assert!(
        unchanged,
        "{fault:?} changed the workspace: {status} {failed}"
    );
    let (next_status, next) = exec(&agent, "cat notes/plan.md");
    assert_eq!(next_status, 200, "after {fault:?}: {next}");
    assert_eq!(next["status"], "exited", "after {fault:?}: {next}");
    assert_eq!(
        next["stdout"], "edited\n",
        "after {fault:?}: the computer's copy is current"
    );
    json!({ "status": status, "failed": failed, "next": next })
}

#[test]
fn a_failed_status_or_push_changes_nothing() {
    for fault in [
        Fault::Refuse("/v1/status"),
        Fault::Refuse("/v1/sync/apply"),
        Fault::Cut("/v1/sync/apply", 3),
        Fault::Refuse("/v1/sync/chunks"),
    ] {
        let seen = survives(fault.clone());
        assert_eq!(seen["status"], 502, "{fault:?}: {seen}");
        assert_eq!(seen["failed"]["error"]["code"], "COMPUTER_FAILED");
    }
}

#[test]
fn a_command_lost_midway_changes_nothing_and_is_not_replayed() {
    for fault in [Fault::Refuse("/v1/exec"), Fault::Cut("/v1/exec", 10)] {
        let seen = survives(fault.clone());
        assert_eq!(seen["status"], 200, "{fault:?}: {seen}");
        assert_eq!(seen["failed"]["status"], "lost", "{fault:?}: {seen}");
        assert_eq!(seen["failed"]["exit_code"], Value::Null);
        // The next command started over with the whole workspace.
        assert!(
            seen["next"]["sync"]["sent"]["files"].as_u64().unwrap() >= 3,
            "{fault:?}: {seen}"
        );
    }
}

#[test]
fn a_command_whose_computer_was_lost_is_answered_lost_and_the_workspace_kept() {
    let seen = survives(Fault::Lost("/v1/exec"));
    assert_eq!(seen["status"], 200, "{seen}");
    let failed = &seen["failed"];
    assert_eq!(failed["status"], "lost", "{seen}");
    assert_eq!(failed["exit_code"], Value::Null);
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.starts_with("the command's outcome is unknown; the workspace is unchanged: ")
            && message.ends_with("the command may or may not have run"),
        "{message}"
    );
    // The computer is forgotten: the next command pushes it everything.
    assert!(seen["next"]["sync"]["sent"]["files"].as_u64().unwrap() >= 3);
}

/// The computer's instance as its program reports it.
fn instance(process: &stead_harness::ComputerProcess) -> String {
    let status: Value = ureq::get(format!("{}/v1/status", process.url()))
        .header(
            stead_sync::AUTH_HEADER,
            format!("Bearer {}", process.secret()),
        )
        .header(stead_sync::CONTAINER_HEADER, "a")
        .call()
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap();
    status["instance"].as_str().unwrap().to_string()
}

/// The requests sent for `path` (a prefix), in order, with their index in
/// everything sent.
fn sent_to(transport: &FaultyTransport, path: &str) -> Vec<(usize, String)> {
    let sent = transport.sent.borrow();
    let found = sent.iter().enumerate().filter(|(_, s)| s.starts_with(path));
    found.map(|(at, s)| (at, s.clone())).collect()
}

/// The program is restarted (a fresh instance, its disk wiped) just before
/// each of the next `times` execs reaches it, as a container that dies
/// after its push whose owner sends the exec to a replacement.
fn dies_before_exec(
    agent: &Agent<FakeHost>,
    process: stead_harness::ComputerProcess,
    times: usize,
) -> std::rc::Rc<std::cell::RefCell<stead_harness::ComputerProcess>> {
    let process = std::rc::Rc::new(std::cell::RefCell::new(process));
    for _ in 0..times {
        let restarted = process.clone();
        transport(agent).before_next("/v1/exec", move || restarted.borrow_mut().restart());
    }
    process
}

#[test]
fn a_command_whose_computer_died_after_its_push_runs_once_on_the_replacement() {
    let (agent, process, _dir) = setup();
    let first = instance(&process);
    let process = dies_before_exec(&agent, process, 1);
    let (status, ran) = exec(&agent, "cat notes/plan.md && echo once >> runs.txt");
    assert_eq!(status, 200, "{ran}");
    assert_eq!(ran["status"], "exited", "{ran}");
    assert_eq!(ran["stdout"], "step one\n", "it saw the workspace's files");
    assert_eq!(
        read(&agent, "/runs.txt")["content"],
        "once\n",
        "it ran once"
    );
    let replacement = instance(&process.borrow());
    assert_ne!(replacement, first);
    let transport = transport(&agent);
    let param = stead_sync::EXEC_INSTANCE_PARAM;
    let execs = sent_to(&transport, "Post /v1/exec?");
    let named: Vec<&str> = execs.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        named,
        [
            format!("Post /v1/exec?{param}={first}"),
            format!("Post /v1/exec?{param}={replacement}")
        ],
        "refused by the replacement, then sent to it by name"
    );
    let pushes = sent_to(&transport, "Post /v1/sync/apply");
    assert!(
        pushes
            .iter()
            .any(|(at, _)| (execs[0].0..execs[1].0).contains(at)),
        "pushed to the replacement before the exec: {:?}",
        transport.sent.borrow()
    );
    // Both pushes counted: the whole workspace (`/keep.txt`, `/notes`,
    // `/notes/plan.md`) to the first instance, then the whole of it again
    // to the replacement, not only what the first instance lacked.
    assert_eq!(ran["sync"]["sent"]["files"], 6, "{ran}");
}

/// Builds an environment the sync never carries (`.venv/` is ignored).
const SETUP: &str = "mkdir -p .venv && echo built > .venv/marker\n";

/// The state of the agent's environment record.
fn environment(agent: &Agent<FakeHost>) -> EnvState {
    store::record(&agent.host().db)
        .unwrap()
        .expect("a record")
        .state
}

/// Whether one of the requests sent for `path` (a prefix) went between the
/// requests at `from` and `to`.
fn sent_between(transport: &FaultyTransport, path: &str, from: usize, to: usize) -> bool {
    sent_to(transport, path)
        .iter()
        .any(|(at, _)| (from..to).contains(at))
}

#[test]
fn a_replacement_gets_the_environment_restored_before_the_command() {
    let (agent, process, _dir) = setup();
    write(&agent, "/.stead/setup.sh", SETUP);
    let (status, built) = exec(&agent, "cat .venv/marker");
    assert_eq!(
        (status, &built["stdout"]),
        (200, &json!("built\n")),
        "{built}"
    );
    assert_eq!(environment(&agent), EnvState::Ready);

    let _process = dies_before_exec(&agent, process, 1);
    let (status, ran) = exec(&agent, "cat .venv/marker");
    assert_eq!(status, 200, "{ran}");
    assert_eq!(
        ran["stdout"], "built\n",
        "restored on the replacement: {ran}"
    );
    let transport = transport(&agent);
    let execs = sent_to(&transport, "Post /v1/exec?");
    // The setup script, the first command, the refused one, the same
    // planned again: the replacement's environment was restored, not
    // built again.
    assert_eq!(execs.len(), 4, "{:?}", transport.sent.borrow());
    let restore = stead_sync::environment::RESTORE_PATH;
    assert!(
        sent_between(
            &transport,
            &format!("Post {restore}"),
            execs[2].0,
            execs[3].0
        ),
        "restored between the refusal and the exec: {:?}",
        transport.sent.borrow()
    );
}

#[test]
fn a_setup_script_refused_by_a_replacement_is_run_there_before_the_command() {
    let (agent, process, _dir) = setup();
    write(&agent, "/.stead/setup.sh", SETUP);
    // The first exec that reaches the computer is the setup script's.
    let _process = dies_before_exec(&agent, process, 1);
    let (status, ran) = exec(&agent, "cat .venv/marker");
    assert_eq!(status, 200, "{ran}");
    assert_eq!(ran["stdout"], "built\n", "set up on the replacement: {ran}");
    let transport = transport(&agent);
    // The refused setup script, the setup script again, the command.
    assert_eq!(sent_to(&transport, "Post /v1/exec?").len(), 3);
    assert_eq!(environment(&agent), EnvState::Ready);
}

#[test]
fn a_replacement_starts_the_processes_that_come_back_once() {
    let (agent, process, _dir) = setup();
    let body = json!({ "command": "echo up; sleep 60", "restart": "always" }).to_string();
    let (status, started) = call(
        &agent,
        request("a", Action::ProcessStart, Caller::Admin, &body),
    );
    assert_eq!(status, 201, "{started}");
    let id = started["process"]["id"].as_str().unwrap().to_string();

    let _process = dies_before_exec(&agent, process, 1);
    let (status, ran) = exec(&agent, "echo ran");
    assert_eq!((status, &ran["stdout"]), (200, &json!("ran\n")), "{ran}");
    let transport = transport(&agent);
    let execs = sent_to(&transport, "Post /v1/exec?");
    assert_eq!(execs.len(), 2, "{:?}", transport.sent.borrow());
    assert!(
        sent_between(&transport, "Post /v1/processes", execs[0].0, execs[1].0),
        "started on the replacement before the exec: {:?}",
        transport.sent.borrow()
    );
    let revived = ok(&agent, "a", Action::Process(id), "")["process"].clone();
    assert_eq!(
        (revived["state"].clone(), revived["restarts"].clone()),
        (json!("running"), json!(1)),
        "{revived}"
    );
}

#[test]
fn a_computer_that_keeps_changing_fails_the_command_and_changes_nothing() {
    let (agent, process, _dir) = setup();
    let before = revision(&agent);
    let process = dies_before_exec(&agent, process, 2);
    let (status, failed) = exec(&agent, "echo ran > ran.txt");
    assert_eq!(
        (status, failure(status, &failed).1),
        (502, "COMPUTER_FAILED"),
        "{failed}"
    );
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.contains("kept changing"), "{message}");
    assert_eq!(revision(&agent), before, "the workspace is unchanged");
    let disk = process.borrow().workspace("a");
    assert!(!disk.join("ran.txt").exists(), "nothing ran");
    assert_eq!(sent_to(&transport(&agent), "Post /v1/exec?").len(), 2);
    // The next command runs on the instance that answers.
    let (status, next) = exec(&agent, "cat keep.txt");
    assert_eq!((status, &next["stdout"]), (200, &json!("kept\n")), "{next}");
}

#[test]
fn a_failed_pull_leaves_the_changes_for_the_next_command() {
    let (agent, _process, _dir) = setup();
    exec(&agent, "true");
    transport(&agent).break_next(Fault::Refuse("/v1/chunks"));
    let before = revision(&agent);
    let (status, failed) = exec(&agent, "echo new > new.txt");
    assert_eq!(failure(status, &failed), (502, "COMPUTER_FAILED"));
    assert_eq!(revision(&agent), before, "nothing applied");
    // Unacknowledged, the container reports the change again next time.
    let (_, next) = exec(&agent, "true");
    assert_eq!(next["changed"], json!(["/new.txt"]), "{next}");
    assert_eq!(read(&agent, "/new.txt")["content"], "new\n");
}

#[test]
fn a_lost_acknowledgement_costs_only_a_harmless_repeat() {
    let (agent, _process, _dir) = setup();
    exec(&agent, "true");
    transport(&agent).break_next(Fault::Refuse("/v1/sync/ack"));
    let (_, first) = exec(&agent, "echo new > new.txt");
    assert_eq!(first["changed"], json!(["/new.txt"]));
    let after_first = revision(&agent);
    let (_, again) = exec(&agent, "true");
    assert!(again["conflicts"].as_array().unwrap().is_empty(), "{again}");
    assert_eq!(read(&agent, "/new.txt")["content"], "new\n");
    assert!(revision(&agent) >= after_first);
    let sent = transport(&agent).sent.borrow().clone();
    assert!(sent.iter().filter(|s| s.ends_with("/v1/sync/ack")).count() >= 3);
}

fn settings(agent: &Agent<FakeHost>, quotas: Value) {
    let body = json!({ "quotas": quotas }).to_string();
    ok(agent, "a", Action::SettingsPut, &body);
}

fn rejected(result: &Value) -> Vec<(String, String)> {
    result["rejected"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|r| {
                    (
                        r["path"].as_str().unwrap().to_string(),
                        r["code"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn stat(agent: &Agent<FakeHost>, path: &str) -> Value {
    let body = json!({ "path": path }).to_string();
    ok(agent, "a", Action::Tool(Tool::Stat), &body)
}

/// One command over `max_nodes` answers with its output, its exit status
/// and what was refused, the rest applied; the computer's copy is put
/// back in line, so the next command is not refused for the same files.
#[test]
fn a_command_over_max_nodes_keeps_its_output_and_later_commands_run_clean() {
    let (agent, _process, _dir) = setup();
    // The root, /notes, /notes/plan.md and /keep.txt: 4 of 8.
    settings(&agent, json!({ "max_nodes": 8 }));
    let (status, result) = exec(
        &agent,
        "mkdir out && for i in 1 2 3 4 5 6 7 8; do echo $i > out/f$i; done; echo made; exit 3",
    );
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["status"], "exited");
    assert_eq!(result["exit_code"], 3);
    assert_eq!(result["stdout"], "made\n");
    let refused: Vec<String> = (4..=8).map(|i| format!("/out/f{i}")).collect();
    assert_eq!(
        rejected(&result),
        refused
            .iter()
            .map(|p| (p.clone(), "ENOSPC".to_string()))
            .collect::<Vec<_>>(),
        "{result}"
    );
    assert_eq!(result["rejected"][0]["quota"], "max_nodes");
    assert_eq!(result["rejected"][0]["limit"], 8);
    let message = result["message"].as_str().unwrap();
    assert!(
        message.contains("max_nodes = 8") && message.contains("/agents/{id}/settings"),
        "{message}"
    );
    assert_eq!(read(&agent, "/out/f3")["content"], "3\n");
    assert_eq!(read(&agent, "/out/f4")["error"]["code"], "ENOENT");

    // The next command runs on a copy without the refused files, and its
    // own result comes back.
    let (status, next) = exec(&agent, "ls out; rm out/f1; echo later > out/later");
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["stdout"], "f1\nf2\nf3\n", "{next}");
    assert!(rejected(&next).is_empty(), "{next}");
    assert_eq!(read(&agent, "/out/later")["content"], "later\n");
    assert_eq!(read(&agent, "/out/f1")["error"]["code"], "ENOENT");
}

/// A file over `max_file_bytes`, a path past `max_path_depth` and content
/// past `max_stored_bytes` are each refused on their own; a refused change
/// to an existing file leaves the workspace's version, which the next
/// command sees on the computer again.
#[test]
fn files_over_size_depth_and_storage_quotas_are_refused_one_by_one() {
    let (agent, _process, _dir) = setup();
    settings(
        &agent,
        json!({ "max_file_bytes": 1000, "max_path_depth": 4, "max_stored_bytes": 200 }),
    );
    let (status, result) = exec(
        &agent,
        "head -c 5000 /dev/zero > big.bin; head -c 2000 /dev/zero > keep.txt; \
         mkdir -p a/b/c/d/e && echo x > a/b/c/d/e/f; \
         head -c 100 /dev/zero | tr '\\0' a > s1; head -c 120 /dev/zero | tr '\\0' b > s2; \
         echo ok > small.txt; echo done",
    );
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["stdout"], "done\n");
    let refused = rejected(&result);
    for expected in [
        ("/a/b/c/d/e", "ENAMETOOLONG"),
        ("/a/b/c/d/e/f", "ENAMETOOLONG"),
        ("/big.bin", "EFBIG"),
        ("/keep.txt", "EFBIG"),
    ] {
        assert!(
            refused.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?} in {result}"
        );
    }
    // 14 bytes were stored: one of the two small files fits in 200.
    let stored: Vec<&(String, String)> = refused.iter().filter(|(_, c)| c == "ENOSPC").collect();
    assert_eq!(stored.len(), 1, "{result}");
    let kept = if stored[0].0 == "/s1" { "/s2" } else { "/s1" };
    assert!(read(&agent, kept)["content"].is_string());
    assert_eq!(read(&agent, "/small.txt")["content"], "ok\n");
    assert_eq!(read(&agent, "/keep.txt")["content"], "kept\n");
    assert_eq!(read(&agent, "/a/b/c/d")["error"]["code"], "EISDIR");

    let (status, next) = exec(
        &agent,
        "cat keep.txt; test -e big.bin || echo no big; test -e a/b/c/d/e || echo no deep",
    );
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["stdout"], "kept\nno big\nno deep\n", "{next}");
    assert!(rejected(&next).is_empty(), "{next}");
}

/// A file's modification time travels with it: the workspace's to the
/// computer's copy, and the computer's back for a file a command wrote.
#[test]
fn modification_times_are_the_same_on_both_sides() {
    let (agent, _process, _dir) = setup();
    let mtime = stat(&agent, "/notes/plan.md")["mtime"].as_i64().unwrap();
    let (status, result) = exec(
        &agent,
        "stat -c %Y notes/plan.md; echo new > made.txt && touch -d @1500000000.250 made.txt",
    );
    assert_eq!(status, 200, "{result}");
    assert_eq!(result["stdout"], format!("{}\n", mtime / 1000), "{result}");
    assert_eq!(stat(&agent, "/made.txt")["mtime"], 1_500_000_000_250i64);
}

/// A computer command's `cwd` under a system name is refused before
/// anything runs, with the same answer however the command gets there.
#[test]
fn a_cwd_under_a_system_name_is_refused_before_running() {
    let (agent, _process, _dir) = setup();
    write(&agent, "/etc/app/conf", "x\n");
    write(&agent, "/tmp/note", "x\n");
    let symlink = json!({ "target": "/tmp", "path": "/scratch" }).to_string();
    ok(&agent, "a", Action::Tool(Tool::Symlink), &symlink);
    for (cwd, backend) in [
        ("/tmp", "computer"),
        ("/etc/app", "computer"),
        ("/tmp", "auto"),
        ("/scratch", "computer"),
    ] {
        let body = json!({ "command": "python3 -c 'print(1)'", "cwd": cwd, "backend": backend })
            .to_string();
        let (status, answer) = call(&agent, request("a", Action::Exec, Caller::Admin, &body));
        assert_eq!(
            failure(status, &answer),
            (400, "INVALID_REQUEST"),
            "{cwd}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(cwd) && message.contains("system directory of the computer"),
            "{message}"
        );
    }
    // A job is refused when it is queued, not when it runs.
    let body = json!({ "command": "make", "cwd": "/tmp", "backend": "computer", "detach": true })
        .to_string();
    let (status, answer) = call(&agent, request("a", Action::Exec, Caller::Admin, &body));
    assert_eq!(
        failure(status, &answer),
        (400, "INVALID_REQUEST"),
        "{answer}"
    );
    // The light shell has no system directories.
    let body = json!({ "command": "pwd", "cwd": "/etc/app", "backend": "shell" }).to_string();
    let (status, answer) = call(&agent, request("a", Action::Exec, Caller::Admin, &body));
    assert_eq!(status, 200, "{answer}");
}

/// Live sync admits each change on its own too: a process writing a file
/// over `max_file_bytes` does not stop the rest from coming back, and the
/// refusal is listed in the computer's status.
#[test]
fn live_sync_refuses_a_file_over_a_quota_and_brings_back_the_rest() {
    let (agent, _process, _dir) = setup();
    settings(&agent, json!({ "max_file_bytes": 1000 }));
    // The big file is written in an ignored directory and moved into place
    // whole, so no scan catches it half-written (a smaller version would be
    // admitted, and then its growth refused as an update).
    let body = json!({
        "command": "mkdir -p node_modules && head -c 5000 /dev/zero > node_modules/big \
                    && mv node_modules/big big.log; echo fine > fine.txt; sleep 60",
    })
    .to_string();
    let (status, answer) = call(
        &agent,
        request("a", Action::ProcessStart, Caller::Admin, &body),
    );
    assert_eq!(status, 201, "{answer}");
    let live = || stead_agent::computer::live::status(&agent.host().db).unwrap();
    tick_until(&agent, "fine.txt back and big.log refused", || {
        read(&agent, "/fine.txt")["content"] == "fine\n"
            && live()["rejected"].as_array().is_some_and(|r| !r.is_empty())
    });
    let status = live();
    assert_eq!(status["last_error"], Value::Null, "{status}");
    assert_eq!(status["rejected"][0]["path"], "/big.log", "{status}");
    assert_eq!(status["rejected"][0]["code"], "EFBIG", "{status}");
    assert_eq!(read(&agent, "/big.log")["error"]["code"], "ENOENT");
}

/// A `cwd` the computer itself cannot enter (it exists only in the
/// workspace, under an ignored tree) is the request's fault: `400` with the
/// computer's reason, and the computer's copy is kept (the next command
/// receives nothing).
#[test]
fn a_cwd_the_computer_refuses_answers_400_and_keeps_the_computer() {
    let (agent, _process, _dir) = setup();
    let (status, warm) = exec(&agent, "true");
    assert_eq!(status, 200, "{warm}");
    write(&agent, "/node_modules/pkg/index.js", "x\n");
    let body = json!({ "command": "ls", "cwd": "/node_modules/pkg", "backend": "computer" });
    let (status, answer) = call(
        &agent,
        request("a", Action::Exec, Caller::Admin, &body.to_string()),
    );
    assert_eq!(
        failure(status, &answer),
        (400, "INVALID_REQUEST"),
        "{answer}"
    );
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/node_modules/pkg"),
        "{answer}"
    );
    let (status, next) = exec(&agent, "cat notes/plan.md");
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["sync"]["sent"]["files"], 0, "not pushed again: {next}");
}
