-- Live sync back from the computer while processes run (see
-- crates/agent/src/computer/live.rs): what it did in all (pulls: reports
-- applied; files: paths applied; largest: most changes one report carried;
-- left_out: paths whose files moved before their content was read), when
-- it last ran and its last error.
CREATE TABLE live_sync (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pulls INTEGER NOT NULL,
    files INTEGER NOT NULL,
    largest INTEGER NOT NULL,
    left_out INTEGER NOT NULL,
    last_ms INTEGER,
    last_error TEXT
);
-- The latest conflicts live sync met (a path both the workspace and the
-- computer changed: the workspace's version stays, the computer's is kept at
-- container_copy), the newest 100.
CREATE TABLE live_conflicts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    container_copy TEXT,
    at_ms INTEGER NOT NULL
);
