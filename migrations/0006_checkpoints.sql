-- Checkpoints (time travel) and the staging area of a fork's import. See
-- crates/vfs/CHECKPOINTS.md for the design.

-- One row per checkpoint. kind: manual (asked for; kept until deleted) or
-- automatic (taken before an operation, named in `operation`, and pruned by
-- the retention policy). whole: 1 when it pins the whole workspace, 0 when it pins
-- only its roots (the before-image of the paths an operation will touch).
-- files, directories, symlinks and bytes (the sum of file sizes) count what
-- it pins. undone: an undo has restored it, so the next undo goes further
-- back. Times are milliseconds since the Unix epoch.
CREATE TABLE checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    name TEXT UNIQUE,
    note TEXT,
    actor TEXT NOT NULL,
    operation TEXT,
    whole INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    files INTEGER NOT NULL,
    directories INTEGER NOT NULL,
    symlinks INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    undone INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX checkpoints_by_revision ON checkpoints (whole, revision);

-- The roots a checkpoint pins, with the node each named then (ino NULL: the
-- path did not exist). A whole-workspace checkpoint has one root, `/`.
CREATE TABLE checkpoint_roots (
    checkpoint INTEGER NOT NULL,
    path TEXT NOT NULL,
    ino INTEGER,
    kind INTEGER,
    mode INTEGER,
    size INTEGER,
    mtime INTEGER,
    target TEXT,
    rev INTEGER,
    PRIMARY KEY (checkpoint, path)
) WITHOUT ROWID;

-- Everything below the roots: the directory entries and nodes as they were,
-- keyed the way `dirents` is (the inodes are the workspace's at the time and
-- only tie a directory to its entries), so a checkpoint is a copy of rows in
-- key order and a lookup by path is one index probe per name.
CREATE TABLE checkpoint_entries (
    checkpoint INTEGER NOT NULL,
    parent INTEGER NOT NULL,
    name TEXT NOT NULL,
    ino INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    mode INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime INTEGER NOT NULL,
    target TEXT,
    rev INTEGER NOT NULL,
    PRIMARY KEY (checkpoint, parent, name)
) WITHOUT ROWID;

-- The chunks of each file a checkpoint pins, in order. These rows are
-- references like `file_chunks`: a chunk lives while any of them names it.
CREATE TABLE checkpoint_chunks (
    checkpoint INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    PRIMARY KEY (checkpoint, ino, idx)
) WITHOUT ROWID;
CREATE INDEX checkpoint_chunks_by_chunk ON checkpoint_chunks (chunk);

-- A fork being imported into this (empty) workspace: what the source
-- declared, what has arrived, and where the exporter must resume. At most
-- one at a time. Nothing staged is visible in the workspace until the
-- import finishes, in one transaction.
CREATE TABLE import (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    source_revision INTEGER NOT NULL,
    root_mode INTEGER NOT NULL,
    root_mtime INTEGER NOT NULL,
    entries INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    received_entries INTEGER NOT NULL DEFAULT 0,
    received_chunks INTEGER NOT NULL DEFAULT 0,
    resume TEXT NOT NULL,
    started_ms INTEGER NOT NULL
);

-- The staged tree, under the source's inode numbers (the target is empty,
-- so they are free), and each staged file's chunks by hash.
CREATE TABLE import_entries (
    ino INTEGER PRIMARY KEY,
    parent INTEGER NOT NULL,
    name TEXT NOT NULL,
    kind INTEGER NOT NULL,
    mode INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime INTEGER NOT NULL,
    target TEXT
);
CREATE UNIQUE INDEX import_entries_by_name ON import_entries (parent, name);
CREATE TABLE import_file_chunks (
    ino INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    hash BLOB NOT NULL,
    PRIMARY KEY (ino, idx)
) WITHOUT ROWID;

-- Chunks received by the import: references that keep them alive (and
-- counted in stored_bytes) until the import finishes or is aborted.
CREATE TABLE import_chunks (
    chunk INTEGER PRIMARY KEY
);
