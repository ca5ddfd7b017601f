-- The agent's secret store (crates/agent/src/secrets.rs): write-only
-- credentials, each bound to host patterns (a JSON array of strings) and to
-- the header it is sent as ('bearer' or 'basic'; `username` only for
-- 'basic'). The agent adds the header to outbound requests to those hosts;
-- no route ever returns `value`.
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    hosts TEXT NOT NULL,
    header TEXT NOT NULL,
    username TEXT,
    value TEXT NOT NULL,
    set_at INTEGER NOT NULL
);
-- git's HTTPS credentials were a settings row keyed by host; they become
-- secrets named `git:<host>`, bound to that host, sent as HTTP Basic.
INSERT INTO secrets (name, hosts, header, username, value, set_at)
SELECT 'git:' || entry.key, json_array(entry.key), 'basic',
       json_extract(entry.value, '$.username'), json_extract(entry.value, '$.password'),
       json_extract(entry.value, '$.set_at')
FROM settings, json_each(settings.value) AS entry
WHERE settings.key = 'git_credentials';
DELETE FROM settings WHERE key = 'git_credentials';
