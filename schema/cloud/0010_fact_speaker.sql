-- Issue 13: a fact's speaker (schema/local/0012) travels with it, so a restored device or
-- another device pulling the fact links it to its speaker again. Sealed like the text when
-- the agent is encrypted (a person's name); NULL on rows from before, and on rows an older
-- release pushes (its upsert names its columns and leaves this one alone).
ALTER TABLE cold_memories ADD COLUMN speaker TEXT;
