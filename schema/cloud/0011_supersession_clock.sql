-- Issue 26: the supersession's own clock (see the local migration of the same name); a row
-- replaces another only when it is at least as new in every part, this one included.
ALTER TABLE cold_memories ADD COLUMN superseded_changed_at REAL NOT NULL DEFAULT 0;
-- The trigger of 0009 (an older release's change moves both part clocks with changed_at)
-- must not take a supersession of this release, which moves changed_at and its own clock
-- only, for a change of the content and the flags.
DROP TRIGGER IF EXISTS cold_memories_change_clocks;
CREATE TRIGGER IF NOT EXISTS cold_memories_change_clocks AFTER UPDATE OF changed_at ON cold_memories WHEN new.changed_at > old.changed_at AND new.content_changed_at IS old.content_changed_at AND new.flags_changed_at IS old.flags_changed_at AND new.superseded_changed_at IS old.superseded_changed_at BEGIN UPDATE cold_memories SET content_changed_at = new.changed_at, flags_changed_at = new.changed_at WHERE rowid = new.rowid; END;
