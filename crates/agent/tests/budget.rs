//! The statement budget: how many SQL statements, and rows written, each
//! common request costs, counted on real SQLite through the `Sql` trait
//! (`FaultySql::statements`, `FaultySql::rows_written`). A feature that adds
//! work to every request fails here, not in a benchmark months later.
//!
//! Each budget is what the request needs, with a comment saying what its
//! statements are. Rows written count triggers too (the usage counters in
//! `meta` follow `nodes` and `chunks` by trigger). Lower a budget when a
//! change makes a request cheaper; raise one only for work the request
//! itself needs.

mod common;

use common::*;
use stead_agent::auth::{Caller, Scope};
use stead_agent::{Action, Agent, Tool};

/// What one request cost.
struct Cost {
    statements: Vec<String>,
    rows_written: u64,
}

/// Dispatches `body` to `action` as `caller` (expecting success) and
/// counts what it ran.
fn cost_as(agent: &Agent<FakeHost>, caller: Caller, action: Action, body: &str) -> Cost {
    let db = &agent.host().db;
    db.statements.borrow_mut().clear();
    let before = db.rows_written();
    let (status, answer) = call(agent, request("a", action, caller, body));
    assert!((200..300).contains(&status), "status {status}: {answer}");
    Cost {
        statements: db.statements.borrow().clone(),
        rows_written: db.rows_written() - before,
    }
}

fn cost(agent: &Agent<FakeHost>, action: Action, body: &str) -> Cost {
    cost_as(agent, Caller::Admin, action, body)
}

/// Asserts `cost` is within `statements` and `rows` (listing what ran
/// when it is not).
#[track_caller]
fn within(what: &str, cost: &Cost, statements: usize, rows: u64) {
    let ran = cost
        .statements
        .iter()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n  ");
    assert!(
        cost.statements.len() <= statements,
        "{what}: {} statements, budget {statements}:\n  {ran}",
        cost.statements.len()
    );
    assert!(
        cost.rows_written <= rows,
        "{what}: {} rows written, budget {rows}:\n  {ran}",
        cost.rows_written
    );
}

/// Agent `a`, created and past its first request (which checks the
/// schema, arms the alarm and reads the settings once per instance), with
/// `/d/f.txt` (1 KB) in it.
fn warm_agent() -> Agent<FakeHost> {
    let agent = agent();
    create(&agent, "a");
    let content = "x".repeat(1000);
    let body = serde_json::json!({ "path": "/d/f.txt", "content": content }).to_string();
    ok(&agent, "a", Action::Tool(Tool::Write), &body);
    agent
}

#[test]
fn ping_costs_no_statement() {
    let agent = warm_agent();
    // Reaching the agent: the schema, the alarm and whether a fork is being
    // copied are known to the instance after its first request.
    within("ping", &cost(&agent, Action::Ping, ""), 0, 0);
}

#[test]
fn stat_and_read_cost_their_lookups_only() {
    let agent = warm_agent();
    let stat = r#"{"path":"/d/f.txt"}"#;
    // Two lookups: `d` in the root, `f.txt` in `d`. No audit, checkpoint,
    // notification or live push: a read changes nothing.
    within("stat", &cost(&agent, Action::Tool(Tool::Stat), stat), 2, 0);
    // The two lookups, the file's chunk list and its one chunk.
    within("read", &cost(&agent, Action::Tool(Tool::Read), stat), 4, 0);
}

#[test]
fn a_token_is_looked_up_once_per_instance() {
    let agent = warm_agent();
    let reader = token("t1", &[Scope::Read]);
    let stat = r#"{"path":"/d/f.txt"}"#;
    // The first request with a token asks whether it was revoked...
    let first = cost_as(&agent, reader.clone(), Action::Tool(Tool::Stat), stat);
    within("first stat with a token", &first, 3, 0);
    // ...later ones do not (a revocation goes through this instance).
    let again = cost_as(&agent, reader, Action::Tool(Tool::Stat), stat);
    within("stat with a token", &again, 2, 0);
}

#[test]
fn a_small_write_costs_its_checkpoint_its_change_and_its_audit_entry() {
    let agent = warm_agent();
    let body = serde_json::json!({ "path": "/d/g.txt", "content": "y".repeat(1000) }).to_string();
    let write = cost(&agent, Action::Tool(Tool::Write), &body);
    // Automatic checkpoint (4): the path resolved for its scope (2
    // lookups, the nodes kept for pinning), the checkpoint row with its
    // counters and the revision it pins, its root's row (missing: no
    // chunks to pin). The write (8): the revision bumped (reading the usage
    // it starts from in the same statement: 1 KB more is far from every
    // quota, so no usage check at the end), the path resolved (2), the
    // node (made with its size, the parent's mtime stamped by the same
    // statement), its entry, the chunk, the file's chunk list, the change
    // record. Retention (1): the checkpoints past the newest 20, both
    // kinds in one query. The audit entry (1, reading the revision it
    // records in the same statement). No live push's question: this
    // instance knows no process runs (it asked after the first write).
    // Rows: checkpoint, root, revision, node, entry, parent, chunk, chunk
    // list, change, audit entry, and two usage counters by trigger.
    within("write of a new 1 KB file", &write, 14, 12);
    // Replacing it pins the old content and stamps the node's size (one
    // statement more each), and drops the old chunk list and chunk in
    // place of the new node and entry.
    let body = serde_json::json!({ "path": "/d/g.txt", "content": "z".repeat(1000) }).to_string();
    let again = cost(&agent, Action::Tool(Tool::Write), &body);
    within("write over a 1 KB file", &again, 16, 11);
}

