//! The wire to the computer as the driver sees it: a [`Transport`] plus
//! the protocol's error rules.
//!
//! Everything here is about statuses and bodies: a 2xx answer is a body to
//! read or stream; any other answer becomes a typed [`ComputerError`] from
//! the protocol's error body; a request that never arrived is
//! [`ComputerError::Unreachable`]. What to send when is the driver's
//! business ([`super::run`]).

use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use stead_sync::{ErrorBody, ErrorCode};

use super::ComputerError;
use crate::host::{ByteStream, Method, Payload, Transport};

/// Largest error body read from the computer.
const MAX_ERROR_BODY: usize = 64 << 10;

/// The protocol's calls over a transport.
pub struct Link<'t, T: Transport> {
    transport: &'t T,
}

impl<'t, T: Transport> Link<'t, T> {
    pub fn new(transport: &'t T) -> Self {
        Link { transport }
    }

    /// Sends a request; answers other than 2xx become errors.
    async fn send(
        &self,
        step: &'static str,
        method: Method,
        path: &str,
        body: Option<Payload>,
    ) -> Result<ByteStream, ComputerError> {
        let (status, mut stream) = self
            .transport
            .send(method, path, body)
            .await
            .map_err(|reason| ComputerError::Unreachable { step, reason })?;
        if (200..300).contains(&status) {
            return Ok(stream);
        }
        let mut text = Vec::new();
        while let Some(piece) = stream.next().await {
            match piece {
                Ok(piece) if text.len() < MAX_ERROR_BODY => text.extend_from_slice(&piece),
                _ => break,
            }
        }
        match serde_json::from_slice::<ErrorBody>(&text) {
            Ok(body) if body.error.code == ErrorCode::Unavailable => {
                Err(ComputerError::Unavailable)
            }
            Ok(body) => Err(ComputerError::Refused {
                step,
                code: body.error.code,
                message: body.error.message,
            }),
            Err(_) => Err(ComputerError::Malformed {
                step,
                reason: format!(
                    "status {status}: {}",
                    String::from_utf8_lossy(&text)
                        .chars()
                        .take(200)
                        .collect::<String>()
                ),
            }),
        }
    }

    /// Sends a request and reads the whole answer.
    pub async fn bytes(
        &self,
        step: &'static str,
        method: Method,
        path: &str,
        body: Option<Payload>,
    ) -> Result<Vec<u8>, ComputerError> {
        let mut stream = self.send(step, method, path, body).await?;
        let mut out = Vec::new();
        while let Some(piece) = stream.next().await {
            out.extend_from_slice(
                &piece.map_err(|reason| ComputerError::Unreachable { step, reason })?,
            );
        }
        Ok(out)
    }

    /// Sends `body` as JSON (if any) and decodes a JSON answer.
    pub async fn json<A: DeserializeOwned>(
        &self,
        step: &'static str,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<A, ComputerError> {
        let bytes = self.bytes(step, method, path, body.map(json)).await?;
        serde_json::from_slice(&bytes).map_err(|e| ComputerError::Malformed {
            step,
            reason: e.to_string(),
        })
    }

    /// POSTs `body` as JSON and streams the answer.
    pub async fn stream(
        &self,
        step: &'static str,
        path: &str,
        body: &impl Serialize,
    ) -> Result<ByteStream, ComputerError> {
        self.send(step, Method::Post, path, Some(json(body))).await
    }

    /// GETs `path` and streams the answer.
    pub async fn get_stream(
        &self,
        step: &'static str,
        path: &str,
    ) -> Result<ByteStream, ComputerError> {
        self.send(step, Method::Get, path, None).await
    }
}

/// A JSON request body.
pub fn json(value: &impl Serialize) -> Payload {
    Payload {
        bytes: serde_json::to_vec(value).expect("protocol types serialize"),
        content_type: "application/json",
    }
}

/// A body of binary chunk frames.
pub fn frames(bytes: Vec<u8>) -> Payload {
    Payload {
        bytes,
        content_type: "application/octet-stream",
    }
}
