-- Interactive terminals (`GET /agents/{id}/terminal`): each session, what
-- its shell keeps between lines (the light backend's), and every byte it
-- printed, by offset, so a client that reattaches gets exactly what it
-- missed whatever restarted meanwhile.
CREATE TABLE terminal_sessions (
    id TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    state TEXT NOT NULL,
    cols INTEGER NOT NULL,
    rows INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    active_ms INTEGER NOT NULL,
    -- The offset after the last byte printed, and the first one still kept.
    end_offset INTEGER NOT NULL DEFAULT 0,
    kept_from INTEGER NOT NULL DEFAULT 0,
    exit_code INTEGER,
    exit_reason TEXT,
    -- The light backend's shell and line editor, as JSON.
    shell TEXT
);

-- A session's output in pieces; a piece covers [offset, offset + length(data)).
CREATE TABLE terminal_output (
    session TEXT NOT NULL,
    offset INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (session, offset)
) WITHOUT ROWID;

-- Single-use tickets that open one terminal upgrade from a browser, which
-- cannot set Authorization on a WebSocket: only the ticket's SHA-256 is
-- kept, with the caller who minted it. A redeemed ticket stays, marked,
-- until it expires, so a second use is told apart from a wrong ticket.
CREATE TABLE terminal_tickets (
    hash TEXT PRIMARY KEY,
    caller TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    used INTEGER NOT NULL DEFAULT 0
);
