-- The original EvoClaw skill's cloud tables, unchanged, so databases it wrote stay readable.
-- IF NOT EXISTS: on such a database this migration only records itself.
CREATE TABLE IF NOT EXISTS cold_memories (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    text TEXT NOT NULL,
    category TEXT NOT NULL,
    importance REAL DEFAULT 0.5,
    created_at INTEGER NOT NULL,
    access_count INTEGER DEFAULT 0
);
CREATE INDEX IF NOT EXISTS idx_cold_agent_category ON cold_memories (agent_id, category);
CREATE INDEX IF NOT EXISTS idx_cold_agent_created ON cold_memories (agent_id, created_at);
CREATE TABLE IF NOT EXISTS critical_state (
    agent_id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
