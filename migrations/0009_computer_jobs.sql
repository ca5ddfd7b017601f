-- Computer jobs that outlive the alarm that started them: the command runs
-- on, detached, in the container, and a later alarm reads its output on
-- from where the job's log ends (its output_bytes plus the bytes the
-- container dropped unread) and applies its changes when it exits. One row
-- per such job while it runs (see crates/agent/src/computer/detached.rs).
CREATE TABLE computer_jobs (
    job_id INTEGER PRIMARY KEY,
    exec TEXT NOT NULL,
    instance TEXT NOT NULL,
    base INTEGER NOT NULL,
    sent TEXT NOT NULL,
    dropped INTEGER NOT NULL DEFAULT 0,
    slices INTEGER NOT NULL DEFAULT 1
);
