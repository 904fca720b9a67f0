-- Issue 18: the vault (pinned facts never decay and never leave the device), the privacy
-- level of a fact (a shared session never sees a private one), and the proposals a
-- sub-agent makes instead of writing (the main agent accepts or rejects them).
ALTER TABLE facts ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE facts ADD COLUMN private INTEGER NOT NULL DEFAULT 0;
-- Few facts are pinned: a partial index keeps the vault's size and listing cheap.
CREATE INDEX facts_pinned ON facts (id) WHERE pinned = 1;
CREATE TABLE proposals (
    id TEXT PRIMARY KEY,
    store TEXT NOT NULL,               -- 'warm' (a fact) or 'hot' (a hot-memory update)
    content TEXT NOT NULL,             -- JSON: the remember() or update_hot() arguments
    confidence REAL NOT NULL,
    actor TEXT NOT NULL,               -- who proposed: subagent:NAME
    created_at REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',   -- pending, accepted, rejected
    decided_at REAL,
    decided_by TEXT,
    reason TEXT,
    result TEXT                        -- the fact id an accepted fact proposal became
);
CREATE INDEX proposals_status ON proposals (status, created_at);
