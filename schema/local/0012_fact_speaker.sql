-- Issue 13: who said a distilled fact (a conversation turn's name; NULL: the owner, or not
-- from a conversation). Kept with the fact, not only in the entity links, because links are
-- rebuilt from the text on a restored device, on a device that pulls the fact and in the
-- linking catch-up: there the text alone cannot tell "Caroline went ..." said by Caroline
-- from a fact about her, and retrieval's speaker boost would be lost.
ALTER TABLE facts ADD COLUMN speaker TEXT;
