//! Why a command on the computer could not run or finish.

use stead_sync::ErrorCode;
use stead_vfs::VfsError;

/// A failure talking to the computer. None of these leaves the workspace
/// changed: a command's changes are applied only after it has finished and
/// its content has been pulled.
#[derive(Debug, thiserror::Error)]
pub enum ComputerError {
    #[error(
        "no computer is configured: deploy with the container (wrangler.toml [[containers]]) \
         or, locally, set COMPUTER_DEV_URL to a running stead-computer"
    )]
    Unavailable,
    #[error("the computer could not be reached during {step}: {reason}")]
    Unreachable { step: &'static str, reason: String },
    #[error("the computer refused {step} ({code:?}): {message}")]
    Refused {
        step: &'static str,
        code: ErrorCode,
        message: String,
    },
    #[error("the computer answered {step} with something unexpected: {reason}")]
    Malformed { step: &'static str, reason: String },
    /// The exec was refused as planned for container instance `planned`,
    /// which was gone (see `super::run`): it never started, and is to be
    /// planned again on the instance that answers now.
    #[error(
        "the computer refused the command as planned for a container that was gone \
         (instance {planned}); it never ran and the workspace is unchanged"
    )]
    StaleInstance { planned: String },
    /// The exec was refused as planned for a container instance that was
    /// gone, twice: it never started.
    #[error(
        "the computer kept changing: the command was refused twice as planned for a \
         container that was gone (last planned for instance {planned}); it never ran and \
         the workspace is unchanged"
    )]
    KeptChanging { planned: String },
    #[error("the computer speaks protocol {found}, this Worker speaks {expected}")]
    Protocol { found: u32, expected: u32 },
    /// The workspace side failed (storage, or content the workspace
    /// refused) while syncing.
    #[error(transparent)]
    Workspace(#[from] VfsError),
}

impl From<stead_sql::SqlError> for ComputerError {
    fn from(error: stead_sql::SqlError) -> Self {
        ComputerError::Workspace(VfsError::Storage(error))
    }
}

impl ComputerError {
    /// The computer is running job `job`'s command, which outlives alarms:
    /// the computer runs one command at a time (answered `COMPUTER_BUSY`).
    pub fn held_by_job(job: i64) -> Self {
        ComputerError::Refused {
            step: "exec",
            code: ErrorCode::Busy,
            message: format!("job {job} is running on the computer"),
        }
    }

    /// Whether the computer refused to start a command as asked (a `cwd`
    /// it cannot enter): the caller's to fix, answered `400`.
    pub fn is_bad_request(&self) -> bool {
        matches!(
            self,
            ComputerError::Refused {
                step: "exec",
                code: ErrorCode::BadPath | ErrorCode::InvalidRequest,
                ..
            }
        )
    }

    /// Whether the computer refused an exec as planned for another
    /// container instance (it started nothing).
    pub fn is_stale_instance(&self) -> bool {
        matches!(
            self,
            ComputerError::Refused {
                step: "exec",
                code: ErrorCode::StaleInstance,
                ..
            }
        )
    }

    /// Whether retrying later may help (the computer is busy or starting).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            ComputerError::Refused {
                code: ErrorCode::Busy,
                ..
            }
        )
    }
}
