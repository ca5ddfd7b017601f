//! Server-sent events framing (the WHATWG `text/event-stream` format).

use serde_json::Value;

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
}
