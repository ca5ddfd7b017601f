-- The workspace filesystem: inodes, directory entries, content-addressed
-- chunks, in-flight upload staging, and the revision/change log.

-- Workspace-wide counters.
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);

-- One row per file, directory or symlink. kind: 1 file, 2 directory, 3 symlink.
-- mtime is milliseconds since the Unix epoch; rev is the revision of the
-- node's last change.
CREATE TABLE nodes (
    ino INTEGER PRIMARY KEY,
    kind INTEGER NOT NULL,
    mode INTEGER NOT NULL,
    size INTEGER NOT NULL DEFAULT 0,
    mtime INTEGER NOT NULL,
    target TEXT,
    rev INTEGER NOT NULL
);

-- Directory entries: a rename is one row update, a listing an index range.
CREATE TABLE dirents (
    parent INTEGER NOT NULL,
    name TEXT NOT NULL,
    ino INTEGER NOT NULL,
    PRIMARY KEY (parent, name)
) WITHOUT ROWID;

-- Content chunks keyed by BLAKE3 hash, stored once however many files hold
-- them. Ids are never reused (AUTOINCREMENT): a download streaming a list of
-- ids must find its chunks or none, never another file's.
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    hash BLOB NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    data BLOB NOT NULL
);

-- A file's content: its chunks in order (all full-size but the last).
CREATE TABLE file_chunks (
    ino INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    PRIMARY KEY (ino, idx)
) WITHOUT ROWID;
CREATE INDEX file_chunks_by_chunk ON file_chunks (chunk);

-- Chunks of streamed uploads not yet committed; they keep their chunks alive.
CREATE TABLE upload_chunks (
    upload INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    PRIMARY KEY (upload, idx)
) WITHOUT ROWID;
CREATE INDEX upload_chunks_by_chunk ON upload_chunks (chunk);

-- The change log: what each revision touched. kind: created, modified, deleted.
CREATE TABLE changes (
    seq INTEGER PRIMARY KEY,
    rev INTEGER NOT NULL,
    path TEXT NOT NULL,
    kind TEXT NOT NULL
);
CREATE INDEX changes_by_rev ON changes (rev);

-- revision: bumped once per change. changes_pruned: the change log holds no
-- entry at or below it. uploads: the last upload id handed out.
INSERT INTO meta (key, value) VALUES ('revision', 0), ('changes_pruned', 0), ('uploads', 0);
INSERT INTO nodes (ino, kind, mode, size, mtime, target, rev) VALUES (1, 2, 493, 0, 0, NULL, 0);
