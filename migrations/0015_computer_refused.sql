-- Paths the workspace refused from the computer (over a quota, see
-- crates/agent/src/computer/mod.rs): the computer's copy still holds what the
-- workspace would not take, so the next push sends the workspace's state of
-- each (which removes a refused new file there) and then forgets it.
CREATE TABLE computer_refused (
    path TEXT PRIMARY KEY
);
-- The latest paths live sync refused (code and reason as a command's
-- `rejected` gives them), the newest 100, for GET /agents/{id}/computer.
CREATE TABLE live_rejected (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    code TEXT NOT NULL,
    reason TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
