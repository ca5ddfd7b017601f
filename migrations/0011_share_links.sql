-- Share links to a port of the agent's computer (see
-- crates/agent/src/shares.rs): the capability itself is signed and carries
-- its expiry; the row is what lets the agent revoke it before then.
-- expires_at is Unix seconds, as in the capability.
CREATE TABLE share_links (
    id TEXT PRIMARY KEY,
    port INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_ms INTEGER
);
