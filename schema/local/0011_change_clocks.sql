-- A fact's content and its pin/privacy marks merge apart (README "Changes on several
-- devices"): content_changed_at is when its text, category, importance, metadata or
-- supersession last changed, flags_changed_at when pinned or private did (a device's
-- clock; 0 for never). changed_at stays the time of its last change of any kind, or of a
-- merge of two devices' versions. Facts changed before this release count as changed
-- whole at their changed_at.
ALTER TABLE facts ADD COLUMN content_changed_at REAL NOT NULL DEFAULT 0;
ALTER TABLE facts ADD COLUMN flags_changed_at REAL NOT NULL DEFAULT 0;
UPDATE facts SET content_changed_at = changed_at, flags_changed_at = changed_at WHERE changed_at > 0;
