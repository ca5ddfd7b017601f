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

    /// What the tool does, its limits and how to page, for the model.
    pub fn description(self) -> &'static str {
        match self {
            ModelTool::Read => {
                "Reads a file of the workspace. By default returns up to 2000 lines from \
                 `offset` (1-based line, default 1) as `content`; `line_numbers: true` prefixes \
                 each line with its number. When the page stops before the end, `truncated` is \
                 true and `next_offset` is the line to continue from; at the end, `total_lines` \
                 is given. A file with a NUL byte in its first 8 KiB is reported as `binary` \
                 instead of shown: read its bytes with `byte_offset`/`byte_length` (up to 256 KiB \
                 a call, base64 unless the bytes are text; continue from `next_byte_offset`). \
                 Paths are absolute, such as `/src/main.rs`."
            }
            ModelTool::Write => {
                "Creates a file, or replaces a whole file, with `content` (UTF-8 text, or base64 \
                 bytes with `encoding: \"base64\"`), creating missing parent directories. It \
                 replaces everything in the file: to change part of a file, use `edit`. Returns \
                 the size, whether it was created, and the workspace revision."
            }
            ModelTool::Edit => {
                "Replaces exact text in a file. Each edit's `old` must occur exactly once in the \
                 file (include surrounding lines to make it unique) unless `replace_all` is set; \
                 `new` takes its place. The edits of one call are found in the original text, \
                 must not overlap, and apply together or not at all. Returns the number of \
                 replacements and a unified diff; `dry_run` shows the diff without writing. Read \
                 the file first so that `old` matches it character for character, indentation \
                 included. When `old` is not in the file exactly, a match ignoring differences in \
                 whitespace, quotes and Unicode forms is used if there is exactly one, and the \
                 answer's `fuzzy` says which rule matched and the file's text it replaced."
            }
            ModelTool::ApplyPatch => {
                "Applies a patch to the workspace: the `apply_patch` format (`*** Begin Patch`, \
                 `*** Add File: path` with `+` lines, `*** Update File: path` with optional \
                 `*** Move to: path` and `@@` hunks of ` ` context, `-` removed and `+` added \
                 lines, `*** Delete File: path`, `*** End Patch`) or a unified diff as `diff -u` \
                 and `git diff` print it. Every file of the patch changes in one step: if a hunk \
                 does not apply, nothing changes and the error names the file, the hunk and the \
                 nearest text found. Relative paths start at `base` (default `/`). Returns the \
                 files touched and a unified diff of everything changed; `dry_run` checks \
                 without writing."
            }
            ModelTool::Ls => {
                "Lists a directory in name order: each entry's name, type, size, mode and mtime \
                 (ms). Up to 1000 entries a page (`limit` up to 10,000); when `next_cursor` is \
                 set, pass it back as `cursor` for the next page."
            }
            ModelTool::Glob => {
                "Finds paths matching a glob pattern relative to `path` (default `/`): `*` and `?` \
                 within a name, `**` across directories, `[...]` and `{a,b}`, as in \
                 `**/*.{ts,tsx}`. Returns matches with type, size and mtime in depth-first name \
                 order; `exclude` leaves paths out (a pattern without `/` matches a name \
                 anywhere, like .gitignore). When `next_cursor` is set, pass it back as `cursor` \
                 for more."
            }
            ModelTool::Grep => {
                "Searches file contents under `path` (default: the whole workspace) for a literal \
                 string, or a regular expression with `regex: true`, like `grep -rn`. `output` \
                 returns matching lines with line numbers and context (`content`, the default; \
                 `context`, `before`, `after` lines), only the matching files' paths (`files`), \
                 or counts per file (`count`). `include` and `exclude` globs narrow the files. \
                 Binary files are skipped and result lines are cut at 1 KiB. When `next_cursor` \
                 is set, pass it back as `cursor` for more."
            }
            ModelTool::Bash => {
                "Runs a bash command line in the workspace and returns `stdout`, `stderr` and \
                 `exit_code`. `backend`: `shell` is a fast bash interpreter inside the agent \
                 with the usual utilities (grep, sed, awk, jq, find, sort, tar, diff, ...) but no \
                 external programs or network; `computer` is real bash on the agent's Linux \
                 container (compilers, package managers, network when the agent allows it), \
                 slower to start; `auto` (default) uses the shell when it has every command the \
                 script names, else the computer. Each call starts with fresh shell state \
                 (variables and cwd do not carry over; files do). Time limits: `timeout_ms` up \
                 to 30 s in the shell, 60 min on the computer. With `detach: true` the command \
                 runs as a background job and the answer is the job at once: read its output \
                 with `job_output` and stop it with `job_cancel`."
            }
            ModelTool::JobOutput => {
                "Reads a background job's output (a job started by `bash` with `detach`, a \
                 schedule, a hook, or a process's log) from byte offset `from`: pieces of stdout and stderr with \
                 their offsets, the job's `state`, `next` (the offset to read from next) and \
                 `done` (true once the job has ended and everything was read). Call again with \
                 `from` set to `next` until `done`; at most 1 MiB a call."
            }
            ModelTool::JobCancel => {
                "Cancels a background job: a queued job never starts, and a command running on \
                 the computer is stopped at once (what it changed until then is kept). A \
                 command in the light shell cannot be interrupted; its own limits end it. \
                 Returns the job."
            }
            ModelTool::ScheduleList => "Lists the agent's schedules, each with its next due time.",
            ModelTool::SchedulePut => {
                "Creates or replaces (same `id`) a schedule that, at each due time, runs a \
                 command as a background job (`exec`: the arguments `bash` takes, without \
                 `detach`) or calls a signed webhook (`webhook`). Give exactly one of `cron` (with \
                 `tz`), `at` (RFC 3339), `at_ms` or `delay_ms`, and exactly one of `exec` and \
                 `webhook`. Returns the schedule; a webhook's signing secret is shown once, as \
                 `webhook_secret`."
            }
            ModelTool::ScheduleDelete => "Deletes a schedule; runs already started go on.",
            ModelTool::HookList => "Lists the agent's webhook hooks.",
            ModelTool::HookPut => {
                "Creates or replaces a hook: a URL (`POST /agents/{agent}/hooks/{name}`) that a \
                 third party calls with the hook's secret in the `x-hook-secret` header; each \
                 call runs `exec` (the arguments `bash` takes, without `detach`) as a background \
                 job with the call's body on stdin. Returns the hook and its secret, shown only \
                 this once."
            }
            ModelTool::HookDelete => "Deletes a hook; calls to it are refused from then on.",
            ModelTool::Checkpoint => {
                "Records the whole workspace as it is now, cheaply (no file content is copied), \
                 so it can be compared with (`diff`) or brought back (`restore`) later. An \
                 optional unique `name` finds it again; `note` says what it is for. Checkpoints \
                 are also taken automatically before every command or tool call that changes \
                 files. Returns the checkpoint with its id."
            }
            ModelTool::CheckpointList => {
                "Lists checkpoints, newest first (manual and automatic ones, with what each was \
                 taken before), up to 50 a page (`limit` up to 200); when `next_before` is set, \
                 pass it back as `before` for older ones."
            }
            ModelTool::Diff => {
                "Says what differs between two points in time: `from` and `to` (default \
                 `\"now\"`) are a checkpoint's id or name, `\"now\"`, or `\"rev:<N>\"`. \
                 Each changed path once, sorted: added, deleted, modified, mode or type changed \
                 (an added or deleted directory stands for everything under it). `text: true` \
                 adds unified diffs of changed text files; `paths` narrows the comparison to \
                 some subtrees. Up to 1000 entries a page; when `next_cursor` is set, pass it \
                 back as `cursor`."
            }
            ModelTool::Restore => {
                "Brings the workspace (or only `paths` and their subtrees) back to a checkpoint, \
                 given by id or name: files changed since are put back, files created since are \
                 removed. A checkpoint of the state before the restore is taken first, so a \
                 restore can itself be undone. Returns what changed and that checkpoint's id."
            }
            ModelTool::Undo => {
                "Undoes the last command or tool call that changed files, by restoring the \
                 automatic checkpoint taken just before it. Calling it again undoes the one \
                 before that. Returns what changed."
            }
            ModelTool::ProcessStart => {
                "Starts a long-running process on the agent's Linux computer (a dev server, a \
                 watcher, a worker): `command` in bash syntax, in `cwd` (default `/`), with `env`. \
                 Unlike `bash` it is not waited for: the answer is the process's record at once \
                 (`id`, `state`, `pid`, and `job`, the job its output goes to). The workspace is \
                 pushed to the computer first, and later edits to the workspace reach the \
                 running process within a second (hot reload sees them); files the process \
                 writes come back when the next command on the computer ends. `ports` declares \
                 the ports it listens on, served at `/agents/{agent}/ports/{port}/` and shareable \
                 with `port_share`. `restart`: `never` (default), `on-failure` or `always` start \
                 it again when it exits, and on a fresh computer if the computer goes away. Read \
                 its output with `process_output`; stop it with `process_stop`."
            }
            ModelTool::ProcessList => {
                "Lists the agent's processes, running and ended (until `process_stop` forgets \
                 them): each one's `id`, `command`, `state` (`starting`, `running`, `exited`, \
                 `failed` or `lost`), `pid`, `exit_code` or `signal`, `restarts`, `ports` and \
                 `job` (the job its output goes to)."
            }
            ModelTool::ProcessGet => {
                "Gets one process's record: `state` (`starting`, `running`, `exited`, `failed` \
                 or `lost`), `pid`, `exit_code` or `signal`, `restarts`, `error`, its start and \
                 end times, and `job` (the job its output goes to)."
            }
            ModelTool::ProcessOutput => {
                "Reads a process's output, stdout and stderr across its restarts, from byte \
                 offset `from`: pieces with their stream and offset, `state` (its job's), `next` \
                 (the offset to read from next) and `done` (true once the process has ended and \
                 everything was read). Output arrives as the process prints it, about twice a \
                 second: call again with `from` set to `next` to follow it; at most 1 MiB a \
                 call. This is the log of the process's job (the record's `job`), which \
                 `job_output` reads the same way."
            }
            ModelTool::ProcessSignal => {
                "Sends a signal to a running process: `signal` is a name such as `HUP`, `INT`, \
                 `TERM`, `KILL`, `USR1` or `USR2`, with or without `SIG`. A process ended by a \
                 signal may be started again by its `restart` policy; to end it for good, use \
                 `process_stop`."
            }
            ModelTool::ProcessStop => {
                "Stops a running process for good: SIGTERM, then SIGKILL after `grace_ms` \
                 (default 5000, at most 60,000) if it has not exited; it never restarts. Returns \
                 its final record; its output stays readable. Called on a process that has \
                 already ended, it forgets it: the record goes (`process_list` no longer shows \
                 it), its job's output stays readable with `job_output`."
            }
            ModelTool::PortShare => {
                "Creates a share link to a port of the computer: a URL that opens what a \
                 running process serves on `port` (one it declared in `ports`) from any browser, \
                 with no other credential, for `ttl_seconds` (at most 30 days). Give it to a \
                 person to see a dev server. Returns `{share: {id, port, url, expires_at}}`; a \
                 link can be revoked over the HTTP API."
            }
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
