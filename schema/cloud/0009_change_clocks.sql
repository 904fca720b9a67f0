-- The two parts' own clocks (schema/local/0011): when a row's content and its flags last
-- changed. Clear, like changed_at: they only order versions. Rows changed before count as
-- changed whole at their changed_at. A release from before this one moves changed_at
-- without them; the trigger then moves both with it, so its change wins whole, as it did.
ALTER TABLE cold_memories ADD COLUMN content_changed_at REAL NOT NULL DEFAULT 0;
ALTER TABLE cold_memories ADD COLUMN flags_changed_at REAL NOT NULL DEFAULT 0;
UPDATE cold_memories SET content_changed_at = changed_at, flags_changed_at = changed_at WHERE changed_at > 0;
CREATE TRIGGER IF NOT EXISTS cold_memories_change_clocks AFTER UPDATE OF changed_at ON cold_memories WHEN new.changed_at > old.changed_at AND new.content_changed_at IS old.content_changed_at AND new.flags_changed_at IS old.flags_changed_at BEGIN UPDATE cold_memories SET content_changed_at = new.changed_at, flags_changed_at = new.changed_at WHERE rowid = new.rowid; END;
