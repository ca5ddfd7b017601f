//! Server-sent events framing (the WHATWG `text/event-stream` format), and
//! the keep-alive comments of a quiet stream.
//!
//! **Keep-alive.** A notification stream can be quiet for hours, and what
//! sits between server and client takes a quiet connection for a dead one
//! (Node's `fetch`, which the TypeScript SDK uses, ends a body idle for
//! 300 s; proxies often sooner). So a stream quiet for one interval gets a
//! comment line ([`KEEP_ALIVE`]), which every SSE reader skips.
//!
//! Where the timer lives: in the response body itself
//! ([`with_keep_alive`], driven by the platform's timer for the interval the
//! glue reads from `MCP_KEEPALIVE_MS`), not in the Durable Object's alarm.
//! An open stream is an unfinished response, which keeps the object in
//! memory anyway; a timer that exists only while that body is being read
//! adds no wake-up of its own and ends with the stream (a client that goes
//! away drops the body, and with it the timer). The alarm would be a
//! stored, durable wake-up: it would outlive the streams, wake an evicted
//! object to find none, and it is the one alarm the jobs and schedules
//! share.

use std::future::Future;

use futures::future::{select, Either};
use futures::{Stream, StreamExt};
use serde_json::Value;

/// The comment a quiet stream gets (a line starting with `:`).
pub const KEEP_ALIVE: &str = ": keep-alive\n\n";

/// The interval used when none is set: well inside the 300 s of Node's body
/// timeout and the minute or so of common proxies.
pub const DEFAULT_KEEP_ALIVE_MS: u64 = 20_000;

/// `body`, with [`KEEP_ALIVE`] sent whenever it has been quiet for one
/// `tick()` (a new timer for each wait, so a busy stream gets none); it
/// ends when `body` does.
pub fn with_keep_alive<B, T, F>(body: B, tick: T) -> impl Stream<Item = Vec<u8>>
where
    B: Stream<Item = Vec<u8>> + Unpin,
    T: FnMut() -> F,
    F: Future<Output = ()>,
{
    futures::stream::unfold((body, tick), |(mut body, mut tick)| async move {
        let timer = std::pin::pin!(tick());
        let next = match select(body.next(), timer).await {
            Either::Left((chunk, _)) => chunk,
            Either::Right(((), _)) => Some(KEEP_ALIVE.as_bytes().to_vec()),
        };
        next.map(|chunk| (chunk, (body, tick)))
    })
}

/// One event carrying JSON-RPC message `message`, with SSE id `id` when
/// the stream is resumable. JSON text has no raw line breaks, so the
/// message is one `data` line.
pub fn event(id: Option<&str>, message: &Value) -> String {
    let mut text = String::new();
    if let Some(id) = id {
        text.push_str("id: ");
        text.push_str(id);
        text.push('\n');
    }
    text.push_str("event: message\ndata: ");
    text.push_str(&message.to_string());
    text.push_str("\n\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_one_data_line() {
        let message = json!({ "text": "two\nlines" });
        assert_eq!(
            event(Some("4.1"), &message),
            "id: 4.1\nevent: message\ndata: {\"text\":\"two\\nlines\"}\n\n"
        );
        assert_eq!(event(None, &json!(1)), "event: message\ndata: 1\n\n");
    }

    #[test]
    fn a_quiet_stream_gets_a_comment_and_a_busy_one_its_events() {
        use futures::channel::mpsc;
        use futures::executor::block_on_stream;
        // The timer fires at once: whenever no event is waiting, a comment.
        let (events, body) = mpsc::unbounded::<Vec<u8>>();
        events.unbounded_send(b"one".to_vec()).unwrap();
        let mut stream = block_on_stream(Box::pin(with_keep_alive(body, || {
            futures::future::ready(())
        })));
        assert_eq!(stream.next().unwrap(), b"one", "a waiting event goes first");
        assert_eq!(stream.next().unwrap(), KEEP_ALIVE.as_bytes());
        assert_eq!(stream.next().unwrap(), KEEP_ALIVE.as_bytes());
        events.unbounded_send(b"two".to_vec()).unwrap();
        assert_eq!(stream.next().unwrap(), b"two");
        drop(events);
        assert_eq!(stream.next(), None, "it ends with the body");
        // A timer that never fires: only the events.
        let (events, body) = mpsc::unbounded::<Vec<u8>>();
        events.unbounded_send(b"x".to_vec()).unwrap();
        drop(events);
        let all: Vec<Vec<u8>> =
            block_on_stream(Box::pin(with_keep_alive(body, futures::future::pending))).collect();
        assert_eq!(all, [b"x".to_vec()]);
        assert!(KEEP_ALIVE.starts_with(':') && KEEP_ALIVE.ends_with("\n\n"));
    }
}
