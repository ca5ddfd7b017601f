-- The tokens minted for this agent (`GET /agents/{id}/tokens`): recorded by
-- the Worker before it hands a new token out, dropped once expired.
CREATE TABLE minted_tokens (
    id TEXT PRIMARY KEY,
    scopes TEXT NOT NULL,
    minted_at INTEGER NOT NULL,
    exp INTEGER NOT NULL
);
