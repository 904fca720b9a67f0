-- The owner's control (SPEC §5b): prior versions of edited facts, and the ids of forgotten
-- facts. A version row holds an old text, so a forget deletes the fact's versions too;
-- `forgotten` keeps only the id, the time and who asked (never the text), so a fact another
-- device still pushes or pulls is not brought back, and history can say "forgotten".
CREATE TABLE fact_versions (
    fact_id TEXT NOT NULL,
    version INTEGER NOT NULL,          -- 1 = the fact as first stored
    text TEXT NOT NULL,
    category TEXT NOT NULL,
    importance REAL NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    replaced_at REAL NOT NULL,         -- when the edit replaced this version
    actor TEXT NOT NULL,               -- who edited: manual, mcp, bot:rules, bot:llm ...
    PRIMARY KEY (fact_id, version)
);
CREATE TABLE forgotten (
    id TEXT PRIMARY KEY,
    deleted_at REAL NOT NULL,
    actor TEXT NOT NULL
);
