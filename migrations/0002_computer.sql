-- The computer (container) this workspace last brought in step: which
-- instance of the container program, and the workspace revision its disk is
-- known to hold. A different instance means an empty disk: the next push is
-- a full one.
CREATE TABLE computer (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    instance TEXT NOT NULL,
    acked INTEGER NOT NULL
);
