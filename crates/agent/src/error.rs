//! The one error type of the agent: every failure answers
//! `{"error":{"code","message"}}` with a fitting HTTP status, whichever
//! entry point it came through.
//!
//! Failures of the agent's own machinery (storage, the platform, a bug)
//! answer with a message that says what failed but not how: an SQL
//! statement or a platform message is for the logs (the glue logs
//! [`ApiError::to_string`] for every 5xx), not for callers.

use serde_json::{json, Value};
use stead_scheduler::SchedError;
use stead_vfs::{Errno, VfsError};

use crate::computer::error::ComputerError;

/// A failure of the platform itself (storage, the alarm API, randomness).
#[derive(Debug, thiserror::Error)]
#[error("the platform failed to {operation}: {message}")]
pub struct HostError {
    pub operation: &'static str,
    pub message: String,
}

impl HostError {
    pub fn new(operation: &'static str, message: impl std::fmt::Display) -> Self {
        HostError {
            operation,
            message: message.to_string(),
        }
    }
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Fs(#[from] VfsError),
    #[error("malformed JSON: {0}")]
    MalformedJson(serde_json::Error),
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("request body exceeds {limit} bytes")]
    BodyTooLarge { limit: usize },
    #[error("no credential: send Authorization: Bearer <token>")]
    Unauthorized,
    /// A bearer credential that is neither the admin token nor one this
    /// deployment minted (the same code as a missing one).
    #[error(
        "invalid bearer token: it is neither the admin token nor a token this deployment minted"
    )]
    InvalidToken,
    #[error("the token has expired")]
    TokenExpired,
    #[error("the token has been revoked")]
    TokenRevoked,
    /// A token minted for an agent that had this id before it was deleted.
    #[error(
        "the token was minted for an earlier agent of this id, deleted at {deleted_ms} ms since \
         the epoch; mint a new token for this agent (POST /tokens)"
    )]
    TokenPredatesAgent { deleted_ms: i64 },
    #[error("not allowed: {reason}")]
    Forbidden { reason: String },
    #[error("the server has no API token configured (set the API_TOKEN secret)")]
    NotConfigured,
    #[error("no route for {method} {path}")]
    NoRoute { method: String, path: String },
    #[error("{method} is not allowed on {path}; it takes {}", allow.join(", "))]
    MethodNotAllowed {
        method: String,
        path: String,
        /// The methods the path takes, sent as `Allow`.
        allow: Vec<&'static str>,
    },
    #[error("invalid agent id {id:?}: use 1-64 characters of A-Z a-z 0-9 . _ -")]
    InvalidAgentId { id: String },
    #[error("no agent {id:?}; create it with PUT /agents/{id}")]
    AgentNotFound { id: String },
    #[error("changes after revision {since} have been pruned; resynchronise in full")]
    ChangesPruned { since: i64 },
    #[error(transparent)]
    Computer(ComputerError),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Sched(#[from] SchedError),
    #[error("this agent is a fork still being copied; it is usable once the copy is complete")]
    Forking,
    /// A push's apply names content the workspace does not hold (never
    /// sent, or staged and dropped when the agent restarted).
    #[error("{chunks} chunks of the pushed files are not here (staged content is dropped when the agent restarts): send them again (transfer/missing names them)")]
    ContentMissing { chunks: usize },
    #[error("agent {id:?} already exists: a fork makes a new agent; fork into an id never used")]
    AgentExists { id: String },
    #[error(
        "agent {id:?} existed and was deleted: a fork makes a new agent, and never under the id of \
         one that was (what was handed out for it, such as tokens and hook URLs, must not open \
         another agent's files); fork into an id never used"
    )]
    AgentExisted { id: String },
    #[error("the fork failed: {reason}; the source is unchanged, and asking again resumes it")]
    ForkFailed { reason: String },
    #[error("webhook target refused: {0}")]
    WebhookRefused(crate::outbound::Refused),
    #[error(
        "{path} is a directory: list it with POST /agents/{{id}}/ls {{\"path\": \"{path}\"}} (the \
         files route serves files)"
    )]
    DownloadOfDirectory { path: String },
    #[error(
        "the range asked for starts past the end of the file ({size} bytes): ask for bytes \
         below {size}, or leave Range out for the whole file"
    )]
    RangeNotSatisfiable { size: u64 },
    #[error("this route takes a WebSocket upgrade (Upgrade: websocket)")]
    UpgradeRequired,
    #[error("no process {id:?}")]
    ProcessNotFound { id: String },
    #[error(
        "no running process serves port {port}: start one that declares it (\"ports\": [{port}])"
    )]
    PortNotServed { port: u16 },
    #[error("the share link is not valid")]
    ShareLinkInvalid,
    #[error("the share link has expired")]
    ShareLinkExpired,
    #[error("the share link has been revoked")]
    ShareLinkRevoked,
    #[error("no share link {id:?}")]
    ShareLinkNotFound { id: String },
    #[error(
        "agent {agent:?} has no ports origin: its host label would have {length} characters, \
         more than DNS allows (63); an agent id of at most 28 characters always has one"
    )]
    NoPortOrigin { agent: String, length: usize },
    #[error(
        "{host} names no agent's port: a port's origin is {{port}}-{{agent label}} under the \
         ports host (README, \"Ports\")"
    )]
    NotAPortOrigin { host: String },
    #[error("the server has no ports host configured (set the PORTS_HOST variable)")]
    NoPortsHost,
    #[error("process {id:?} is not running (it is {state:?})")]
    ProcessNotRunning {
        id: String,
        state: crate::processes::record::State,
    },
    #[error("no terminal session {id:?}: GET /agents/{{id}}/terminals lists them")]
    TerminalNotFound { id: String },
    #[error("terminal session {id:?} has ended: open a new one")]
    TerminalEnded { id: String },
    #[error(
        "offset {from} is past the end of the terminal's transcript ({end}): attach from at \
         most {end}"
    )]
    TerminalOffsetBeyondEnd { from: i64, end: i64 },
    #[error("{limit} terminal sessions are running: close one (DELETE /agents/{{id}}/terminals/{{session}})")]
    TerminalLimit { limit: i64 },
    #[error("the ticket is not valid for this agent: mint one (POST /agents/{{id}}/tickets)")]
    TicketInvalid,
    #[error("the ticket has been used: a ticket opens one terminal; mint another")]
    TicketUsed,
    #[error("the ticket has expired (tickets live at most 60 s): mint another")]
    TicketExpired,
    #[error("the inspector session is not valid: sign in again")]
    SessionInvalid,
    #[error("the inspector session has expired: sign in again")]
    SessionExpired,
    /// A request carrying the inspector's session cookie from another
    /// origin (`crate::session::check_origin`).
    #[error(
        "refused a request from {from} carrying the inspector's session: changes are accepted \
         only from the inspector's own page (send a bearer token from other clients)"
    )]
    CrossOriginRefused { from: String },
    /// A write with `if_rev` to a file changed since that revision.
    #[error(
        "{path} changed since revision {expected} (it is at {actual}): read it again and \
         reapply your change"
    )]
    RevisionChanged {
        path: String,
        expected: i64,
        actual: i64,
    },
    /// The computer's environment is over its size limit (see
    /// `crate::environment`).
    #[error("{0}")]
    EnvironmentTooLarge(String),
    /// The environment changed while it was saved, or its snapshot is
    /// damaged.
    #[error("{0}")]
    EnvironmentDamaged(String),
    /// A light-shell exec needs more content kept in the object store
    /// than one exec may bring back (see `crate::shell_net`).
    #[error(
        "the command needs more content kept in the object store than one light-shell exec may \
         bring back into the workspace ({needed} bytes in {rounds} rounds asked; at most {limit} \
         bytes in {} rounds): stream the file (GET /agents/{{id}}/files/...) or run the command \
         on the computer (backend: computer)",
        crate::shell_net::MAX_CONTENT_ROUNDS
    )]
    ExecContentTooLarge {
        needed: u64,
        rounds: usize,
        limit: u64,
    },
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<crate::environment::EnvError> for ApiError {
    fn from(error: crate::environment::EnvError) -> Self {
        use crate::environment::EnvError;
        match error {
            EnvError::Computer(error) => error.into(),
            EnvError::Sql(error) => error.into(),
            EnvError::TooLarge { .. } => ApiError::EnvironmentTooLarge(error.to_string()),
            EnvError::Damaged(_) => ApiError::EnvironmentDamaged(error.to_string()),
            EnvError::Decode(reason) => ApiError::Internal(reason),
        }
    }
}

