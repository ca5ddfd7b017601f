-- Sessions of the MCP server's 2025-11-25 revision (initialize and
-- Mcp-Session-Id): kept in the database so they outlive the Durable
-- Object's instance, which the platform evicts when idle. The 2026-07-28
-- revision is stateless and stores nothing.
CREATE TABLE mcp_sessions (
    id TEXT PRIMARY KEY,
    -- Who initialized it (`admin`, `token:<id>`): no one else may use it.
    actor TEXT NOT NULL,
    protocol TEXT NOT NULL,
    client TEXT NOT NULL,
    -- JSON array of the resource URIs the session subscribed to.
    subscriptions TEXT NOT NULL DEFAULT '[]',
    created_ms INTEGER NOT NULL,
    used_ms INTEGER NOT NULL
);
