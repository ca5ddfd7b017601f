-- The durable environment (crates/agent/src/environment): what the agent's
-- computer keeps outside the synced tree (the ignored dependency trees and
-- the commands' per-user directory), kept as a snapshot apart from the
-- workspace: never in its tree, change log, checkpoints or quotas.

-- The environment's one record. state: ready, building or failed;
-- built_from: JSON of what the snapshot was built from.
CREATE TABLE environment (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    state TEXT NOT NULL,
    built_from TEXT,
    saved_ms INTEGER,
    bytes INTEGER NOT NULL DEFAULT 0,
    files INTEGER NOT NULL DEFAULT 0,
    log TEXT,
    warning TEXT
);

-- The computer instance last given its environment (restored or set up)
-- and the setup fingerprint (JSON) it was given it for.
CREATE TABLE environment_prepared (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    instance TEXT NOT NULL,
    setup TEXT
);

-- The snapshot's manifest, in order (parents first): `entry` is the JSON
-- of one stead_sync::environment::EnvKind, whose `chunks` (hex hashes) are
-- the references that keep `environment_chunks` rows.
CREATE TABLE environment_entries (
    seq INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    entry TEXT NOT NULL
);

-- The snapshot's content by hash (hex), its own store: the workspace's
-- `chunks` count against its stored-bytes quota, these against the
-- environment's own limit.
CREATE TABLE environment_chunks (
    id INTEGER PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    data BLOB NOT NULL
);

-- When to save the environment of the running computer before its idle
-- release (the last use plus the idle timeout, less a margin).
CREATE TABLE environment_save_due (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    at INTEGER NOT NULL
);
