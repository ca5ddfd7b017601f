-- Chunks in an object store by hash (see crates/vfs/src/tier/mod.rs).
--
-- tier: where a chunk's bytes are. 0 inline (in `data`), 1 moving (still in
-- `data`, and the bucket may hold a copy: a move has begun), 2 tiered (only
-- in the bucket, under its hash; `data` is empty). moved_ms: when the move's
-- last put was made (a moving chunk is confirmed a grace period later).
-- used_ms: when the chunk was last written or brought back inline; rows
-- from before this migration have 0, so they move first.
ALTER TABLE chunks ADD COLUMN tier INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunks ADD COLUMN moved_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chunks ADD COLUMN used_ms INTEGER NOT NULL DEFAULT 0;
CREATE INDEX chunks_by_tier ON chunks (tier, used_ms);

-- References held by other features (an environment snapshot, ...): a
-- chunk lives while any row names it, as with file_chunks. holder names the
-- feature's object (e.g. 'envsnap:3').
CREATE TABLE chunk_holds (
    holder TEXT NOT NULL,
    chunk INTEGER NOT NULL,
    PRIMARY KEY (holder, chunk)
) WITHOUT ROWID;
CREATE INDEX chunk_holds_by_chunk ON chunk_holds (chunk);

-- Hashes whose bucket copy this agent no longer needs (the chunk was
-- collected or brought back inline while the bucket may hold it): the
-- agent's reference marker goes after a grace period, and the object too
-- once no agent's marker is left.
CREATE TABLE tier_garbage (
    hash BLOB PRIMARY KEY,
    since_ms INTEGER NOT NULL
) WITHOUT ROWID;
