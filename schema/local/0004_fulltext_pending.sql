-- Full-text entries of new facts wait here and reach facts_fts in batches
-- (LocalStore.flush_fulltext, before any full-text read and every FULLTEXT_BATCH facts).
-- Every FTS5 write transaction adds a segment and rewrites the index's structure and
-- averages records, ~6 pages, so remember() indexing its fact at once spent a third of its
-- writes there; a row here is one page, and 64 of them one segment.
-- A fact's rowid is in exactly one of fts_pending and facts_fts.
CREATE TABLE fts_pending (
    fact_rowid INTEGER PRIMARY KEY,
    body TEXT NOT NULL
);
