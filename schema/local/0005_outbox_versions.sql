-- The sync engine acknowledges exactly what it sent: an entry re-queued while its push was in
-- flight (a supersession, an edit) bumps `version`, and the acknowledgement deletes only the
-- (seq, version) it read, so the newer change stays queued.
ALTER TABLE outbox ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
-- Entries the cloud refused for good (a value SQLite cannot hold, a SQL error on that row):
-- set aside with the reason, so they never block the rest of the outbox. Shown by
-- `sync --status` and `doctor`; a new change to the fact queues it again.
CREATE TABLE outbox_rejected (
    kind TEXT NOT NULL,
    ref TEXT NOT NULL,
    reason TEXT NOT NULL,
    rejected_at REAL NOT NULL,
    PRIMARY KEY (kind, ref)
);
