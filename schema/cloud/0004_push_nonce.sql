-- Each critical-state push writes a fresh nonce in the same statement as its compare-and-set
-- and reads it back: "version = expected + 1 by this device" alone also matches a write by
-- another sync of the same device, or by an earlier push whose answer was lost.
ALTER TABLE critical_state ADD COLUMN push_nonce TEXT;
