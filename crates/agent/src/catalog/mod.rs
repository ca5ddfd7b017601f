//! The tools a model is given: one definition each, shared by the MCP
//! server (`crate::mcp`) and the published definitions (`GET /tools`).
//!
//! A [`ModelTool`] is a name a model calls, a description written for the
//! model, and an input schema derived (by `schemars`) from the very Rust type
//! the HTTP route decodes ([`schema`]), so the HTTP API, MCP and the
//! published schemas cannot drift apart. Calling a tool is turning its
//! arguments into an [`Invocation`]: the [`Action`] and body of its HTTP
//! twin, which the caller then dispatches (`crate::dispatch`), where it is
//! authorized and audited exactly as over HTTP.
//!
//! The names and shapes follow the tools models are trained on (Claude
//! Code's Read/Write/Edit/Glob/Grep/Bash, codex's `apply_patch`): a model
//! that knows those knows these.

mod descriptions;
pub mod formats;
pub mod schema;
mod strict;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use stead_sync::process::MAX_GRACE_MS;

use crate::auth::Caller;
use crate::checkpoints::MAX_LIST;
use crate::decode::within;
use crate::error::ApiError;
use crate::policy::{Access, Audit};
use crate::route::{Action, Tool};
use crate::scheduling::OUTPUT_PAGE;

/// A tool as a model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelTool {
    Read,
    Write,
    Edit,
    ApplyPatch,
    Ls,
    Glob,
    Grep,
    Bash,
    JobOutput,
    JobCancel,
    ScheduleList,
    SchedulePut,
    ScheduleDelete,
    HookList,
    HookPut,
    HookDelete,
    Checkpoint,
    CheckpointList,
    Diff,
    Restore,
    Undo,
    ProcessStart,
    ProcessList,
    ProcessGet,
    ProcessOutput,
    ProcessSignal,
    ProcessStop,
    PortShare,
}

/// What a tool call becomes: the HTTP twin's action, query and JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub action: Action,
    pub query: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// `job_output`'s arguments: the route's path and query parameters.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobOutputArgs {
    /// The job's id, as `bash` with `detach` returned it.
    job: i64,
    /// Byte offset to read from: the `next` of the previous call (default:
    /// the oldest output kept).
    from: Option<i64>,
    /// Bytes to read at most (default and largest 1 MiB).
    #[schemars(range(min = 1, max = OUTPUT_PAGE))]
    limit: Option<i64>,
}

/// Arguments naming one job.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobArgs {
    /// The job's id.
    job: i64,
}

/// Arguments naming one schedule.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScheduleIdArgs {
    /// The schedule's id.
    id: String,
}

/// Arguments naming one hook.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HookNameArgs {
    /// The hook's name (1-64 of `A-Z a-z 0-9 . _ -`).
    name: String,
}

/// `checkpoint_list`'s arguments: the route's query parameters.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckpointListArgs {
    /// List only checkpoints older than this id: the `next_before` of the
    /// previous page.
    before: Option<i64>,
    /// Checkpoints a page holds at most (default 50).
    #[schemars(range(min = 1, max = MAX_LIST))]
    limit: Option<i64>,
}

/// Arguments naming one process.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProcessIdArgs {
    /// The process's id (`p-...`), as `process_start` returned it.
    id: String,
}

/// `process_output`'s arguments: the route's path and query parameters.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProcessOutputArgs {
    /// The process's id (`p-...`), as `process_start` returned it.
    id: String,
    /// Byte offset to read from: the `next` of the previous call (default:
    /// the oldest output kept).
    from: Option<i64>,
    /// Bytes to read at most (default and largest 1 MiB).
    #[schemars(range(min = 1, max = OUTPUT_PAGE))]
    limit: Option<i64>,
}

/// `process_stop`'s arguments: the route's path and query parameters.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProcessStopArgs {
    /// The process's id (`p-...`), as `process_start` returned it.
    id: String,
    /// Milliseconds between SIGTERM and SIGKILL (default 5000).
    #[schemars(range(max = MAX_GRACE_MS))]
    grace_ms: Option<u64>,
}

/// The port a share link opens: the route's path parameter.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PortArgs {
    /// The port, as a process declared it in `ports`.
    #[schemars(range(min = 1))]
    port: u16,
}

/// No arguments at all.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

