-- The entity graph (issue 18): people, projects, tools, concepts, places and other things the
-- facts mention. Links point at facts by rowid (what retrieval works with); a forget deletes
-- the fact's links in the same transaction (LocalStore.delete_facts).
CREATE TABLE entities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    norm TEXT NOT NULL UNIQUE,         -- lower-cased name, the join key across devices
    kind TEXT NOT NULL,
    attributes TEXT NOT NULL DEFAULT '{}',
    mentions INTEGER NOT NULL DEFAULT 0,
    first_mentioned REAL,
    last_mentioned REAL,
    manual INTEGER NOT NULL DEFAULT 0, -- added by the owner: kept when it has no facts
    updated_at REAL NOT NULL
);
-- Every name an entity goes by, its own included ("chen li", "lily"): lookups by words.
CREATE TABLE entity_aliases (
    alias TEXT PRIMARY KEY,
    entity_id INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX entity_aliases_entity ON entity_aliases (entity_id);
-- role: 'subject' (the fact is about it: its speaker, its first name) or 'mention'.
CREATE TABLE entity_facts (
    entity_id INTEGER NOT NULL,
    fact_rowid INTEGER NOT NULL,
    role TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (entity_id, fact_rowid)
) WITHOUT ROWID;
CREATE INDEX entity_facts_fact ON entity_facts (fact_rowid);
CREATE INDEX entity_facts_recent ON entity_facts (entity_id, created_at);
-- a --relation--> b: ("Sarah", "owner", "wife") reads "Sarah is the owner's wife".
CREATE TABLE entity_relations (
    a INTEGER NOT NULL,
    b INTEGER NOT NULL,
    relation TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (a, b, relation)
) WITHOUT ROWID;
CREATE INDEX entity_relations_b ON entity_relations (b);
