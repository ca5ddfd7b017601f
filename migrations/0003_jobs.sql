-- Durable jobs and their output log, schedules and their run ledger, and
-- webhook hooks. Driven by the Durable Object's single alarm (see
-- crates/scheduler).

-- One row per job. state: queued, running, succeeded, failed, cancelled,
-- timed_out. output_bytes is the offset one past the last byte ever
-- appended; kept_from the first offset still stored (earlier output was
-- pruned). Times are milliseconds since the Unix epoch.
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source TEXT NOT NULL,
    command TEXT NOT NULL,
    backend TEXT NOT NULL,
    request TEXT NOT NULL,
    state TEXT NOT NULL,
    exit_code INTEGER,
    error TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    started_ms INTEGER,
    finished_ms INTEGER,
    output_bytes INTEGER NOT NULL DEFAULT 0,
    kept_from INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX jobs_by_state ON jobs (state, id);

-- A job's output in bounded pieces, keyed by the byte offset where each
-- starts in the job's log. stream: 1 stdout, 2 stderr.
CREATE TABLE job_output (
    job_id INTEGER NOT NULL,
    start INTEGER NOT NULL,
    stream INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (job_id, start)
) WITHOUT ROWID;

-- Schedules. kind: once or cron. action: exec (exec holds the request body)
-- or webhook (url, secret, payload). next_due_ms is NULL once a one-shot
-- schedule has run.
CREATE TABLE schedules (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    cron TEXT,
    tz TEXT NOT NULL,
    action TEXT NOT NULL,
    exec TEXT,
    url TEXT,
    secret TEXT,
    payload TEXT,
    catch_up TEXT NOT NULL,
    max_attempts INTEGER NOT NULL,
    retry_delay_ms INTEGER NOT NULL,
    next_due_ms INTEGER,
    created_ms INTEGER NOT NULL
);

CREATE INDEX schedules_by_due ON schedules (next_due_ms);

-- The run ledger: one row per attempt at one due time, written before the
-- attempt starts. The key makes a second start of the same attempt
-- impossible. state: running, succeeded, failed, interrupted, skipped.
-- retry_at_ms is set while a further attempt is pending.
CREATE TABLE schedule_runs (
    schedule_id TEXT NOT NULL,
    due_ms INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    state TEXT NOT NULL,
    skipped INTEGER NOT NULL DEFAULT 0,
    job_id INTEGER,
    status INTEGER,
    error TEXT,
    started_ms INTEGER NOT NULL,
    finished_ms INTEGER,
    retry_at_ms INTEGER,
    PRIMARY KEY (schedule_id, due_ms, attempt)
) WITHOUT ROWID;

CREATE INDEX schedule_runs_by_retry ON schedule_runs (retry_at_ms);

-- Webhook hooks: POST /agents/{id}/hooks/{name} with the hook's secret runs
-- the bound exec request with the call's body on stdin. Only the secret's
-- SHA-256 is stored.
CREATE TABLE hooks (
    name TEXT PRIMARY KEY,
    secret_sha256 BLOB NOT NULL,
    exec TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,
    last_call_ms INTEGER
);

-- The agent's own id, so the alarm (which carries no request) knows it.
CREATE TABLE agent_name (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    name TEXT NOT NULL
);
