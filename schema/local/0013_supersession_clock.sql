-- Issue 26: a fact's supersession merges on its own, by its own clock (0: never changed), so
-- that an unsupersede made after seeing a supersession undoes it on every device while an
-- edit that never saw it cannot.
ALTER TABLE facts ADD COLUMN superseded_changed_at REAL NOT NULL DEFAULT 0;
