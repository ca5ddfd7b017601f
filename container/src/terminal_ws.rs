//! One client's WebSocket on a terminal session (the wire is in
//! [`crate::terminal`]'s docs).
//!
//! One task serves the socket: it applies the client's frames in the order
//! they arrive (bytes to the pty, resizes to its window) and sends the
//! output the client is owed, so keys and resizes can never overtake each
//! other. The client going away ends only this task; the session lives on.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use serde_json::json;
use stead_sync::{ErrorBody, ErrorDetail};

use crate::error::ApiError;
use crate::terminal::{Control, Piece, Terminal};

/// Serves `socket` for `terminal`, with output from offset `from`.
pub async fn serve(terminal: Arc<Terminal>, from: u64, mut socket: WebSocket) {
    let mut changed = terminal.subscribe();
    let mut at = from;
    if send_json(&mut socket, &json!({"type": "attached", "from": from}))
        .await
        .is_err()
    {
        return;
    }
    loop {
        // Everything owed goes out before waiting again.
        while let Some(piece) = terminal.next_piece(at) {
            let sent = match piece {
                Piece::Bytes(bytes) => {
                    at += bytes.len() as u64;
                    socket.send(Message::Binary(bytes.into())).await
                }
                Piece::Skipped { from, to } => {
                    at = to;
                    send_json(
                        &mut socket,
                        &json!({"type": "skipped", "from": from, "to": to}),
                    )
                    .await
                }
                Piece::Exit(exit) => {
                    let _ = send_json(
                        &mut socket,
                        &json!({"type": "exit", "code": exit.code, "signal": exit.signal}),
                    )
                    .await;
                    let _ = socket.send(Message::Close(None)).await;
                    return;
                }
            };
            if sent.is_err() {
                return;
            }
        }
        tokio::select! {
            grown = changed.changed() => {
                if grown.is_err() {
                    return;
                }
            }
            message = socket.recv() => {
                let Some(Ok(message)) = message else {
                    return;
                };
                if !apply(&terminal, &mut socket, message).await {
                    return;
                }
            }
        }
    }
}

/// Applies one client frame; `false` once the client is gone.
async fn apply(terminal: &Terminal, socket: &mut WebSocket, message: Message) -> bool {
    match message {
        Message::Binary(bytes) => {
            if let Err(error) = terminal.write(&bytes).await {
                // The shell is gone; its exit reaches the client next.
                eprintln!(
                    "stead-computer: writing to terminal {}: {error}",
                    terminal.id
                );
            }
            true
        }
        Message::Text(text) => {
            let applied = serde_json::from_str::<Control>(text.as_str())
                .map_err(|e| ApiError::InvalidRequest(format!("bad control frame: {e}")))
                .and_then(|control| match control {
                    Control::Resize { cols, rows } => terminal.resize(cols, rows),
                });
            match applied {
                Ok(()) => true,
                Err(error) => send_error(socket, &error).await.is_ok(),
            }
        }
        Message::Close(_) => false,
        // Pings are answered by the socket itself.
        Message::Ping(_) | Message::Pong(_) => true,
    }
}

async fn send_json(socket: &mut WebSocket, value: &serde_json::Value) -> Result<(), axum::Error> {
    socket.send(Message::Text(value.to_string().into())).await
}

/// `{"type":"error","error":{"code","message"}}`: the server's structured
/// error, as a frame.
async fn send_error(socket: &mut WebSocket, error: &ApiError) -> Result<(), axum::Error> {
    let body = ErrorBody {
        error: ErrorDetail {
            code: error.code(),
            message: error.to_string(),
        },
    };
    let mut value = serde_json::to_value(&body).expect("an error body serializes");
    value["type"] = json!("error");
    send_json(socket, &value).await
}
