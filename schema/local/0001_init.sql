-- The device database of one agent. Applied once by evoclaw_memory.migrate.

-- Hot memory: one row, the HotState record as JSON (msgspec).
CREATE TABLE hot_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    data TEXT NOT NULL,
    updated_at REAL NOT NULL
);

-- Every fact the device knows: the warm working set and the local copy of the archive.
CREATE TABLE facts (
    rowid INTEGER PRIMARY KEY,           -- stable integer key shared with facts_fts
    id TEXT NOT NULL UNIQUE,             -- public id (text, random), same as in the cloud
    text TEXT NOT NULL,
    category TEXT NOT NULL,
    importance REAL NOT NULL,
    created_at REAL NOT NULL,
    last_access REAL NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}', -- JSON of models.Metadata
    source TEXT NOT NULL DEFAULT 'manual',
    tier TEXT NOT NULL DEFAULT 'warm' CHECK (tier IN ('warm', 'cold')),
    superseded_by TEXT,                  -- kept for history, excluded from search
    norm_key TEXT NOT NULL,              -- normalized text: exact duplicates reinforce instead
    size INTEGER NOT NULL                -- bytes this fact counts against the warm cap
);
CREATE INDEX facts_tier_category ON facts (tier, category);
CREATE INDEX facts_norm_key ON facts (norm_key);
CREATE INDEX facts_created ON facts (created_at);

-- Full-text index over text + category + metadata. Text is pre-split by evoclaw_memory.text:
-- words for spaced languages, overlapping bigrams for CJK runs (so Chinese/Japanese match).
CREATE VIRTUAL TABLE facts_fts USING fts5 (
    body,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE facts_vocab USING fts5vocab (facts_fts, 'row');

CREATE TABLE tree_nodes (
    path TEXT PRIMARY KEY,
    description TEXT NOT NULL DEFAULT '',
    warm_count INTEGER NOT NULL DEFAULT 0,   -- facts filed directly at this node
    cold_count INTEGER NOT NULL DEFAULT 0,
    last_access REAL NOT NULL DEFAULT 0,
    created_at REAL NOT NULL
);

-- Transactional outbox: written in the same transaction as the change it records; the sync
-- engine drains it in seq order. kind 'fact' carries the fact id; kind 'state' (hot + tree)
-- is coalesced to one row whose seq moves to the end on every change.
CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    ref TEXT NOT NULL,
    created_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX outbox_kind_ref ON outbox (kind, ref);

CREATE TABLE metrics (
    key TEXT PRIMARY KEY,
    value REAL NOT NULL
);

CREATE TABLE audit (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    op TEXT NOT NULL,        -- the operation that caused it: remember, evict, hot.update ...
    target TEXT NOT NULL,    -- what it touched: a fact id, a tree path, 'hot'
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_ts ON audit (ts);

-- Small key/value settings of this database (sync cursors, device id...).
CREATE TABLE kv (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
