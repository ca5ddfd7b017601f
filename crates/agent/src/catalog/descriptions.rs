//! What each model tool does, its limits and how to page through it, as
//! the model reads it: prose kept apart from [`super::ModelTool::description`]
//! so that the function stays a table of which tool says what, and a text can
//! be reread (and reworded) as a whole.

// The file tools.
pub(super) const READ: &str =
    "Reads a file of the workspace. By default returns up to 2000 lines from \
    `offset` (1-based line, default 1) as `content`; `line_numbers: true` prefixes \
    each line with its number. When the page stops before the end, `truncated` is \
    true and `next_offset` is the line to continue from; at the end, `total_lines` \
    is given. A file with a NUL byte in its first 8 KiB is reported as `binary` \
    instead of shown: read its bytes with `byte_offset`/`byte_length` (up to 256 KiB \
    a call, base64 unless the bytes are text; continue from `next_byte_offset`). \
    Paths are absolute, such as `/src/main.rs`.";

pub(super) const WRITE: &str =
    "Creates a file, or replaces a whole file, with `content` (UTF-8 text, or base64 \
    bytes with `encoding: \"base64\"`), creating missing parent directories. It \
    replaces everything in the file: to change part of a file, use `edit`. Returns \
    the size, whether it was created, and the workspace revision.";

pub(super) const EDIT: &str =
    "Replaces exact text in a file. Each edit's `old` must occur exactly once in the \
    file (include surrounding lines to make it unique) unless `replace_all` is set; \
    `new` takes its place. The edits of one call are found in the original text, \
    must not overlap, and apply together or not at all. Returns the number of \
    replacements and a unified diff; `dry_run` shows the diff without writing. Read \
    the file first so that `old` matches it character for character, indentation \
    included. When `old` is not in the file exactly, a match ignoring differences in \
    whitespace, quotes and Unicode forms is used if there is exactly one, and the \
    answer's `fuzzy` says which rule matched and the file's text it replaced.";

pub(super) const APPLY_PATCH: &str =
    "Applies a patch to the workspace: the `apply_patch` format (`*** Begin Patch`, \
    `*** Add File: path` with `+` lines, `*** Update File: path` with optional \
    `*** Move to: path` and `@@` hunks of ` ` context, `-` removed and `+` added \
    lines, `*** Delete File: path`, `*** End Patch`) or a unified diff as `diff -u` \
    and `git diff` print it. Every file of the patch changes in one step: if a hunk \
    does not apply, nothing changes and the error names the file, the hunk and the \
    nearest text found. Relative paths start at `base` (default `/`). Returns the \
    files touched and a unified diff of everything changed; `dry_run` checks \
    without writing.";

pub(super) const LS: &str =
    "Lists a directory in name order: each entry's name, type, size, mode and mtime \
    (ms). Up to 1000 entries a page (`limit` up to 10,000); when `next_cursor` is \
    set, pass it back as `cursor` for the next page.";

pub(super) const GLOB: &str =
    "Finds paths matching a glob pattern relative to `path` (default `/`): `*` and `?` \
    within a name, `**` across directories, `[...]` and `{a,b}`, as in \
    `**/*.{ts,tsx}`. Returns matches with type, size and mtime in depth-first name \
    order; `exclude` leaves paths out (a pattern without `/` matches a name \
    anywhere, like .gitignore). When `next_cursor` is set, pass it back as `cursor` \
    for more.";

pub(super) const GREP: &str =
    "Searches file contents under `path` (default: the whole workspace) for a literal \
    string, or a regular expression with `regex: true`, like `grep -rn`. `output` \
    returns matching lines with line numbers and context (`content`, the default; \
    `context`, `before`, `after` lines), only the matching files' paths (`files`), \
    or counts per file (`count`). `include` and `exclude` globs narrow the files. \
    Binary files are skipped and result lines are cut at 1 KiB. When `next_cursor` \
    is set, pass it back as `cursor` for more.";

// Commands and their jobs.
pub(super) const BASH: &str =
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
    with `job_output` and stop it with `job_cancel`.";

pub(super) const JOB_OUTPUT: &str =
    "Reads a background job's output (a job started by `bash` with `detach`, a \
    schedule, a hook, or a process's log) from byte offset `from`: pieces of stdout and stderr with \
    their offsets, the job's `state`, `next` (the offset to read from next) and \
    `done` (true once the job has ended and everything was read). Call again with \
    `from` set to `next` until `done`; at most 1 MiB a call.";

pub(super) const JOB_CANCEL: &str =
    "Cancels a background job: a queued job never starts, and a command running on \
    the computer is stopped at once (what it changed until then is kept). A \
    command in the light shell cannot be interrupted; its own limits end it. \
    Returns the job.";

// Schedules and hooks.
pub(super) const SCHEDULE_LIST: &str = "Lists the agent's schedules, each with its next due time.";

