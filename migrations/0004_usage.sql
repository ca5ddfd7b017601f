-- Usage counters for quotas, kept by triggers so that checking a quota
-- after an operation costs one statement however large the workspace:
-- stored_bytes is the content stored (each distinct chunk once, staged
-- uploads included), node_count the files, directories and symlinks (the
-- root included).
INSERT INTO meta (key, value) SELECT 'stored_bytes', COALESCE(SUM(size), 0) FROM chunks;
INSERT INTO meta (key, value) SELECT 'node_count', COUNT(*) FROM nodes;
CREATE TRIGGER chunks_counted AFTER INSERT ON chunks BEGIN UPDATE meta SET value = value + NEW.size WHERE key = 'stored_bytes'; END;
CREATE TRIGGER chunks_uncounted AFTER DELETE ON chunks BEGIN UPDATE meta SET value = value - OLD.size WHERE key = 'stored_bytes'; END;
CREATE TRIGGER nodes_counted AFTER INSERT ON nodes BEGIN UPDATE meta SET value = value + 1 WHERE key = 'node_count'; END;
CREATE TRIGGER nodes_uncounted AFTER DELETE ON nodes BEGIN UPDATE meta SET value = value - 1 WHERE key = 'node_count'; END;
