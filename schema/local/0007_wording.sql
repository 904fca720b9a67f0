-- Retrieval across wording (issue 13).
-- 1. Aliases the memory itself states ("Chen Li (Lily)", "my wife Sarah"), as search-token
--    strings, one row per (name, alias, fact): a query naming one side also searches the
--    other. Written with the fact (text.alias_pairs), gone with it (the trigger), and only
--    read through live facts, so a superseded or forgotten fact's alias no longer expands.
CREATE TABLE aliases (
    name TEXT NOT NULL,
    alias TEXT NOT NULL,
    fact_rowid INTEGER NOT NULL,
    PRIMARY KEY (name, alias, fact_rowid)
) WITHOUT ROWID;
CREATE INDEX aliases_fact ON aliases (fact_rowid);
CREATE INDEX aliases_alias ON aliases (alias);
CREATE TRIGGER aliases_fact_deleted AFTER DELETE ON facts BEGIN
    DELETE FROM aliases WHERE fact_rowid = old.rowid;
END;
-- 2. The stemmer changed (text.STEMMER_VERSION 2: dance/dancing, beach/beaches,
--    allergy/allergic now meet): every stored index body and duplicate key was made by the
--    old one. Rebuilt from the facts themselves with the functions the migration runner
--    registers (the same code remember() uses). Dropping and refilling the index is one
--    sequential build, far cheaper than deleting 100k entries one by one.
DROP TABLE facts_vocab;
DROP TABLE facts_fts;
CREATE VIRTUAL TABLE facts_fts USING fts5 (
    body,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE facts_vocab USING fts5vocab (facts_fts, 'row');
INSERT INTO facts_fts (rowid, body)
    SELECT rowid, evoclaw_index_body(text, category, metadata) FROM facts
    WHERE rowid NOT IN (SELECT fact_rowid FROM fts_pending) ORDER BY rowid;
UPDATE fts_pending SET body = (SELECT evoclaw_index_body(f.text, f.category, f.metadata)
                               FROM facts f WHERE f.rowid = fts_pending.fact_rowid);
UPDATE facts SET norm_key = evoclaw_key_digest(evoclaw_normalized_key(text));
INSERT OR IGNORE INTO aliases (name, alias, fact_rowid)
    SELECT json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), f.rowid
    FROM facts f, json_each(evoclaw_alias_pairs(f.text)) j;
