-- remember() writes every index of every row it touches, in one WAL page each: these three
-- cost ~3.6 of its ~24 pages a call and serve nothing on the hot path.
-- facts_tier_size: the warm total is now kept between calls (LocalStore.warm_bytes), and its
--   recount after an eviction reads the few hundred warm rows through facts_tier_category.
-- facts_created: only search-url sorted by it, after a LIKE filter that reads every row anyway.
-- audit_ts: the audit log is read by id (newest first), never by time.
DROP INDEX IF EXISTS facts_tier_size;
DROP INDEX IF EXISTS facts_created;
DROP INDEX IF EXISTS audit_ts;
-- A bulk load killed before its indexes were rebuilt must not bring these back at open().
UPDATE kv SET value = json_remove(value, '$.facts_tier_size', '$.facts_created')
WHERE key = 'store.deferred_indexes';
-- norm_key keeps a 64-bit digest of the normalized text instead of the text itself
-- (text.key_digest, registered by the migration runner): a fifth of the index entry.
UPDATE facts SET norm_key = evoclaw_key_digest(norm_key);
