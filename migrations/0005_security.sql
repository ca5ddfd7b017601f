-- The audit log, revoked tokens and per-workspace settings.

-- Every mutating call and every exec: who (admin or token:<id>), what
-- (the action and its target path or command), when (ms since the Unix
-- epoch), and how it ended (ok or the error code). Pruned by age.
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT,
    outcome TEXT NOT NULL,
    revision INTEGER
);
CREATE INDEX audit_by_time ON audit (at);

-- Tokens revoked before their expiry (Unix seconds), kept until then.
CREATE TABLE revoked_tokens (
    id TEXT PRIMARY KEY,
    exp INTEGER NOT NULL
);

-- Settings as JSON values, such as the workspace's quotas.
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