pub(super) const SCHEDULE_PUT: &str =
    "Creates or replaces (same `id`) a schedule that, at each due time, runs a \
    command as a background job (`exec`: the arguments `bash` takes, without \
    `detach`) or calls a signed webhook (`webhook`). Give exactly one of `cron` (with \
    `tz`), `at` (RFC 3339), `at_ms` or `delay_ms`, and exactly one of `exec` and \
    `webhook`. Returns the schedule; a webhook's signing secret is shown once, as \
    `webhook_secret`.";

pub(super) const SCHEDULE_DELETE: &str = "Deletes a schedule; runs already started go on.";

pub(super) const HOOK_LIST: &str = "Lists the agent's webhook hooks.";

pub(super) const HOOK_PUT: &str =
    "Creates or replaces a hook: a URL (`POST /agents/{agent}/hooks/{name}`) that a \
    third party calls with the hook's secret in the `x-hook-secret` header; each \
    call runs `exec` (the arguments `bash` takes, without `detach`) as a background \
    job with the call's body on stdin. Returns the hook and its secret, shown only \
    this once.";

pub(super) const HOOK_DELETE: &str = "Deletes a hook; calls to it are refused from then on.";

// Checkpoints and time travel.
pub(super) const CHECKPOINT: &str =
    "Records the whole workspace as it is now, cheaply (no file content is copied), \
    so it can be compared with (`diff`) or brought back (`restore`) later. An \
    optional unique `name` finds it again; `note` says what it is for. Checkpoints \
    are also taken automatically before every command or tool call that changes \
    files. Returns the checkpoint with its id.";

pub(super) const CHECKPOINT_LIST: &str =
    "Lists checkpoints, newest first (manual and automatic ones, with what each was \
    taken before), up to 50 a page (`limit` up to 200); when `next_before` is set, \
    pass it back as `before` for older ones.";

pub(super) const DIFF: &str =
    "Says what differs between two points in time: `from` and `to` (default \
    `\"now\"`) are a checkpoint's id or name, `\"now\"`, or `\"rev:<N>\"`. \
    Each changed path once, sorted: added, deleted, modified, mode or type changed \
    (an added or deleted directory stands for everything under it). `text: true` \
    adds unified diffs of changed text files; `paths` narrows the comparison to \
    some subtrees. Up to 1000 entries a page; when `next_cursor` is set, pass it \
    back as `cursor`.";

pub(super) const RESTORE: &str =
    "Brings the workspace (or only `paths` and their subtrees) back to a checkpoint, \
    given by id or name: files changed since are put back, files created since are \
    removed. A checkpoint of the state before the restore is taken first, so a \
    restore can itself be undone. Returns what changed and that checkpoint's id.";

pub(super) const UNDO: &str =
    "Undoes the last command or tool call that changed files, by restoring the \
    automatic checkpoint taken just before it. Calling it again undoes the one \
    before that. Returns what changed.";

// Processes and their ports.
pub(super) const PROCESS_START: &str =
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
    its output with `process_output`; stop it with `process_stop`.";

pub(super) const PROCESS_LIST: &str =
    "Lists the agent's processes, running and ended (until `process_stop` forgets \
    them): each one's `id`, `command`, `state` (`starting`, `running`, `exited`, \
    `failed` or `lost`), `pid`, `exit_code` or `signal`, `restarts`, `ports` and \
    `job` (the job its output goes to).";

pub(super) const PROCESS_GET: &str =
    "Gets one process's record: `state` (`starting`, `running`, `exited`, `failed` \
    or `lost`), `pid`, `exit_code` or `signal`, `restarts`, `error`, its start and \
    end times, and `job` (the job its output goes to).";

pub(super) const PROCESS_OUTPUT: &str =
    "Reads a process's output, stdout and stderr across its restarts, from byte \
    offset `from`: pieces with their stream and offset, `state` (its job's), `next` \
    (the offset to read from next) and `done` (true once the process has ended and \
    everything was read). Output arrives as the process prints it, about twice a \
    second: call again with `from` set to `next` to follow it; at most 1 MiB a \
    call. This is the log of the process's job (the record's `job`), which \
    `job_output` reads the same way.";

pub(super) const PROCESS_SIGNAL: &str =
    "Sends a signal to a running process: `signal` is a name such as `HUP`, `INT`, \
    `TERM`, `KILL`, `USR1` or `USR2`, with or without `SIG`. A process ended by a \
    signal may be started again by its `restart` policy; to end it for good, use \
    `process_stop`.";

pub(super) const PROCESS_STOP: &str =
    "Stops a running process for good: SIGTERM, then SIGKILL after `grace_ms` \
    (default 5000, at most 60,000) if it has not exited; it never restarts. Returns \
    its final record; its output stays readable. Called on a process that has \
    already ended, it forgets it: the record goes (`process_list` no longer shows \
    it), its job's output stays readable with `job_output`.";

pub(super) const PORT_SHARE: &str =
    "Creates a share link to a port of the computer: a URL that opens what a \
    running process serves on `port` (one it declared in `ports`) from any browser, \
    with no other credential, for `ttl_seconds` (at most 30 days). Give it to a \
    person to see a dev server. Returns `{share: {id, port, url, expires_at}}`; a \
    link can be revoked over the HTTP API.";
