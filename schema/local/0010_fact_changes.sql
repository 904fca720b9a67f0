-- Issue 18: a fact's changes reach the owner's other devices. changed_at is when the fact's
-- content or flags last changed (an edit, a pin or unpin, a privacy mark, a supersession or
-- its undoing, a category move), taken from a device's clock; 0 for a fact never changed
-- since it was stored. It is the fact's last-writer-wins clock (cloud/statements.py):
-- the push and the pull each keep the version with the larger changed_at.
ALTER TABLE facts ADD COLUMN changed_at REAL NOT NULL DEFAULT 0;
