-- Issue 18: a fact's pinned (bit 1: the vault, kept on every device) and private (bit 2:
-- never in a shared session) marks. Clear, like importance: a sealed row authenticates a
-- non-zero value in its enc:v2 associated data (old rows, 0, read exactly as before).
ALTER TABLE cold_memories ADD COLUMN flags INTEGER NOT NULL DEFAULT 0;
