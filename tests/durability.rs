//! End-to-end: a workspace survives a restart of the runtime. One
//! `wrangler dev` writes, is stopped, and a second one started on the same
//! state folder must serve exactly the same workspace.

mod common;

use common::{expect_made, expect_ok, Agent, Noise};
use serde_json::json;
use stead_harness::{temp_state, Runtime};

/// More than two chunks, so the upload is stored as several rows.
const BLOB_LEN: usize = 2 * 512 * 1024 + 777;
const BLOB_SEED: u64 = 42;

#[test]
fn workspace_survives_restart() {
    let state = temp_state();
    let first = Runtime::start(state.path());
    let agent = Agent::create_on(first.client(), "durable");
    agent.write("/docs/readme.md", "# Durable\nsurvives restarts\n");
    agent.ok(
        "write",
        json!({ "path": "/bin/run.sh", "content": "#!/bin/sh\necho hi\n", "mode": "755" }),
    );
    expect_made(&agent.upload("/data/blob.bin", "", Noise::new(BLOB_SEED, BLOB_LEN as u64)));
    agent.ok("mkdir", json!({ "path": "/empty/nested", "parents": true }));
    agent.ok(
        "symlink",
        json!({ "target": "../docs/readme.md", "path": "/data/link" }),
    );
    agent.ok(
        "edit",
        json!({ "path": "/docs/readme.md", "edits": [{ "old": "survives", "new": "outlives" }] }),
    );
    let before = agent.snapshot();
    let changes_before = agent.ok("changes", json!({}));
    let revision = agent.revision();
    assert_eq!(revision, 6);
    first.stop();

    let second = Runtime::start(state.path());
    let agent = Agent {
        client: second.client(),
        ..agent
    };
    // Created before, so creating again is a no-op at the same revision.
    assert_eq!(
        expect_ok(&agent.client.create(&agent.id)),
        json!({ "agent": agent.id, "created": false, "revision": revision })
    );
    assert_eq!(agent.snapshot(), before);
    assert_eq!(agent.ok("changes", json!({})), changes_before);
    assert_eq!(
        agent.read("/docs/readme.md"),
        "# Durable\noutlives restarts\n"
    );
    assert_eq!(agent.read("/data/link"), "# Durable\noutlives restarts\n");
    assert_eq!(
        agent.ok("readlink", json!({ "path": "/data/link" }))["target"],
        "../docs/readme.md"
    );
    assert_eq!(agent.stat("/bin/run.sh")["mode"], "0755");
    assert_eq!(agent.stat("/empty/nested")["type"], "dir");
    assert_eq!(
        agent.download("/data/blob.bin"),
        Noise::bytes(BLOB_SEED, BLOB_LEN)
    );
    assert_eq!(agent.revision(), revision);

    // And it keeps working: the next change gets the next revision.
    assert_eq!(agent.write("/after.txt", "after")["revision"], revision + 1);
    second.stop();
}

#[test]
fn a_fork_cut_off_by_a_restart_leaves_no_usable_agent_and_resumes() {
    const SIZE: u64 = 160 << 20;
    let state = temp_state();
    let first = Runtime::start(state.path());
    let source = Agent::create_on(first.client(), "fork-src");
    expect_made(&source.upload("/big.bin", "", Noise::new(3, SIZE)));
    let client = first.client();
    let fork = std::thread::spawn(move || {
        client.send("POST", "/agents/fork-src/fork", br#"{"to":"fork-dst"}"#)
    });
    // Wait until the copy is under way, then kill the runtime mid-fork.
    let target = Agent {
        id: "fork-dst".into(),
        client: first.client(),
    };
    while target.send("GET", "", b"").error_code() != "AGENT_FORKING" {
        if fork.is_finished() {
            let reply = fork.join().expect("the fork request");
            panic!(
                "the fork ended before it was seen under way: {} {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    first.stop();
    let _ = fork.join();

    let second = Runtime::start(state.path());
    let target = Agent {
        client: second.client(),
        ..target
    };
    let source = Agent {
        client: second.client(),
        ..source
    };
    // Half copied is never usable: it is still a fork in progress, or gone.
    let half = target.send("GET", "", b"");
    assert!(
        matches!(
            half.error_code().as_str(),
            "AGENT_FORKING" | "AGENT_NOT_FOUND"
        ),
        "a half-copied fork answered {}: {}",
        half.status,
        String::from_utf8_lossy(&half.body)
    );
    // The source lost nothing, and asking again completes the fork.
    let (status, body) = source.client.download(&source.id, "/big.bin");
    assert_eq!(status, 200);
    assert_eq!(common::assert_same_stream(body, Noise::new(3, SIZE)), SIZE);
    let done = source.send("POST", "/fork", br#"{"to":"fork-dst"}"#);
    expect_made(&done);
    let (status, body) = target.client.download(&target.id, "/big.bin");
    assert_eq!(status, 200);
    assert_eq!(common::assert_same_stream(body, Noise::new(3, SIZE)), SIZE);
    second.stop();
}
