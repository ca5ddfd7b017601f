//! Every refusal the program can answer, as one typed enum.
//!
//! Handlers return `Result<_, ApiError>`; the one conversion here turns an
//! error into the protocol's [`ErrorBody`] with the [`ErrorCode`] and HTTP
//! status the Worker side dispatches on, so no handler formats an error
//! answer by hand and every code is used consistently.

use std::io;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use stead_sync::{ChunkHash, ErrorBody, ErrorCode, ErrorDetail};
use thiserror::Error;

use crate::paths::PathError;

#[derive(Debug, Error)]
pub enum ApiError {
    #[error("missing or wrong secret")]
    Unauthorized,
    #[error("{0}")]
    InvalidRequest(String),
    #[error("the body is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("no such route")]
    NoRoute,
    #[error("the request was planned for instance {pushed}, this is {current}")]
    StaleInstance { pushed: String, current: String },
    #[error("exec {0} was started before; an exec id never runs twice")]
    AlreadyStarted(String),
    #[error("exec {0} is running")]
    Busy(String),
    #[error("no exec {0} (or it is not running / its report was acknowledged)")]
    UnknownExec(String),
    #[error("no process {0} on this computer")]
    UnknownProcess(String),
    #[error("no terminal {0} on this computer")]
    UnknownTerminal(String),
    #[error("{0} terminals are open: close one first")]
    TooManyTerminals(usize),
    #[error("process {0} exists already")]
    ProcessExists(String),
    #[error("chunk {0} is no longer on disk as reported")]
    ChunkGone(ChunkHash),
    #[error("the computer is shutting down: it starts nothing new")]
    ShuttingDown,
    #[error(transparent)]
    BadPath(#[from] PathError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl ApiError {
    /// Wraps a filesystem failure with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        ApiError::Io {
            context: context.into(),
            source,
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::Unauthorized => ErrorCode::Unauthorized,
            ApiError::InvalidRequest(_) | ApiError::TooLarge { .. } | ApiError::NoRoute => {
                ErrorCode::InvalidRequest
            }
            ApiError::StaleInstance { .. } => ErrorCode::StaleInstance,
            ApiError::AlreadyStarted(_) => ErrorCode::AlreadyStarted,
            ApiError::Busy(_) => ErrorCode::Busy,
            ApiError::UnknownExec(_) => ErrorCode::UnknownExec,
            // A terminal is a shell process: the codes the Worker knows
            // for processes fit.
            ApiError::UnknownProcess(_) | ApiError::UnknownTerminal(_) => ErrorCode::UnknownProcess,
            ApiError::TooManyTerminals(_) => ErrorCode::Busy,
            ApiError::ProcessExists(_) => ErrorCode::AlreadyStarted,
            ApiError::ChunkGone(_) => ErrorCode::ChunkGone,
            ApiError::ShuttingDown => ErrorCode::ShuttingDown,
            ApiError::BadPath(_) => ErrorCode::BadPath,
            ApiError::Io { .. } => ErrorCode::Io,
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::InvalidRequest(_) | ApiError::BadPath(_) => StatusCode::BAD_REQUEST,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::NoRoute
            | ApiError::UnknownExec(_)
            | ApiError::UnknownProcess(_)
            | ApiError::UnknownTerminal(_) => StatusCode::NOT_FOUND,
            ApiError::StaleInstance { .. }
            | ApiError::AlreadyStarted(_)
            | ApiError::Busy(_)
            | ApiError::ProcessExists(_)
            | ApiError::TooManyTerminals(_)
            | ApiError::ChunkGone(_) => StatusCode::CONFLICT,
            ApiError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code(),
                message: self.to_string(),
            },
        };
        let json = serde_json::to_vec(&body).expect("an error body serializes");
        (
            self.status(),
            [(header::CONTENT_TYPE, "application/json")],
            json,
        )
            .into_response()
    }
}