impl From<ComputerError> for ApiError {
    fn from(error: ComputerError) -> Self {
        match error {
            // The workspace's own failure while syncing is a workspace error.
            ComputerError::Workspace(error) => ApiError::Fs(error),
            other => ApiError::Computer(other),
        }
    }
}

impl From<stead_sql::SqlError> for ApiError {
    fn from(error: stead_sql::SqlError) -> Self {
        ApiError::Fs(VfsError::Storage(error))
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(error: serde_json::Error) -> Self {
        use serde_json::error::Category;
        match error.classify() {
            // Well-formed JSON of the wrong shape: name the field problem.
            Category::Data => ApiError::InvalidRequest(error.to_string()),
            Category::Syntax | Category::Eof | Category::Io => ApiError::MalformedJson(error),
        }
    }
}

impl ApiError {
    /// The machine-readable code.
    pub fn code(&self) -> &str {
        match self {
            ApiError::Fs(error) => error.code().as_str(),
            ApiError::MalformedJson(_) => "MALFORMED_JSON",
            ApiError::InvalidRequest(_) => "INVALID_REQUEST",
            ApiError::BodyTooLarge { .. } => "BODY_TOO_LARGE",
            ApiError::Unauthorized | ApiError::InvalidToken => "UNAUTHORIZED",
            ApiError::TokenExpired => "TOKEN_EXPIRED",
            ApiError::TokenRevoked => "TOKEN_REVOKED",
            ApiError::TokenPredatesAgent { .. } => "TOKEN_PREDATES_AGENT",
            ApiError::Forbidden { .. } => "FORBIDDEN",
            ApiError::NotConfigured => "NOT_CONFIGURED",
            ApiError::NoRoute { .. } => "NO_ROUTE",
            ApiError::MethodNotAllowed { .. } => "METHOD_NOT_ALLOWED",
            ApiError::InvalidAgentId { .. } => "INVALID_AGENT_ID",
            ApiError::AgentNotFound { .. } => "AGENT_NOT_FOUND",
            ApiError::ChangesPruned { .. } => "CHANGES_PRUNED",
            ApiError::Computer(ComputerError::Unavailable) => "COMPUTER_UNAVAILABLE",
            ApiError::Computer(error) if error.is_busy() => "COMPUTER_BUSY",
            ApiError::Computer(error) if error.is_bad_request() => "INVALID_REQUEST",
            ApiError::Computer(_) => "COMPUTER_FAILED",
            ApiError::Sched(error) => error.code(),
            ApiError::WebhookRefused(_) => "WEBHOOK_TARGET_REFUSED",
            ApiError::Forking => "AGENT_FORKING",
            ApiError::ContentMissing { .. } => "CONTENT_MISSING",
            ApiError::AgentExists { .. } => "AGENT_EXISTS",
            ApiError::AgentExisted { .. } => "AGENT_EXISTED",
            ApiError::ForkFailed { .. } => "FORK_FAILED",
            ApiError::DownloadOfDirectory { .. } => Errno::Eisdir.as_str(),
            ApiError::RangeNotSatisfiable { .. } => "RANGE_NOT_SATISFIABLE",
            ApiError::UpgradeRequired => "UPGRADE_REQUIRED",
            ApiError::ProcessNotFound { .. } => "PROCESS_NOT_FOUND",
            ApiError::ProcessNotRunning { .. } => "PROCESS_NOT_RUNNING",
            ApiError::PortNotServed { .. } => "PORT_NOT_SERVED",
            ApiError::ShareLinkInvalid => "SHARE_LINK_INVALID",
            ApiError::ShareLinkExpired => "SHARE_LINK_EXPIRED",
            ApiError::ShareLinkRevoked => "SHARE_LINK_REVOKED",
            ApiError::ShareLinkNotFound { .. } => "SHARE_LINK_NOT_FOUND",
            ApiError::NoPortOrigin { .. } => "NO_PORT_ORIGIN",
            ApiError::NotAPortOrigin { .. } => "NOT_A_PORT_ORIGIN",
            ApiError::NoPortsHost => "NO_PORTS_HOST",
            ApiError::TerminalNotFound { .. } => "TERMINAL_NOT_FOUND",
            ApiError::TerminalEnded { .. } => "TERMINAL_ENDED",
            ApiError::TerminalOffsetBeyondEnd { .. } => "OFFSET_BEYOND_END",
            ApiError::TerminalLimit { .. } => "TERMINAL_LIMIT",
            ApiError::TicketInvalid => "TICKET_INVALID",
            ApiError::TicketUsed => "TICKET_USED",
            ApiError::TicketExpired => "TICKET_EXPIRED",
            ApiError::SessionInvalid => "SESSION_INVALID",
            ApiError::SessionExpired => "SESSION_EXPIRED",
            ApiError::CrossOriginRefused { .. } => "CROSS_ORIGIN_REFUSED",
            ApiError::RevisionChanged { .. } => "REVISION_CHANGED",
            ApiError::EnvironmentTooLarge(_) => "ENVIRONMENT_TOO_LARGE",
            ApiError::EnvironmentDamaged(_) => "ENVIRONMENT_DAMAGED",
            ApiError::ExecContentTooLarge { .. } => "EXEC_CONTENT_TOO_LARGE",
            ApiError::Host(_) | ApiError::Internal(_) => "INTERNAL",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            ApiError::Fs(error) => match error.code() {
                Errno::Enoent => 404,
                Errno::Eexist
                | Errno::Enotempty
                | Errno::Eisdir
                | Errno::Enotdir
                | Errno::Ebusy => 409,
                Errno::Eacces => 403,
                Errno::Efbig => 413,
                Errno::Enospc => 507,
                Errno::Eio => 500,
                Errno::EditNoMatch
                | Errno::EditAmbiguous
                | Errno::EditOverlap
                | Errno::EditNoChange => 422,
                Errno::Einval | Errno::Eloop | Errno::Enametoolong | Errno::Eilseq => 400,
            },
            ApiError::MalformedJson(_)
            | ApiError::InvalidRequest(_)
            | ApiError::InvalidAgentId { .. } => 400,
            ApiError::BodyTooLarge { .. } => 413,
            ApiError::Unauthorized
            | ApiError::InvalidToken
            | ApiError::TokenExpired
            | ApiError::TokenRevoked
            | ApiError::TokenPredatesAgent { .. } => 401,
            ApiError::Forbidden { .. } => 403,
            ApiError::NotConfigured => 503,
            ApiError::NoRoute { .. } | ApiError::AgentNotFound { .. } => 404,
            ApiError::MethodNotAllowed { .. } => 405,
            ApiError::ChangesPruned { .. } => 410,
            ApiError::Computer(ComputerError::Unavailable) => 503,
            ApiError::Computer(error) if error.is_busy() => 409,
            ApiError::Computer(error) if error.is_bad_request() => 400,
            ApiError::Computer(_) => 502,
            ApiError::Sched(error) => error.status(),
            ApiError::WebhookRefused(_) => 400,
            ApiError::Forking
            | ApiError::ContentMissing { .. }
            | ApiError::AgentExists { .. }
            | ApiError::AgentExisted { .. } => 409,
            ApiError::ForkFailed { .. } => 502,
            ApiError::DownloadOfDirectory { .. } => 409,
            ApiError::RangeNotSatisfiable { .. } => 416,
            ApiError::UpgradeRequired => 426,
            ApiError::ProcessNotFound { .. } => 404,
            ApiError::ProcessNotRunning { .. } => 409,
            ApiError::PortNotServed { .. }
            | ApiError::ShareLinkNotFound { .. }
            | ApiError::NotAPortOrigin { .. } => 404,
            ApiError::NoPortOrigin { .. } => 409,
            ApiError::NoPortsHost => 503,
            ApiError::TerminalNotFound { .. } => 404,
            ApiError::TerminalEnded { .. } | ApiError::TerminalLimit { .. } => 409,
            ApiError::TerminalOffsetBeyondEnd { .. } => 400,
            ApiError::TicketInvalid | ApiError::TicketUsed | ApiError::TicketExpired => 401,
            ApiError::ShareLinkInvalid
            | ApiError::ShareLinkExpired
            | ApiError::ShareLinkRevoked => 401,
            ApiError::SessionInvalid | ApiError::SessionExpired => 401,
            ApiError::CrossOriginRefused { .. } => 403,
            ApiError::RevisionChanged { .. } => 412,
            ApiError::EnvironmentTooLarge(_) => 413,
            ApiError::EnvironmentDamaged(_) => 409,
            ApiError::ExecContentTooLarge { .. } => 413,
            ApiError::Host(_) | ApiError::Internal(_) => 500,
        }
    }

