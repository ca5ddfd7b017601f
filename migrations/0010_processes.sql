-- Long-running processes on the agent's computer (see
-- crates/agent/src/processes). state: starting, running, exited, failed,
-- lost. instance is the container instance its current run is on (another
-- instance answering means the run is gone); offset the bytes of that
-- run's output already in the job log (job_id), which holds every run's.
-- restarts counts every start after the first, on any computer;
-- base_restarts those before the current computer's.
CREATE TABLE processes (
    id TEXT PRIMARY KEY,
    command TEXT NOT NULL,
    cwd TEXT NOT NULL,
    env TEXT NOT NULL,
    ports TEXT NOT NULL,
    restart TEXT NOT NULL,
    keep_awake INTEGER NOT NULL,
    state TEXT NOT NULL,
    instance TEXT,
    pid INTEGER,
    exit_code INTEGER,
    signal INTEGER,
    restarts INTEGER NOT NULL DEFAULT 0,
    base_restarts INTEGER NOT NULL DEFAULT 0,
    stopped INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    job_id INTEGER NOT NULL,
    output_offset INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    started_ms INTEGER,
    ended_ms INTEGER
);
