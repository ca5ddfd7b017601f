//! Every published tool schema accepts the bodies its HTTP route accepts
//! and rejects the ones it rejects, case by case (the same bodies sent to
//! the route on real SQLite and validated with the `jsonschema` crate); and
//! the OpenAI strict form of each accepts every accepted body once its
//! absent fields are sent as `null`, as strict-mode models send them.
//!
//! The cases are about shape: types, required and unknown fields, enum
//! values. Rules across fields (lines or bytes in `read`, exactly one time
//! field in a schedule, an octal mode) are the API's, named in its errors,
//! and are not in the schemas.

mod common;

use common::*;
use serde_json::{json, Map, Value};
use stead_agent::auth::Caller;
use stead_agent::catalog::formats::{openai_tool, render, Format};
use stead_agent::catalog::schema::{drop_nulls, input_schema};
use stead_agent::catalog::ModelTool;
use stead_agent::{Bytes, Entry, HookHeaders, Request};

/// Whether the HTTP route takes `arguments` as well-formed: anything but a
/// malformed-request error (a missing file is a well-formed request).
fn route_accepts(agent: &stead_agent::Agent<FakeHost>, tool: ModelTool, arguments: &Value) -> bool {
    let Value::Object(map) = arguments.clone() else {
        panic!("arguments are objects")
    };
    let invocation = match tool.invocation(map) {
        Ok(invocation) => invocation,
        Err(error) => return !matches!(error.code(), "INVALID_REQUEST" | "MALFORMED_JSON"),
    };
    let request = Request {
        entry: Entry::Http,
        agent: "a".into(),
        action: invocation.action,
        caller: Caller::Admin,
        query: invocation.query,
        hook: HookHeaders::default(),
        range: Default::default(),
        upgrade: false,
        origin: "http://stead.test".into(),
        body: Bytes(invocation.body),
    };
    match block_on(agent.dispatch(request)) {
        Ok(_) => true,
        Err(error) => !matches!(error.code(), "INVALID_REQUEST" | "MALFORMED_JSON"),
    }
}

fn valid(schema: &Value, instance: &Value) -> bool {
    jsonschema::validator_for(schema)
        .unwrap_or_else(|e| panic!("{e}: {schema}"))
        .is_valid(instance)
}