#[test]
fn a_dry_run_takes_no_checkpoint_and_makes_no_revision() {
    let agent = warm_agent();
    let body = r#"{"path":"/d/f.txt","edits":[{"old":"xxxx","new":"yy","replace_all":true}],"dry_run":true}"#;
    // The lookups (2) and the file's content (1), then the audit entry: no
    // checkpoint, and nothing written but the entry.
    let dry = cost(&agent, Action::Tool(Tool::Edit), body);
    within("dry-run edit", &dry, 4, 1);
    assert!(
        !dry.statements.iter().any(|s| s.contains("checkpoints")),
        "a dry run touches no checkpoint: {:?}",
        dry.statements
    );
}

#[test]
fn delete_and_mkdir_cost_their_checkpoint_change_and_audit_entry() {
    let agent = warm_agent();
    let rm = cost(&agent, Action::Tool(Tool::Rm), r#"{"path":"/d/f.txt"}"#);
    // Checkpoint (5): lookups 2, row, root row, the file's chunks pinned.
    // The delete (9): revision, lookups 2, the chunk list dropped, the
    // node, its entry, the parent's mtime, the chunk no longer held (here
    // the checkpoint holds it), the change record; no usage check (a
    // removal only frees). Retention 1, audit 1.
    within("rm of a 1 KB file", &rm, 16, 11);
    let mkdir = cost(&agent, Action::Tool(Tool::Mkdir), r#"{"path":"/e"}"#);
    // Checkpoint (3): lookup, row, root row. The mkdir (5): revision (with
    // the usage), lookup, node (with the parent's mtime), entry, change.
    // Retention 1, audit 1.
    within("mkdir", &mkdir, 10, 9);
}

#[test]
fn listing_a_hundred_entries_is_one_query() {
    let agent = warm_agent();
    for i in 0..100 {
        let body = serde_json::json!({ "path": format!("/many/f{i:03}"), "content": "x" });
        ok(&agent, "a", Action::Tool(Tool::Write), &body.to_string());
    }
    let ls = cost(&agent, Action::Tool(Tool::Ls), r#"{"path":"/many"}"#);
    // The directory's lookup and its entries (one statement for all 100).
    within("ls of 100 entries", &ls, 2, 0);
}

#[test]
fn exec_of_true_in_the_shell() {
    let agent = warm_agent();
    let exec = cost(&agent, Action::Exec, r#"{"command":"true"}"#);
    // The cwd (the root) read (1); the whole-workspace checkpoint the
    // shell takes before a command (6): the newest of this revision
    // (none), the row, root, entries, chunks, counters; the outcome's
    // revision (1); retention (1); the audit entry (1; the instance knows
    // no process runs, so the live push asks nothing). No alarm re-armed:
    // the light
    // shell starts nothing the alarm follows. Rows: the checkpoint, its
    // root, the workspace's two entries and one chunk, its counters, the
    // audit entry.
    within("exec of true", &exec, 10, 7);
    // At the same revision the checkpoint is reused (and nothing is
    // pruned, as nothing was added).
    let again = cost(&agent, Action::Exec, r#"{"command":"true"}"#);
    within("exec of true again", &again, 4, 1);
}

#[test]
fn the_breakdown_counts_each_stage_statements() {
    use stead_agent::breakdown::Stage;
    let agent = warm_agent();
    let body = serde_json::json!({ "path": "/d/g.txt", "content": "y".repeat(1000) }).to_string();
    let db = &agent.host().db;
    db.statements.borrow_mut().clear();
    let write = request("a", Action::Tool(Tool::Write), Caller::Admin, &body);
    let (outcome, breakdown) = block_on(agent.dispatch_timed(write));
    outcome.expect("the write succeeds");
    let stages: Vec<(Stage, u64)> = breakdown
        .stages
        .iter()
        .map(|cost| (cost.stage, cost.statements))
        .collect();
    // The same 14 statements as the write's budget above, by stage: the
    // checkpoint, the write and the retention are the operation; the
    // live push asks nothing (no process runs, as the instance knows).
    assert_eq!(
        stages,
        [
            (Stage::Admission, 0),
            (Stage::Operation, 13),
            (Stage::Audit, 1),
            (Stage::Notify, 0),
            (Stage::LiveSync, 0),
        ]
    );
    let total: u64 = stages.iter().map(|(_, statements)| statements).sum();
    assert_eq!(total, db.statements.borrow().len() as u64);
    assert!(
        breakdown
            .server_timing()
            .starts_with("admission;dur=0.000;desc=\"0 sql\", operation;dur="),
        "{}",
        breakdown.server_timing()
    );
}

#[test]
fn the_live_push_asks_again_after_anything_that_could_start_a_process() {
    // (Saving a process record, as a start does, makes the instance ask
    // again too: `crates/agent/tests/processes.rs` runs live pushes.)
    let agent = warm_agent();
    let asks = |cost: &Cost| cost.statements.iter().any(|s| s.contains("FROM processes"));
    let write = |content: &str| {
        let body = serde_json::json!({ "path": "/d/g.txt", "content": content }).to_string();
        cost(&agent, Action::Tool(Tool::Write), &body)
    };
    // The first write of this instance asked; a file tool starts nothing.
    assert!(!asks(&write("a")));
    // Nor does a light-shell command or a read, whichever way it comes.
    cost(&agent, Action::Exec, r#"{"command":"true"}"#);
    cost(&agent, Action::Processes, "");
    assert!(!asks(&write("b")));
    // The alarm starts, restarts and stops processes: the next write asks
    // again, once.
    block_on(agent.alarm()).expect("the alarm runs");
    assert!(asks(&write("c")));
    assert!(!asks(&write("d")));
}

/// Creates `n` small files in `/shell/<dir>` by redirection in one exec
/// (the small-writes row of `stead-bench shell`), checks they all hold
/// their line, and returns what the exec cost.
fn exec_creating(agent: &Agent<FakeHost>, dir: &str, n: usize) -> Cost {
    let cwd = format!("/shell/{dir}");
    ok(
        agent,
        "a",
        Action::Tool(Tool::Mkdir),
        &serde_json::json!({ "path": cwd, "parents": true }).to_string(),
    );
    let command = format!(r#"for i in $(seq {n}); do echo "line $i" > f$i.txt; done"#);
    let body = serde_json::json!({ "command": command, "cwd": cwd, "backend": "shell" });
    let exec = cost(agent, Action::Exec, &body.to_string());
    let vfs = agent.vfs();
    let listed = vfs
        .list(
            &stead_vfs::VPath::parse(&cwd).unwrap(),
            None,
            usize::MAX >> 1,
        )
        .unwrap();
    assert_eq!(listed.len(), n, "files in {cwd}");
    for i in 1..=n {
        let path = stead_vfs::VPath::parse(&format!("{cwd}/f{i}.txt")).unwrap();
        assert_eq!(
            vfs.read_file(&path).unwrap(),
            format!("line {i}\n").as_bytes()
        );
    }
    exec
}

#[test]
fn an_exec_creating_small_files_costs_few_statements_each() {
    let agent = warm_agent();
    let ten = exec_creating(&agent, "w10", 10);
    let hundred = exec_creating(&agent, "w100", 100);
    // What a file adds: the 90 files more of the second exec (the rest,
    // the checkpoint, the cwd, the audit entry, costs both the same).
    let per_file = (hundred.statements.len() - ten.statements.len()) as f64 / 90.0;
    let rows_per_file = (hundred.rows_written - ten.rows_written) as f64 / 90.0;
    let last_file: Vec<&String> = hundred.statements.iter().rev().take(30).rev().collect();
    // Per file (16 before issue 28's cuts): the name looked up at `>`
    // (the folder's two names were met by the first file's lookup, and
    // the exec's batch keeps them); then the write at the end of the
    // `echo`: the revision (with the usage it starts from: 8 bytes more
    // is far from every quota, so no usage check at its end), the node
    // (with the folder's mtime stamped in the same statement), its entry,
    // the chunk, the file's chunk list, the change record. The write
    // looks nothing up: the batch knows the folder and that the name was
    // absent, and no change since could have made it.
    assert!(
        per_file <= 7.0,
        "{per_file} statements per file; the exec's last ones:\n{last_file:#?}"
    );
    // Rows: the node, its entry, the folder's mtime, the chunk, the chunk
    // list, the change record, the revision, and the two usage counters
    // (by trigger).
    assert!(rows_per_file <= 9.2, "{rows_per_file} rows per file");
    // The fixed part: the cwd, the workspace's checkpoint, the outcome's
    // revision, retention, the audit entry (see `exec_of_true_in_the_shell`).
    assert!(
        ten.statements.len() as f64 <= 10.0 * per_file + 24.0,
        "10 files: {} statements",
        ten.statements.len()
    );
}
