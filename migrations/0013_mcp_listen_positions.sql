-- Where each listener of the MCP server's 2026-07-28 revision (one
-- credential following one notification filter with subscriptions/listen)
-- was in the change log, so a client that listens again gets the changes
-- made while it was not listening (that revision has no resumption of its
-- own). Rows unused for an hour are dropped.
CREATE TABLE mcp_listen_positions (
    -- Who listened (`admin`, `token:<id>`).
    actor TEXT NOT NULL,
    -- The filter, canonical JSON: {"list_changed":..,"resources":[..]}.
    filter TEXT NOT NULL,
    -- The change-log position (`R` or `R.N`) to resume from.
    cursor TEXT NOT NULL,
    used_ms INTEGER NOT NULL,
    PRIMARY KEY (actor, filter)
);
