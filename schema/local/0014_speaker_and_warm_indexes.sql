-- Issue 29: the write-time decision looks for the newest live facts of one speaker that hold
-- a word (store.fulltext.newest_live_texts). Walking the word's full-text entries newest
-- first and checking each fact's speaker stops early for the owner, whose facts are most of
-- them, but for a speaker with a handful of facts (the assistant's own turns, a friend quoted
-- once) it walked a common word's whole list: ~10 ms a statement in a 100k-fact memory.
-- With this index such a speaker's few facts are found directly and each is checked against
-- the word instead. Partial: the owner's facts (speaker NULL, nearly all of them) add nothing
-- to it, so remember() writes no extra page for them.
CREATE INDEX facts_speaker ON facts (speaker) WHERE speaker IS NOT NULL;

-- The warm tier's total size (LocalStore.warm_bytes) is summed again after any write it did
-- not see (another connection's, the sync's), at the first remember of a conversation: read
-- through (tier, category), each of the few hundred warm facts was a row lookup in a 100k-fact
-- table (~0.8 ms). With pinned and size in the index the sum reads the index alone. The entry
-- grows by a few bytes; remember writes no extra page (it wrote this index already).
DROP INDEX IF EXISTS facts_tier_category;
CREATE INDEX facts_tier_category ON facts (tier, category, pinned, size);
