-- Issue 26: a fact's id is unique within its agent, not across the cloud. With `id` alone
-- as the key, agent B importing agent A's export (the same ids) upserted onto A's rows,
-- changed nothing (the agent check refused it) and lost B's facts from the cloud. SQLite
-- cannot change a table's key in place: the table is rebuilt with (agent_id, id) as its
-- key, every rowid kept (the devices' pull cursors count rowids), then its indexes and its
-- trigger again. A release from before this one reads schema 12 as newer than it knows and
-- asks to be upgraded (SqlRemote.ensure_schema) instead of writing with the old key.
CREATE TABLE cold_memories_by_agent (
    id TEXT,
    agent_id TEXT NOT NULL,
    text TEXT NOT NULL,
    category TEXT NOT NULL,
    importance REAL DEFAULT 0.5,
    created_at INTEGER NOT NULL,
    access_count INTEGER DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    source TEXT NOT NULL DEFAULT 'legacy',
    last_access REAL,
    superseded_by TEXT,
    device_id TEXT,
    flags INTEGER NOT NULL DEFAULT 0,
    changed_at REAL NOT NULL DEFAULT 0,
    content_changed_at REAL NOT NULL DEFAULT 0,
    flags_changed_at REAL NOT NULL DEFAULT 0,
    speaker TEXT,
    superseded_changed_at REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, id)
);
INSERT INTO cold_memories_by_agent (rowid, id, agent_id, text, category, importance, created_at, access_count, metadata, source, last_access, superseded_by, device_id, flags, changed_at, content_changed_at, flags_changed_at, speaker, superseded_changed_at) SELECT rowid, id, agent_id, text, category, importance, created_at, access_count, metadata, source, last_access, superseded_by, device_id, flags, changed_at, content_changed_at, flags_changed_at, speaker, superseded_changed_at FROM cold_memories;
DROP TABLE cold_memories;
ALTER TABLE cold_memories_by_agent RENAME TO cold_memories;
CREATE INDEX IF NOT EXISTS idx_cold_agent_category ON cold_memories (agent_id, category);
CREATE INDEX IF NOT EXISTS idx_cold_agent_created ON cold_memories (agent_id, created_at);
CREATE TRIGGER IF NOT EXISTS cold_memories_change_clocks AFTER UPDATE OF changed_at ON cold_memories WHEN new.changed_at > old.changed_at AND new.content_changed_at IS old.content_changed_at AND new.flags_changed_at IS old.flags_changed_at AND new.superseded_changed_at IS old.superseded_changed_at BEGIN UPDATE cold_memories SET content_changed_at = new.changed_at, flags_changed_at = new.changed_at WHERE rowid = new.rowid; END;
