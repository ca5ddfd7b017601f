-- Replay protection for hook calls.
--
-- A hook may take signed calls (x-stead-timestamp, x-stead-signature over
-- "<timestamp>.<body>", like the agent's own outgoing webhooks): then its
-- secret is kept to check signatures, and each accepted signature is
-- remembered for the hook's window so the same call cannot run twice. Any
-- call may carry an Idempotency-Key, remembered for the same window.
ALTER TABLE hooks ADD COLUMN signing_secret TEXT;
ALTER TABLE hooks ADD COLUMN replay_window_ms INTEGER NOT NULL DEFAULT 300000;

CREATE TABLE hook_deliveries (
    hook TEXT NOT NULL,
    key TEXT NOT NULL,
    job_id INTEGER,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (hook, key)
) WITHOUT ROWID;
CREATE INDEX hook_deliveries_by_time ON hook_deliveries (at_ms);
