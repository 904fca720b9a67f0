-- A forget deletes the fact's row and leaves a tombstone in the same push transaction.
-- Tombstones are kept (they hold no text): other devices learn deletions by pulling them
-- after their cursor (rowid), and a device that still holds the fact cannot upsert it back.
CREATE TABLE IF NOT EXISTS cold_tombstones (
    agent_id TEXT NOT NULL,
    id TEXT NOT NULL,
    deleted_at INTEGER NOT NULL,
    device_id TEXT,
    PRIMARY KEY (agent_id, id)
);