    /// The RFC 6750 challenge of a refused credential: `insufficient_scope`
    /// for a 403, `invalid_token` for a 401 when the request carried a
    /// credential (`presented`), none without one.
    pub fn challenge(&self, presented: bool) -> String {
        let code = match self.status() {
            403 => "insufficient_scope",
            _ if !presented => return "Bearer".to_string(),
            _ => "invalid_token",
        };
        // error_description is a quoted string of printable ASCII without `"`
        // or `\` (RFC 6750 section 3).
        let description: String = self
            .public_message()
            .chars()
            .map(|c| match c {
                '"' | '\\' => '\'',
                ' '..='~' => c,
                _ => '?',
            })
            .collect();
        format!("Bearer error=\"{code}\", error_description=\"{description}\"")
    }

    /// The headers HTTP requires beside this error's status (RFC 9110
    /// 15.5.2, 15.5.6 and 15.5.17): a 401's challenge, a 405's `Allow`, a
    /// 416's `Content-Range`. Every
    /// credential but a missing one was presented. (A 426's `Upgrade` is a
    /// hop-by-hop header the runtime drops between the agent's object and
    /// the Worker, so it is not sent.)
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            ApiError::MethodNotAllowed { allow, .. } => vec![("allow", allow.join(", "))],
            ApiError::RangeNotSatisfiable { size } => {
                vec![("content-range", format!("bytes */{size}"))]
            }
            error if error.status() == 401 => vec![(
                "www-authenticate",
                error.challenge(!matches!(error, ApiError::Unauthorized)),
            )],
            _ => Vec::new(),
        }
    }

    /// The message a caller sees: the error itself, or for a failure of the
    /// agent's own machinery, what failed without its internals.
    pub fn public_message(&self) -> String {
        match self {
            ApiError::Fs(VfsError::Storage(_)) | ApiError::Sched(SchedError::Sql(_)) => {
                "the workspace's storage failed; the operation was rolled back".into()
            }
            ApiError::Fs(VfsError::Corrupt(_)) | ApiError::Sched(SchedError::Corrupt(_)) => {
                "the workspace holds a record it cannot read".into()
            }
            ApiError::Host(error) => format!("the platform failed to {}", error.operation),
            ApiError::Internal(_) => "internal error".into(),
            other => other.to_string(),
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut error = json!({ "code": self.code(), "message": self.public_message() });
        if let ApiError::DownloadOfDirectory { path } = self {
            error["path"] = json!(path);
        }
        if let ApiError::RevisionChanged { path, actual, .. } = self {
            error["path"] = json!(path);
            error["revision"] = json!(actual);
        }
        if let ApiError::Fs(fs) = self {
            if let Some(path) = fs.path() {
                error["path"] = json!(path);
            }
            if let VfsError::Edit { source, .. } = fs {
                if let Some(index) = source.index() {
                    error["edit_index"] = json!(index);
                }
            }
        }
        json!({ "error": error })
    }
}
