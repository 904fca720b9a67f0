-- Issue 18: changed facts reach the owner's other devices, not only new ones. changed_at is
-- the row's last-writer-wins clock (the device's changed_at, see schema/local/0010): a push
-- replaces a row only with a version at least as new. cold_changes is the change feed other
-- devices pull by its seq: one row per changed fact (REPLACE gives it a new seq and the last
-- writer's device), so it never holds more rows than the archive; a forget deletes it.
-- AUTOINCREMENT: a seq is never reused, so a cursor past it never misses a later change.
ALTER TABLE cold_memories ADD COLUMN changed_at REAL NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS cold_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    id TEXT NOT NULL,
    device_id TEXT,
    UNIQUE (agent_id, id)
);
-- A device pulls its agent's feed from its cursor on: one index range, in seq order.
CREATE INDEX IF NOT EXISTS cold_changes_agent_seq ON cold_changes (agent_id, seq);
