//! The wire to the computer: HTTP requests to the agent's `Computer`
//! Durable Object, which starts the container and forwards them (see
//! [`super::host`]).
//!
//! Everything here is transport: status codes and error bodies become
//! [`ComputerError`]s, bodies become bytes or streams. What to send when is
//! the driver's business ([`super::run`]).

use futures::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use stead_sync::{ErrorBody, ErrorCode, CONTAINER_HEADER};
use worker::{Env, Headers, Method, Request, RequestInit, Response, Stub};

use super::ComputerError;

/// Binding of the container-enabled Durable Object class.
pub const BINDING: &str = "COMPUTER";

/// Header telling the `Computer` object whether the agent's settings allow
/// its container outbound network (applied when the container starts).
pub const INTERNET_HEADER: &str = "x-stead-internet";

/// A connection to one agent's computer.
pub struct Link {
    stub: Stub,
    agent: String,
    internet: bool,
}

impl Link {
    pub fn new(env: &Env, agent: &str, internet: bool) -> Result<Self, ComputerError> {
        let namespace = env
            .durable_object(BINDING)
            .map_err(|_| ComputerError::Unavailable)?;
        let stub = namespace
            .id_from_name(agent)
            .and_then(|id| id.get_stub())
            .map_err(|e| unreachable("connect", e))?;
        Ok(Link {
            stub,
            agent: agent.to_string(),
            internet,
        })
    }

    /// Sends a request; answers other than 2xx become errors.
    pub async fn send(
        &self,
        step: &'static str,
        method: Method,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
    ) -> Result<Response, ComputerError> {
        let headers = Headers::new();
        headers
            .set(CONTAINER_HEADER, &self.agent)
            .and_then(|()| headers.set(INTERNET_HEADER, &self.internet.to_string()))
            .map_err(|e| unreachable(step, e))?;
        let mut init = RequestInit::new();
        init.with_method(method);
        if let Some((bytes, content_type)) = body {
            headers
                .set("content-type", content_type)
                .map_err(|e| unreachable(step, e))?;
            let array = js_sys::Uint8Array::from(bytes.as_slice());
            init.with_body(Some(array.into()));
        }
        init.with_headers(headers);
        let req = Request::new_with_init(&format!("http://computer{path}"), &init)
            .map_err(|e| unreachable(step, e))?;
        let mut resp = self
            .stub
            .fetch_with_request(req)
            .await
            .map_err(|e| unreachable(step, e))?;
        let status = resp.status_code();
        if (200..300).contains(&status) {
            return Ok(resp);
        }
        let text = resp.text().await.unwrap_or_default();
        match serde_json::from_str::<ErrorBody>(&text) {
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
                    text.chars().take(200).collect::<String>()
                ),
            }),
        }
    }

    /// Sends `body` as JSON and decodes a JSON answer.
    pub async fn json<T: DeserializeOwned>(
        &self,
        step: &'static str,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, ComputerError> {
        let body = body.map(|bytes| (bytes, "application/json"));
        let bytes = self.bytes(step, method, path, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| ComputerError::Malformed {
            step,
            reason: e.to_string(),
        })
    }

    /// Sends a request and reads the whole answer.
    pub async fn bytes(
        &self,
        step: &'static str,
        method: Method,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
    ) -> Result<Vec<u8>, ComputerError> {
        let mut resp = self.send(step, method, path, body).await?;
        resp.bytes().await.map_err(|e| unreachable(step, e))
    }

    /// Sends a request and streams the answer's body.
    pub async fn stream(
        &self,
        step: &'static str,
        path: &str,
        body: Vec<u8>,
    ) -> Result<impl Stream<Item = Result<Vec<u8>, ComputerError>>, ComputerError> {
        let mut resp = self
            .send(step, Method::Post, path, Some((body, "application/json")))
            .await?;
        let stream = resp.stream().map_err(|e| unreachable(step, e))?;
        Ok(stream.map(move |piece| piece.map_err(|e| unreachable(step, e))))
    }
}

/// Encodes a request body.
pub fn to_json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("protocol types serialize")
}

fn unreachable(step: &'static str, error: impl std::fmt::Display) -> ComputerError {
    ComputerError::Unreachable {
        step,
        reason: error.to_string(),
    }
}