/// `arguments` with every property `schema` has and it lacks set to
/// `null`, at every object level the schema describes.
fn fill_nulls(schema: &Value, arguments: &Value) -> Value {
    let schema = schema
        .get("anyOf")
        .and_then(Value::as_array)
        .and_then(|v| {
            v.iter()
                .find(|s| s.get("properties").is_some() || s.get("items").is_some())
        })
        .unwrap_or(schema);
    match arguments {
        Value::Object(object) => {
            let mut out = Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    let value = match object.get(name) {
                        Some(value) => fill_nulls(property, value),
                        None => Value::Null,
                    };
                    out.insert(name.clone(), value);
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| {
                    schema
                        .get("items")
                        .map_or(item.clone(), |s| fill_nulls(s, item))
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Bodies each route accepts (`true`) or rejects (`false`) as malformed.
fn cases() -> Vec<(ModelTool, Value, bool)> {
    use ModelTool::*;
    vec![
        (Read, json!({ "path": "/a.txt" }), true),
        (
            Read,
            json!({ "path": "/a.txt", "offset": 2, "limit": 10, "line_numbers": true }),
            true,
        ),
        (
            Read,
            json!({ "path": "/a.txt", "byte_offset": 1, "byte_length": 2, "encoding": "base64" }),
            true,
        ),
        (Read, json!({ "path": "/a.txt", "offset": null }), true),
        (Read, json!({}), false),
        (Read, json!({ "path": 1 }), false),
        (Read, json!({ "path": "/a.txt", "offset": -1 }), false),
        (Read, json!({ "path": "/a.txt", "offset": "2" }), false),
        (
            Read,
            json!({ "path": "/a.txt", "encoding": "latin1" }),
            false,
        ),
        (
            Read,
            json!({ "path": "/a.txt", "line_numbers": null }),
            false,
        ),
        (Read, json!({ "path": "/a.txt", "color": true }), false),
        (Read, json!({ "path": "/a.txt", "offset": 0 }), false),
        (Read, json!({ "path": "/a.txt", "limit": 2000 }), true),
        (Read, json!({ "path": "/a.txt", "limit": 2001 }), false),
        (Read, json!({ "path": "/a.txt", "byte_length": 0 }), false),
        (
            Read,
            json!({ "path": "/a.txt", "byte_length": 262144 }),
            true,
        ),
        (
            Read,
            json!({ "path": "/a.txt", "byte_length": 262145 }),
            false,
        ),
        (Write, json!({ "path": "/w.txt", "content": "x" }), true),
        (
            Write,
            json!({ "path": "/w.txt", "content": "eA==", "encoding": "base64", "mode": "644", "parents": true }),
            true,
        ),
        (
            Write,
            json!({ "path": "/w.txt", "content": "x", "mode": 420 }),
            true,
        ),
        (Write, json!({ "path": "/w.txt" }), false),
        (Write, json!({ "path": "/w.txt", "content": ["x"] }), false),
        (
            Write,
            json!({ "path": "/w.txt", "content": "x", "mode": true }),
            false,
        ),
        (
            Write,
            json!({ "path": "/w.txt", "content": "x", "parents": "yes" }),
            false,
        ),
        (
            Edit,
            json!({ "path": "/a.txt", "edits": [{ "old": "one", "new": "1" }] }),
            true,
        ),
        (
            Edit,
            json!({ "path": "/a.txt", "edits": [{ "old": "o", "new": "0", "replace_all": true }], "dry_run": true }),
            true,
        ),
        (Edit, json!({ "path": "/a.txt" }), false),
        (
            Edit,
            json!({ "path": "/a.txt", "edits": [{ "old": "one" }] }),
            false,
        ),
        (
            Edit,
            json!({ "path": "/a.txt", "edits": [{ "old": "one", "new": 1 }] }),
            false,
        ),
        (
            Edit,
            json!({ "path": "/a.txt", "edits": { "old": "one", "new": "1" } }),
            false,
        ),
        (
            ApplyPatch,
            json!({ "patch": "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** End Patch\n" }),
            true,
        ),
        (
            ApplyPatch,
            json!({ "patch": "*** Begin Patch\n*** End Patch\n", "base": "/", "dry_run": true }),
            true,
        ),
        (ApplyPatch, json!({}), false),
        (ApplyPatch, json!({ "patch": ["x"] }), false),
        (ApplyPatch, json!({ "patch": "x", "strip": 1 }), false),
        (Ls, json!({}), true),
        (Ls, json!({ "path": "/", "limit": 10000 }), true),
        (Ls, json!({ "limit": 0 }), false),
        (Ls, json!({ "limit": 10001 }), false),
        (Ls, json!({ "limit": "5" }), false),
        (Ls, json!({ "recursive": true }), false),
        (Glob, json!({ "pattern": "**/*.txt" }), true),
        (
            Glob,
            json!({ "pattern": "*", "path": "/", "exclude": ["x"], "limit": 3 }),
            true,
        ),
        (Glob, json!({ "path": "/" }), false),
        (Glob, json!({ "pattern": "*", "exclude": "x" }), false),
        (Glob, json!({ "pattern": "*", "limit": 0 }), false),
        (Glob, json!({ "pattern": "*", "limit": 10001 }), false),
        (Grep, json!({ "pattern": "one" }), true),
        (
            Grep,
            json!({ "pattern": "o+", "regex": true, "ignore_case": true, "include": "*.txt", "exclude": ["b"], "context": 1, "before": 0, "after": 2, "output": "count", "limit": 10 }),
            true,
        ),
        (
            Grep,
            json!({ "pattern": "one", "include": ["*.txt", "*.md"] }),
            true,
        ),
        (Grep, json!({ "pattern": "one", "output": "lines" }), false),
        (Grep, json!({ "pattern": "one", "include": 3 }), false),
        (Grep, json!({ "pattern": 3 }), false),
        (Grep, json!({ "pattern": "" }), false),
        (Grep, json!({ "pattern": "one", "limit": 0 }), false),
        (Grep, json!({ "pattern": "one", "context": 1000000 }), false),
        (Bash, json!({ "command": "echo hi" }), true),
        (
            Bash,
            json!({ "command": "echo hi", "cwd": "/", "env": { "A": "1" }, "stdin": "", "timeout_ms": 1000, "backend": "shell", "output_encoding": "base64" }),
            true,
        ),
        (Bash, json!({ "command": "true", "detach": true }), true),
        (Bash, json!({ "command": "true", "detach": null }), true),
        (Bash, json!({}), false),
        (Bash, json!({ "command": "true", "backend": "gpu" }), false),
        (Bash, json!({ "command": "true", "env": { "A": 1 } }), false),
        (Bash, json!({ "command": "true", "detach": "yes" }), false),
        (Bash, json!({ "command": "true", "shell": "zsh" }), false),
        (Bash, json!({ "command": "true", "timeout_ms": 0 }), false),
        (Bash, json!({ "command": "true", "timeout_ms": -5 }), false),
        (JobOutput, json!({ "job": 1 }), true),
        (JobOutput, json!({ "job": 1, "from": 0, "limit": 10 }), true),
        (JobOutput, json!({}), false),
        (JobOutput, json!({ "job": "1" }), false),
        (JobOutput, json!({ "job": 1, "offset": 0 }), false),
        (JobOutput, json!({ "job": 1, "limit": 0 }), false),
        (JobOutput, json!({ "job": 1, "limit": 1048577 }), false),
        (JobCancel, json!({ "job": 1 }), true),
        (JobCancel, json!({ "job": 1.5 }), false),
        (ScheduleList, json!({}), true),
        (ScheduleList, json!({ "all": true }), false),
        (
            SchedulePut,
            json!({ "id": "s1", "cron": "@daily", "exec": { "command": "date" } }),
            true,
        ),
        (
            SchedulePut,
            json!({ "delay_ms": 1000, "webhook": { "url": "https://example.com/h", "body": { "a": 1 } }, "max_attempts": 2, "catch_up": "skip" }),
            true,
        ),
        (
            SchedulePut,
            json!({ "cron": "@daily", "exec": { "command": "date" }, "catch_up": "never" }),
            false,
        ),
        (
            SchedulePut,
            json!({ "cron": 5, "exec": { "command": "date" } }),
            false,
        ),
        (
            SchedulePut,
            json!({ "cron": "@daily", "exec": { "commands": "date" } }),
            false,
        ),
        (
            SchedulePut,
            json!({ "cron": "@daily", "webhook": { "href": "https://x" } }),
            false,
        ),
        (ScheduleDelete, json!({ "id": "s1" }), true),
        (ScheduleDelete, json!({}), false),
        (HookList, json!({}), true),
        (
            HookPut,
            json!({ "name": "gh", "exec": { "command": "cat" } }),
            true,
        ),
        (
            HookPut,
            json!({ "name": "gh", "exec": { "command": "cat" }, "secret": "0123456789abcdef0123" }),
            true,
        ),
        (HookPut, json!({ "exec": { "command": "cat" } }), false),
        (HookPut, json!({ "name": "gh" }), false),
        (
            HookPut,
            json!({ "name": "gh", "exec": { "command": "cat", "detach": true } }),
            false,
        ),
        (HookDelete, json!({ "name": "gh" }), true),
        (HookDelete, json!({ "name": 7 }), false),
        (Checkpoint, json!({}), true),
        (
            Checkpoint,
            json!({ "name": "before-refactor", "note": "green" }),
            true,
        ),
        (Checkpoint, json!({ "name": 3 }), false),
        (Checkpoint, json!({ "label": "x" }), false),
        (CheckpointList, json!({}), true),
        (CheckpointList, json!({ "before": 9, "limit": 200 }), true),
        (CheckpointList, json!({ "limit": 0 }), false),
        (CheckpointList, json!({ "limit": 201 }), false),
        (CheckpointList, json!({ "before": "9" }), false),
        (Diff, json!({ "from": "before-refactor" }), true),
        (
            Diff,
            json!({ "from": 1, "to": "now", "text": true, "paths": ["/src"], "limit": 10 }),
            true,
        ),
        (Diff, json!({}), false),
        (Diff, json!({ "from": true }), false),
        (Diff, json!({ "from": "now", "limit": 0 }), false),
        (Diff, json!({ "from": "now", "text": "yes" }), false),
        (Restore, json!({ "checkpoint": "before-refactor" }), true),
        (
            Restore,
            json!({ "checkpoint": 1, "paths": ["/a.txt"] }),
            true,
        ),
        (Restore, json!({}), false),
        (
            Restore,
            json!({ "checkpoint": 1, "paths": "/a.txt" }),
            false,
        ),
        (Undo, json!({}), true),
        (Undo, json!({ "steps": 2 }), false),
        // No computer here: a well-formed start is refused for that, after
        // the request is checked.
        (ProcessStart, json!({ "command": "sleep 1" }), true),
        (
            ProcessStart,
            json!({ "command": "npm run dev", "cwd": "/", "env": { "PORT": "3000" }, "ports": [3000, 5173], "restart": "on-failure", "keep_awake": true }),
            true,
        ),
        (
            ProcessStart,
            json!({ "command": "x", "restart": "always", "ports": [] }),
            true,
        ),
        (ProcessStart, json!({}), false),
        (ProcessStart, json!({ "command": ["sleep", "1"] }), false),
        (ProcessStart, json!({ "command": "x", "ports": [0] }), false),
        (
            ProcessStart,
            json!({ "command": "x", "ports": [70000] }),
            false,
        ),
        (
            ProcessStart,
            json!({ "command": "x", "ports": "3000" }),
            false,
        ),
        (
            ProcessStart,
            json!({ "command": "x", "ports": (1..=17).collect::<Vec<u16>>() }),
            false,
        ),
        (
            ProcessStart,
            json!({ "command": "x", "restart": "sometimes" }),
            false,
        ),
        (
            ProcessStart,
            json!({ "command": "x", "env": { "A": 1 } }),
            false,
        ),
        (
            ProcessStart,
            json!({ "command": "x", "keep_awake": "yes" }),
            false,
        ),
        (
            ProcessStart,
            json!({ "command": "x", "detach": true }),
            false,
        ),
        (ProcessList, json!({}), true),
        (ProcessList, json!({ "state": "running" }), false),
        (ProcessGet, json!({ "id": "p-0" }), true),
        (ProcessGet, json!({}), false),
        (ProcessGet, json!({ "id": 5 }), false),
        (ProcessOutput, json!({ "id": "p-0" }), true),
        (
            ProcessOutput,
            json!({ "id": "p-0", "from": 0, "limit": 10 }),
            true,
        ),
        (ProcessOutput, json!({ "from": 0 }), false),
        (ProcessOutput, json!({ "id": "p-0", "from": "0" }), false),
        (ProcessOutput, json!({ "id": "p-0", "offset": 0 }), false),
        (
            ProcessSignal,
            json!({ "id": "p-0", "signal": "TERM" }),
            true,
        ),
        (ProcessSignal, json!({ "id": "p-0" }), false),
        (ProcessSignal, json!({ "signal": "TERM" }), false),
        (ProcessSignal, json!({ "id": "p-0", "signal": 15 }), false),
        (
            ProcessSignal,
            json!({ "id": "p-0", "signal": "TERM", "all": true }),
            false,
        ),
        (ProcessStop, json!({ "id": "p-0" }), true),
        (ProcessStop, json!({ "id": "p-0", "grace_ms": 0 }), true),
        (ProcessStop, json!({ "id": "p-0", "grace_ms": 60000 }), true),
        (
            ProcessStop,
            json!({ "id": "p-0", "grace_ms": 60001 }),
            false,
        ),
        (ProcessStop, json!({ "id": "p-0", "grace_ms": -1 }), false),
        (ProcessStop, json!({ "id": "p-0", "grace_ms": "5" }), false),
        (ProcessStop, json!({ "grace_ms": 5 }), false),
        (PortShare, json!({ "port": 3000, "ttl_seconds": 60 }), true),
        (
            PortShare,
            json!({ "port": 3000, "ttl_seconds": 2592000 }),
            true,
        ),
        (PortShare, json!({ "port": 3000 }), false),
        (PortShare, json!({ "ttl_seconds": 60 }), false),
        (PortShare, json!({ "port": 0, "ttl_seconds": 60 }), false),
        (
            PortShare,
            json!({ "port": 65536, "ttl_seconds": 60 }),
            false,
        ),
        (
            PortShare,
            json!({ "port": "3000", "ttl_seconds": 60 }),
            false,
        ),
        (PortShare, json!({ "port": 3000, "ttl_seconds": 0 }), false),
        (
            PortShare,
            json!({ "port": 3000, "ttl_seconds": 2592001 }),
            false,
        ),
    ]
}

#[test]
fn each_schema_accepts_and_rejects_what_its_route_does() {
    let agent = agent();
    create(&agent, "a");
    ok(
        &agent,
        "a",
        stead_agent::Action::Tool(stead_agent::Tool::Write),
        r#"{"path":"/a.txt","content":"one\ntwo\n"}"#,
    );
    let cases = cases();
    let tools: std::collections::BTreeSet<&str> = cases.iter().map(|(t, _, _)| t.name()).collect();
    assert_eq!(tools.len(), ModelTool::ALL.len(), "every tool has cases");
    for (tool, arguments, accepted) in &cases {
        let schema = input_schema(*tool);
        assert_eq!(
            route_accepts(&agent, *tool, arguments),
            *accepted,
            "route: {} {arguments}",
            tool.name()
        );
        assert_eq!(
            valid(schema, arguments),
            *accepted,
            "schema: {} {arguments}",
            tool.name()
        );
        if *accepted {
            // As a strict-mode model sends it: every property, null where
            // not given; valid under the strict schema and, its nulls read
            // as not given, still taken by the route.
            let strict = openai_tool(*tool).unwrap()["parameters"].clone();
            let filled = fill_nulls(&strict, arguments);
            assert!(valid(&strict, &filled), "strict: {} {filled}", tool.name());
            let mut sent = filled.clone();
            drop_nulls(schema, &mut sent);
            assert!(
                route_accepts(&agent, *tool, &sent),
                "strict call: {} {sent}",
                tool.name()
            );
        }
    }
}

#[test]
fn every_format_carries_the_same_tools_and_schemas() {
    let mcp = render(Format::Mcp, &Caller::Admin).unwrap();
    let anthropic = render(Format::Anthropic, &Caller::Admin).unwrap();
    let ai_sdk = render(Format::AiSdk, &Caller::Admin).unwrap();
    let openai = render(Format::OpenAi, &Caller::Admin).unwrap();
    for (at, tool) in ModelTool::ALL.into_iter().enumerate() {
        let schema = input_schema(tool);
        assert_eq!(&mcp["tools"][at]["inputSchema"], schema);
        assert_eq!(&anthropic["tools"][at]["input_schema"], schema);
        assert_eq!(&ai_sdk["tools"][tool.name()]["inputSchema"], schema);
        let function = &openai["tools"][at];
        assert_eq!(
            (function["type"].as_str(), function["strict"].as_bool()),
            (Some("function"), Some(true))
        );
        assert_eq!(function["name"], tool.name());
        jsonschema::meta::validate(schema)
            .unwrap_or_else(|e| panic!("{}: not a valid JSON Schema: {e}", tool.name()));
        jsonschema::meta::validate(&function["parameters"])
            .unwrap_or_else(|e| panic!("{} (strict): {e}", tool.name()));
    }
}
