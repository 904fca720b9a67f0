-- End-to-end encryption: each agent's data keys, stored only wrapped (passphrase, recovery key).
CREATE TABLE IF NOT EXISTS evoclaw_keys (
    agent_id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
