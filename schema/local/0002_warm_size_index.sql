-- remember() checks the warm total on every call: a covering index makes that SUM cheap.
CREATE INDEX facts_tier_size ON facts (tier, size);