impl ModelTool {
    /// Every tool, in the order `tools/list` and `/tools` show them (a
    /// fixed order keeps clients' caches and prompt caches warm).
    pub const ALL: [ModelTool; 28] = [
        ModelTool::Read,
        ModelTool::Write,
        ModelTool::Edit,
        ModelTool::ApplyPatch,
        ModelTool::Ls,
        ModelTool::Glob,
        ModelTool::Grep,
        ModelTool::Bash,
        ModelTool::JobOutput,
        ModelTool::JobCancel,
        ModelTool::ScheduleList,
        ModelTool::SchedulePut,
        ModelTool::ScheduleDelete,
        ModelTool::HookList,
        ModelTool::HookPut,
        ModelTool::HookDelete,
        ModelTool::Checkpoint,
        ModelTool::CheckpointList,
        ModelTool::Diff,
        ModelTool::Restore,
        ModelTool::Undo,
        ModelTool::ProcessStart,
        ModelTool::ProcessList,
        ModelTool::ProcessGet,
        ModelTool::ProcessOutput,
        ModelTool::ProcessSignal,
        ModelTool::ProcessStop,
        ModelTool::PortShare,
    ];

    /// The name a model calls.
    pub fn name(self) -> &'static str {
        match self {
            ModelTool::Read => "read",
            ModelTool::Write => "write",
            ModelTool::Edit => "edit",
            ModelTool::ApplyPatch => "apply_patch",
            ModelTool::Ls => "ls",
            ModelTool::Glob => "glob",
            ModelTool::Grep => "grep",
            ModelTool::Bash => "bash",
            ModelTool::JobOutput => "job_output",
            ModelTool::JobCancel => "job_cancel",
            ModelTool::ScheduleList => "schedule_list",
            ModelTool::SchedulePut => "schedule_put",
            ModelTool::ScheduleDelete => "schedule_delete",
            ModelTool::HookList => "hook_list",
            ModelTool::HookPut => "hook_put",
            ModelTool::HookDelete => "hook_delete",
            ModelTool::Checkpoint => "checkpoint",
            ModelTool::CheckpointList => "checkpoint_list",
            ModelTool::Diff => "diff",
            ModelTool::Restore => "restore",
            ModelTool::Undo => "undo",
            ModelTool::ProcessStart => "process_start",
            ModelTool::ProcessList => "process_list",
            ModelTool::ProcessGet => "process_get",
            ModelTool::ProcessOutput => "process_output",
            ModelTool::ProcessSignal => "process_signal",
            ModelTool::ProcessStop => "process_stop",
            ModelTool::PortShare => "port_share",
        }
    }

    /// The tool called `name`.
    pub fn from_name(name: &str) -> Option<ModelTool> {
        ModelTool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// A title for people.
    pub fn title(self) -> &'static str {
        match self {
            ModelTool::Read => "Read a file",
            ModelTool::Write => "Write a file",
            ModelTool::Edit => "Edit a file",
            ModelTool::ApplyPatch => "Apply a patch",
            ModelTool::Ls => "List a directory",
            ModelTool::Glob => "Find files by name",
            ModelTool::Grep => "Search file contents",
            ModelTool::Bash => "Run a command",
            ModelTool::JobOutput => "Read a job's output",
            ModelTool::JobCancel => "Cancel a job",
            ModelTool::ScheduleList => "List schedules",
            ModelTool::SchedulePut => "Create or replace a schedule",
            ModelTool::ScheduleDelete => "Delete a schedule",
            ModelTool::HookList => "List hooks",
            ModelTool::HookPut => "Create or replace a hook",
            ModelTool::HookDelete => "Delete a hook",
            ModelTool::Checkpoint => "Checkpoint the workspace",
            ModelTool::CheckpointList => "List checkpoints",
            ModelTool::Diff => "Compare two points in time",
            ModelTool::Restore => "Restore a checkpoint",
            ModelTool::Undo => "Undo the last change",
            ModelTool::ProcessStart => "Start a long-running process",
            ModelTool::ProcessList => "List processes",
            ModelTool::ProcessGet => "Get a process",
            ModelTool::ProcessOutput => "Read a process's output",
            ModelTool::ProcessSignal => "Signal a process",
            ModelTool::ProcessStop => "Stop a process",
            ModelTool::PortShare => "Share a port",
        }
    }

    /// What the tool does, its limits and how to page, for the model (the
    /// texts are in [`descriptions`]).
    pub fn description(self) -> &'static str {
        match self {
            ModelTool::Read => descriptions::READ,
            ModelTool::Write => descriptions::WRITE,
            ModelTool::Edit => descriptions::EDIT,
            ModelTool::ApplyPatch => descriptions::APPLY_PATCH,
            ModelTool::Ls => descriptions::LS,
            ModelTool::Glob => descriptions::GLOB,
            ModelTool::Grep => descriptions::GREP,
            ModelTool::Bash => descriptions::BASH,
            ModelTool::JobOutput => descriptions::JOB_OUTPUT,
            ModelTool::JobCancel => descriptions::JOB_CANCEL,
            ModelTool::ScheduleList => descriptions::SCHEDULE_LIST,
            ModelTool::SchedulePut => descriptions::SCHEDULE_PUT,
            ModelTool::ScheduleDelete => descriptions::SCHEDULE_DELETE,
            ModelTool::HookList => descriptions::HOOK_LIST,
            ModelTool::HookPut => descriptions::HOOK_PUT,
            ModelTool::HookDelete => descriptions::HOOK_DELETE,
            ModelTool::Checkpoint => descriptions::CHECKPOINT,
            ModelTool::CheckpointList => descriptions::CHECKPOINT_LIST,
            ModelTool::Diff => descriptions::DIFF,
            ModelTool::Restore => descriptions::RESTORE,
            ModelTool::Undo => descriptions::UNDO,
            ModelTool::ProcessStart => descriptions::PROCESS_START,
            ModelTool::ProcessList => descriptions::PROCESS_LIST,
            ModelTool::ProcessGet => descriptions::PROCESS_GET,
            ModelTool::ProcessOutput => descriptions::PROCESS_OUTPUT,
            ModelTool::ProcessSignal => descriptions::PROCESS_SIGNAL,
            ModelTool::ProcessStop => descriptions::PROCESS_STOP,
            ModelTool::PortShare => descriptions::PORT_SHARE,
        }
    }

    /// The action a call becomes, with placeholder parameters: what decides
    /// who may call the tool and whether it is audited.
    fn action_kind(self) -> Action {
        match self {
            ModelTool::Read => Action::Tool(Tool::Read),
            ModelTool::Write => Action::Tool(Tool::Write),
            ModelTool::Edit => Action::Tool(Tool::Edit),
            ModelTool::ApplyPatch => Action::Tool(Tool::ApplyPatch),
            ModelTool::Ls => Action::Tool(Tool::Ls),
            ModelTool::Glob => Action::Tool(Tool::Glob),
            ModelTool::Grep => Action::Tool(Tool::Grep),
            ModelTool::Bash => Action::Exec,
            ModelTool::JobOutput => Action::JobOutput(0),
            ModelTool::JobCancel => Action::JobCancel(0),
            ModelTool::ScheduleList => Action::Schedules,
            ModelTool::SchedulePut => Action::ScheduleCreate,
            ModelTool::ScheduleDelete => Action::ScheduleDelete(String::new()),
            ModelTool::HookList => Action::Hooks,
            ModelTool::HookPut => Action::HookPut(String::new()),
            ModelTool::HookDelete => Action::HookDelete(String::new()),
            ModelTool::Checkpoint => Action::CheckpointCreate,
            ModelTool::CheckpointList => Action::Checkpoints,
            ModelTool::Diff => Action::Diff,
            ModelTool::Restore => Action::Restore,
            ModelTool::Undo => Action::Undo,
            ModelTool::ProcessStart => Action::ProcessStart,
            ModelTool::ProcessList => Action::Processes,
            ModelTool::ProcessGet => Action::Process(String::new()),
            ModelTool::ProcessOutput => Action::ProcessOutput(String::new()),
            ModelTool::ProcessSignal => Action::ProcessSignal(String::new()),
            ModelTool::ProcessStop => Action::ProcessStop(String::new()),
            ModelTool::PortShare => Action::ShareCreate(0),
        }
    }

    /// Who may call the tool: the access of its HTTP twin.
    pub fn access(self) -> Access {
        self.action_kind().policy().access
    }

    /// Whether `caller` may call the tool (what `tools/list` shows).
    pub fn visible_to(self, caller: &Caller) -> bool {
        self.access().admits(caller).is_ok()
    }

    /// Whether the tool only reads (its HTTP twin is not audited).
    pub fn read_only(self) -> bool {
        self.action_kind().policy().audit == Audit::ReadOnly
    }

    /// Whether the tool may reach beyond the workspace (what runs on the
    /// computer may have network access).
    pub fn open_world(self) -> bool {
        matches!(self, ModelTool::Bash | ModelTool::ProcessStart)
    }

    /// The tools `caller` may call, in order.
    pub fn visible(caller: &Caller) -> impl Iterator<Item = ModelTool> + '_ {
        ModelTool::ALL
            .into_iter()
            .filter(|tool| tool.visible_to(caller))
    }

    /// Turns a call's arguments into its HTTP twin. The body is passed on
    /// as the route would get it, so its decoding (and every error it
    /// names) is the route's own; only path and query parameters are read
    /// here.
    pub fn invocation(self, arguments: Map<String, Value>) -> Result<Invocation, ApiError> {
        let body_only = |action: Action, arguments: Map<String, Value>| -> Invocation {
            Invocation {
                action,
                query: Vec::new(),
                body: Value::Object(arguments).to_string().into_bytes(),
            }
        };
        let parameters_only = |action: Action| Invocation {
            action,
            query: Vec::new(),
            body: Vec::new(),
        };
        Ok(match self {
            ModelTool::Read
            | ModelTool::Write
            | ModelTool::Edit
            | ModelTool::ApplyPatch
            | ModelTool::Ls
            | ModelTool::Glob
            | ModelTool::Grep
            | ModelTool::Bash
            | ModelTool::Checkpoint
            | ModelTool::Diff
            | ModelTool::Restore
            | ModelTool::ProcessStart => body_only(self.action_kind(), arguments),
            ModelTool::JobOutput => {
                let args: JobOutputArgs = arguments_as(arguments)?;
                Invocation {
                    action: Action::JobOutput(args.job),
                    query: query_of([("from", args.from), ("limit", args.limit)]),
                    body: Vec::new(),
                }
            }
            ModelTool::JobCancel => {
                let args: JobArgs = arguments_as(arguments)?;
                parameters_only(Action::JobCancel(args.job))
            }
            ModelTool::ScheduleList => {
                let NoArgs {} = arguments_as(arguments)?;
                parameters_only(Action::Schedules)
            }
            ModelTool::SchedulePut => {
                // The id travels in the body too; the route checks it
                // against the path.
                let action = match arguments.get("id") {
                    Some(Value::String(id)) => Action::SchedulePut(id.clone()),
                    _ => Action::ScheduleCreate,
                };
                body_only(action, arguments)
            }
            ModelTool::ScheduleDelete => {
                let args: ScheduleIdArgs = arguments_as(arguments)?;
                parameters_only(Action::ScheduleDelete(args.id))
            }
            ModelTool::HookList => {
                let NoArgs {} = arguments_as(arguments)?;
                parameters_only(Action::Hooks)
            }
            ModelTool::HookPut => {
                let (HookNameArgs { name }, body) = split_path(arguments, "name")?;
                body_only(Action::HookPut(name), body)
            }
            ModelTool::HookDelete => {
                let args: HookNameArgs = arguments_as(arguments)?;
                parameters_only(Action::HookDelete(args.name))
            }
            ModelTool::CheckpointList => {
                let args: CheckpointListArgs = arguments_as(arguments)?;
                Invocation {
                    action: Action::Checkpoints,
                    query: query_of([("before", args.before), ("limit", args.limit)]),
                    body: Vec::new(),
                }
            }
            ModelTool::Undo => {
                let NoArgs {} = arguments_as(arguments)?;
                parameters_only(Action::Undo)
            }
            ModelTool::ProcessList => {
                let NoArgs {} = arguments_as(arguments)?;
                parameters_only(Action::Processes)
            }
            ModelTool::ProcessGet => {
                let ProcessIdArgs { id } = arguments_as(arguments)?;
                parameters_only(Action::Process(id))
            }
            ModelTool::ProcessOutput => {
                let args: ProcessOutputArgs = arguments_as(arguments)?;
                Invocation {
                    action: Action::ProcessOutput(args.id),
                    query: query_of([("from", args.from), ("limit", args.limit)]),
                    body: Vec::new(),
                }
            }
            ModelTool::ProcessSignal => {
                let (ProcessIdArgs { id }, body) = split_path(arguments, "id")?;
                body_only(Action::ProcessSignal(id), body)
            }
            ModelTool::ProcessStop => {
                let args: ProcessStopArgs = arguments_as(arguments)?;
                Invocation {
                    action: Action::ProcessStop(args.id),
                    query: query_of([("grace_ms", args.grace_ms)]),
                    body: Vec::new(),
                }
            }
            ModelTool::PortShare => {
                let (PortArgs { port }, body) = split_path(arguments, "port")?;
                // The route's own reading of a port: 0 is none.
                let port = within("port", port, 1, u16::MAX)?;
                body_only(Action::ShareCreate(port), body)
            }
        })
    }
}

/// Query parameters from the arguments that stand for them, those given.
fn query_of<T: ToString, const N: usize>(
    parameters: [(&str, Option<T>); N],
) -> Vec<(String, String)> {
    parameters
        .into_iter()
        .filter_map(|(key, value)| value.map(|v| (key.to_string(), v.to_string())))
        .collect()
}

/// Splits a call's arguments into the path parameter `key` (decoded as
/// `T`, the type naming it) and the rest, the route's body.
fn split_path<T: serde::de::DeserializeOwned>(
    mut arguments: Map<String, Value>,
    key: &str,
) -> Result<(T, Map<String, Value>), ApiError> {
    let path = arguments.remove_entry(key).into_iter().collect();
    Ok((arguments_as(path)?, arguments))
}

/// Decodes arguments that stand for path and query parameters, with the
/// API's errors (the field at fault named).
fn arguments_as<T: serde::de::DeserializeOwned>(
    arguments: Map<String, Value>,
) -> Result<T, ApiError> {
    crate::decode::decode(Value::Object(arguments).to_string().as_bytes())
}
