-- What the sync engine adds: fact details, a versioned critical state, a device registry.
ALTER TABLE cold_memories ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE cold_memories ADD COLUMN source TEXT NOT NULL DEFAULT 'legacy';
ALTER TABLE cold_memories ADD COLUMN last_access REAL;
ALTER TABLE cold_memories ADD COLUMN superseded_by TEXT;
ALTER TABLE cold_memories ADD COLUMN device_id TEXT;
ALTER TABLE critical_state ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE critical_state ADD COLUMN device_id TEXT;
CREATE TABLE IF NOT EXISTS devices (
    agent_id TEXT NOT NULL,
    device_id TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    registered_at INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    revoked_at INTEGER,
    PRIMARY KEY (agent_id, device_id)
);
