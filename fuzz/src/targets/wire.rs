//! The sync protocol's JSON messages, decoded from arbitrary bytes.
//!
//! The container reads `Push`/`ExecSpec`/`ChunkRequest`/`Ack` from the
//! Durable Object, and the Durable Object reads `ExecEvent`s, `Status`,
//! `ApplyReply` and `ErrorBody` from the container. A decoder that accepts
//! something it cannot re-encode to the same value would let the two sides
//! disagree about what was said. The checks, for every message type: no
//! panic, and whatever decodes re-encodes and decodes to an equal value,
//! whose encoding is then stable.

use serde::de::DeserializeOwned;
use serde::Serialize;
use stead_sync::{
    Ack, ApplyReply, Change, ChunkRequest, ErrorBody, ExecEvent, ExecSpec, Push, Status,
};

use crate::Target;

pub const TARGET: Target = Target {
    name: "wire",
    about: "serde decoding of Push/ExecEvent/Change and the other sync messages: no panic, decode-encode-decode round trip",
    run,
    seeds,
    tokens: &[
        "{", "}", "[", "]", ",", ":", "\"", "null", "true", "false", "\"type\":", "\"file\"",
        "\"dir\"", "\"symlink\"", "\"exit\"", "\"stdout\"", "\"entry\":", "\"chunks\":",
        "\"changes\":", "\"path\":", "\"mode\":", "\"size\":", "\"\\u0000\"", "\"\\ud800\"",
        "1e999", "-0", "4294967296", "18446744073709551616",
        "\"0000000000000000000000000000000000000000000000000000000000000000\"",
    ],
    bounds: None,
};

pub fn run(data: &[u8]) {
    round_trip::<Push>(data);
    round_trip::<ExecEvent>(data);
    round_trip::<Change>(data);
    round_trip::<Vec<Change>>(data);
    round_trip::<ExecSpec>(data);
    round_trip::<ChunkRequest>(data);
    round_trip::<Ack>(data);
    round_trip::<Status>(data);
    round_trip::<ApplyReply>(data);
    round_trip::<ErrorBody>(data);
}

fn round_trip<T>(data: &[u8])
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let Ok(value) = serde_json::from_slice::<T>(data) else {
        return;
    };
    let encoded = serde_json::to_vec(&value).expect("a decoded value encodes");
    let again: T = serde_json::from_slice(&encoded).unwrap_or_else(|e| {
        panic!(
            "{} re-encoded as {} does not decode: {e}",
            std::any::type_name::<T>(),
            String::from_utf8_lossy(&encoded)
        )
    });
    assert_eq!(value, again, "{}", std::any::type_name::<T>());
    assert_eq!(serde_json::to_vec(&again).expect("encodes"), encoded);
}

fn seeds() -> Vec<Vec<u8>> {
    let hash = "ab".repeat(32);
    [
        format!(
            r#"{{"instance":"i-1","full":true,"changes":[{{"path":"/a","entry":{{"type":"file","mode":420,"size":5,"chunks":["{hash}"]}}}},{{"path":"/d","entry":{{"type":"dir","mode":493}}}},{{"path":"/l","entry":{{"type":"symlink","target":"../x"}}}},{{"path":"/gone","entry":null}}],"ignore":"node_modules/\n"}}"#
        ),
        r#"{"type":"stdout","data":"aGVsbG8="}"#.to_string(),
        r#"{"type":"exit","code":0,"signal":null,"timed_out":false,"cancelled":false,"changes":[],"skipped":[{"path":"/p","reason":"fifo"}]}"#.to_string(),
        format!(r#"{{"path":"/a","entry":{{"type":"file","mode":420,"size":0,"chunks":["{}"]}}}}"#, hash.to_uppercase()),
        r#"[{"path":"/x","entry":null}]"#.to_string(),
        format!(r#"{{"exec":"e1","chunks":["{hash}"]}}"#),
        r#"{"exec":"e1"}"#.to_string(),
        r#"{"protocol":1,"instance":"abc","running":null}"#.to_string(),
        r#"{"status":"applied","written":3}"#.to_string(),
        r#"{"error":{"code":"STALE_INSTANCE","message":"no"}}"#.to_string(),
        r#"{"id":"e1","command":"ls","cwd":"/","env":{"A":"1"},"stdin":"","timeout_ms":1000}"#
            .to_string(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect()
}
