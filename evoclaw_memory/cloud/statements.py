"""The SQL a SqlRemote sends that is more than one line: shared by its methods (and tests).

Plain strings, no I/O; the schema itself is in schema/cloud/*.sql.
"""

from __future__ import annotations

import re

STATEMENT_SPLIT = re.compile(r";\s*(?:--[^\n]*)?\n")

FACT_COLS = ("id, text, category, importance, created_at, access_count, metadata, source, "
              "last_access, superseded_by, flags, changed_at, content_changed_at, flags_changed_at, "
              "speaker, superseded_changed_at")
# "+agent_id" keeps SQLite off the (agent_id, ...) indexes where a rowid range is the
# selective part: without statistics the planner takes agent_id = ? for ~10 rows, then reads
# (and sorts) every fact of the agent for each page and each push. An id lookup names both
# (agent_id, id): the table's key since cloud schema 12.
PAGE_AS_ROWS = (f"SELECT rowid, {FACT_COLS} FROM cold_memories WHERE +agent_id = ? AND "
                 "rowid > ? ORDER BY rowid LIMIT ?")
PAGE_AS_JSON = f"SELECT json_group_array(json_array(rowid, {FACT_COLS})) FROM ({PAGE_AS_ROWS})"
# A row's created_at bucket as the device computes it (LocalStore.settled_buckets): whole
# seconds (the original skill wrote milliseconds in places, see cloud_seconds) divided by the
# bucket width, both in SQLite's integer division. One "?" for the width.
BUCKET = ("CAST(CASE WHEN created_at > 1000000000000 THEN created_at / 1000 ELSE created_at "
           "END AS INTEGER) / ?")
# A clock column in whole microseconds (store/change_clock.py), to compare with the pushed
# versions' JSON: a REAL parsed from text may differ in its last bit, never by a microsecond.
def _us(column: str) -> str:
    return f"CAST(round({column} * 1000000.0) AS INTEGER)"


# Upsert by id. Counters only move forwards. A row is replaced only by a version that is at
# least as new in every part (docs/sync.md "Changes on several devices", issue 26): its content
# (text, category, importance, metadata) by content_changed_at, its flags (pin, privacy) by
# flags_changed_at, its supersession by superseded_changed_at (sticky on a tie). Two
# versions of a part stamped alike are the same version (store/change_clock.py), so "at least
# as new" is "newer or the same". A sealed row authenticates its clear values together, so
# the cloud cannot mix the parts of two versions: a version newer in one part and older in
# another is left out here and comes back to its device (KEPT), which merges the two part by
# part and pushes the merge (newest in every part) in the next round of the same sync.
# A version older in every part changes nothing; its device pulls the newer one.
UPSERT_ROWS = 50           # facts per INSERT statement (18 values each, well under SQLite's cap)
ROW = "(" + ", ".join("?" * 18) + ")"
DOMINATES = ("excluded.content_changed_at >= cold_memories.content_changed_at AND "
             "excluded.flags_changed_at >= cold_memories.flags_changed_at AND "
             "excluded.superseded_changed_at >= cold_memories.superseded_changed_at AND "
             # two supersessions stamped alike: the link over none (sticky)
             "(excluded.superseded_changed_at > cold_memories.superseded_changed_at OR "
             "excluded.superseded_by IS NOT NULL OR cold_memories.superseded_by IS NULL)")
UPSERT_FACTS = (
    "INSERT INTO cold_memories (id, agent_id, text, category, importance, created_at, "
    "access_count, metadata, source, last_access, superseded_by, device_id, flags, changed_at, "
    "content_changed_at, flags_changed_at, speaker, superseded_changed_at) "
    "SELECT * FROM (VALUES {rows}) WHERE NOT EXISTS ({guard}) "
    # A forgotten fact stays forgotten: a device that has not pulled the tombstone yet (or
    # replays an old push) cannot upsert it back. One "?" for the agent id, after the guard's.
    "AND NOT EXISTS (SELECT 1 FROM cold_tombstones t WHERE t.agent_id = ? AND t.id = column1) "
    "ON CONFLICT(agent_id, id) DO UPDATE SET category = excluded.category, text = excluded.text, "
    "metadata = excluded.metadata, importance = excluded.importance, "
    "created_at = excluded.created_at, flags = excluded.flags, "
    "changed_at = max(cold_memories.changed_at, excluded.changed_at), "
    "content_changed_at = excluded.content_changed_at, "
    "flags_changed_at = excluded.flags_changed_at, "
    "superseded_changed_at = excluded.superseded_changed_at, "
    # Who said a fact does not change; a version without one (an older device's) keeps it.
    "speaker = coalesce(excluded.speaker, cold_memories.speaker), "
    "access_count = max(cold_memories.access_count, excluded.access_count), "
    "last_access = max(coalesce(cold_memories.last_access, 0), excluded.last_access), "
    "superseded_by = excluded.superseded_by "
    f"WHERE {DOMINATES}")
# The pushed facts the cloud holds otherwise than pushed, after the upserts (see above): the
# row as it stands, for the device to merge. "?" order: the pushed versions as JSON
# ([[id, content µs, flags µs, superseded_by, supersession µs], ...]), agent_id.
KEPT = ("SELECT " + ", ".join("m." + c.strip() for c in FACT_COLS.split(",")) +
        " FROM json_each(?) j CROSS JOIN cold_memories m ON m.id = json_extract(j.value, '$[0]') "
        f"AND m.agent_id = ? WHERE {_us('m.content_changed_at')} != json_extract(j.value, '$[1]') "
        f"OR {_us('m.flags_changed_at')} != json_extract(j.value, '$[2]') OR "
        "m.superseded_by IS NOT json_extract(j.value, '$[3]') OR "
        f"{_us('m.superseded_changed_at')} != json_extract(j.value, '$[4]')")
# The cloud's clock, read in the push's own request: each device learns how far off its own
# clock is (SqlRemote.push, SyncEngine) at no extra round trip. julianday works on every
# SQLite (unixepoch('subsec') needs 3.42).
CLOUD_NOW_VALUE = "(julianday('now') - 2440587.5) * 86400.0"
CLOUD_NOW = f"SELECT {CLOUD_NOW_VALUE}"
# The change feed (cloud migration 0008), before the upserts of the same push: every pushed
# fact whose row the upsert will replace with a newer part gets a new seq under this device.
# New rows are not listed (other devices pull them by rowid), nor resends, re-seals or counter
# bumps (the same clocks): the rule of DOMINATES, on the clocks in microseconds. "?" order:
# agent_id, device_id, the pushed versions as JSON (as KEPT's), agent_id, the revoked guard.
# CROSS JOIN keeps the pushed ids outside and looks each row up by its id: left to itself
# the planner walks every row of the agent and the JSON for each (a push 50% slower at 1k).
LOG_CHANGES = ("INSERT OR REPLACE INTO cold_changes (agent_id, id, device_id) "
               "SELECT ?, m.id, ? FROM json_each(?) j CROSS JOIN cold_memories m "
               "ON m.id = json_extract(j.value, '$[0]') AND m.agent_id = ? "
               f"WHERE json_extract(j.value, '$[1]') >= {_us('m.content_changed_at')} AND "
               f"json_extract(j.value, '$[2]') >= {_us('m.flags_changed_at')} AND "
               f"json_extract(j.value, '$[4]') >= {_us('m.superseded_changed_at')} AND "
               f"(json_extract(j.value, '$[1]') > {_us('m.content_changed_at')} OR "
               f"json_extract(j.value, '$[2]') > {_us('m.flags_changed_at')} OR "
               f"json_extract(j.value, '$[4]') > {_us('m.superseded_changed_at')} OR "
               "(json_extract(j.value, '$[3]') IS NOT NULL AND m.superseded_by IS NULL)) AND "
               # (DOMINATES: a supersession stamped alike is kept over none)
               f"(json_extract(j.value, '$[4]') > {_us('m.superseded_changed_at')} OR "
               "json_extract(j.value, '$[3]') IS NOT NULL OR m.superseded_by IS NULL) "
               "AND NOT EXISTS ({guard})")
# Other devices' changes after this device's change cursor, as the rows now stand (read
# after this push's own upserts, so a version of ours that lost comes back as the winner).
PULL_CHANGES = (f"SELECT c.seq, {', '.join('m.' + c.strip() for c in FACT_COLS.split(','))} "
                "FROM cold_changes c JOIN cold_memories m ON m.id = c.id AND m.agent_id = c.agent_id "
                "WHERE c.agent_id = ? AND c.seq > ? AND (c.device_id IS NULL OR c.device_id != ?) "
                "ORDER BY c.seq LIMIT ?")
MAX_CHANGE_SEQ = "SELECT COALESCE(MAX(seq), 0) FROM cold_changes WHERE agent_id = ?"
# The owner's forget (SPEC §5b), inside the push transaction: the tombstone first, then the
# row. "?" order: agent_id, deleted_at, device_id, ids (a JSON array), then the revoked guard.
TOMBSTONE_IDS = ("INSERT OR IGNORE INTO cold_tombstones (agent_id, id, deleted_at, device_id) "
                 "SELECT ?, value, ?, ? FROM json_each(?) WHERE NOT EXISTS ({guard})")
DELETE_FORGOTTEN = ("DELETE FROM cold_memories WHERE agent_id = ? AND id IN "
                    "(SELECT value FROM json_each(?)) AND NOT EXISTS ({guard})")
# A forgotten fact leaves the change feed too (same "?" order as DELETE_FORGOTTEN).
UNLOG_FORGOTTEN = ("DELETE FROM cold_changes WHERE agent_id = ? AND id IN "
                   "(SELECT value FROM json_each(?)) AND NOT EXISTS ({guard})")
# Rowids never go back: a forget that deletes the newest rows of the table would let the next
# insert take a rowid again that a device's pull cursor has already passed (SQLite gives a
# new row the largest rowid + 1), and that device would never pull it. So a forget first
# moves one content-free mark row (agent '', which no agent id matches) above the top, in
# the same transaction. "?": the revoked guard's.
ROWID_MARK = ("INSERT OR REPLACE INTO cold_memories (rowid, id, agent_id, text, category, "
              "created_at, source) SELECT top + 1, '~rowid-mark', '', '', '', 0, 'rowid-mark' "
              "FROM (SELECT MAX(rowid) AS top FROM cold_memories) WHERE NOT EXISTS ({guard})")
# unsupersede: an upsert only ever sets the link, so clearing it is its own statement (the
# row's sealed values are rewritten by the upsert of the same push).
CLEAR_SUPERSEDED = ("UPDATE cold_memories SET superseded_by = NULL WHERE agent_id = ? AND id IN "
                    "(SELECT value FROM json_each(?)) AND NOT EXISTS ({guard})")
PULL_TOMBSTONES = ("SELECT rowid, id FROM cold_tombstones WHERE +agent_id = ? AND rowid > ? "
                   "AND (device_id IS NULL OR device_id != ?) ORDER BY rowid LIMIT ?")
# The critical state's compare-and-set on its version, with this push's nonce. "?" order:
# agent_id, data, updated_at, version, device_id, nonce, the revoked guard, expected version.
CAS_STATE = ("INSERT INTO critical_state (agent_id, data, updated_at, version, device_id, "
             "push_nonce) SELECT ?, ?, ?, ?, ?, ? WHERE NOT EXISTS ({guard}) "
             "ON CONFLICT(agent_id) DO UPDATE SET data = excluded.data, "
             "updated_at = excluded.updated_at, version = excluded.version, "
             "device_id = excluded.device_id, push_nonce = excluded.push_nonce "
             "WHERE critical_state.version = ?")
# The state read back: its data only when it is news (see SqlRemote.push). "?" order: the
# version we wrote or hold, the nonce twice, agent_id.
READ_BACK_STATE = ("SELECT version, device_id, CASE WHEN version = ? AND (? IS NULL OR push_nonce = ?) "
                   "THEN NULL ELSE data END, updated_at, push_nonce FROM critical_state "
                   "WHERE agent_id = ?")
# Other devices' new rows after the pull cursor (rowid). The cursor also moves past this
# device's own rows (to the tops below), so the scan covers only what was written since the
# last sync, not every row this device ever pushed.
PULL_NEW = (f"SELECT rowid, {FACT_COLS} FROM cold_memories WHERE +agent_id = ? AND rowid > ? "
            "AND (device_id IS NULL OR device_id != ?) ORDER BY rowid LIMIT ?")
# After a push: the device's revocation, whether the agent is encrypted, and the tops of the
# three feeds a device pulls (rowids never go back, see ROWID_MARK; seqs are AUTOINCREMENT;
# tombstones are never deleted), so a device that pulled everything of others after its
# cursors can move them past its own rows. "?" order: agent_id, device_id, agent_id, agent_id.
DEVICE_AND_TOPS = ("SELECT (SELECT revoked_at FROM devices WHERE agent_id = ? AND device_id = ?), "
                   "EXISTS (SELECT 1 FROM evoclaw_keys WHERE agent_id = ?), "
                   "(SELECT MAX(rowid) FROM cold_memories), "
                   "(SELECT MAX(seq) FROM cold_changes WHERE agent_id = ?), "
                   "(SELECT MAX(rowid) FROM cold_tombstones)")
# Every agent the cloud holds, for `evoclaw-memory agents` and restore's "it holds: ...", in
# one request: counts and metadata only (clear even in an encrypted cloud). An agent is
# anything with a fact, a device, a critical state or a keyring; the rowid mark's agent ''
# (ROWID_MARK) is none. Rows: agent_id, active devices, facts, newest device heartbeat,
# the state's updated_at, has a state, has a keyring.
AGENTS = ("WITH facts AS (SELECT agent_id, COUNT(*) AS n FROM cold_memories "
          "WHERE agent_id != '' GROUP BY agent_id), "
          "devs AS (SELECT agent_id, SUM(revoked_at IS NULL) AS n, MAX(last_seen) AS seen "
          "FROM devices GROUP BY agent_id), "
          "ids AS (SELECT agent_id FROM facts UNION SELECT agent_id FROM devs UNION "
          "SELECT agent_id FROM critical_state UNION SELECT agent_id FROM evoclaw_keys) "
          "SELECT ids.agent_id, coalesce(devs.n, 0), coalesce(facts.n, 0), devs.seen, "
          "s.updated_at, s.agent_id IS NOT NULL, k.agent_id IS NOT NULL FROM ids "
          "LEFT JOIN facts ON facts.agent_id = ids.agent_id "
          "LEFT JOIN devs ON devs.agent_id = ids.agent_id "
          "LEFT JOIN critical_state s ON s.agent_id = ids.agent_id "
          "LEFT JOIN evoclaw_keys k ON k.agent_id = ids.agent_id "
          "WHERE ids.agent_id != '' ORDER BY ids.agent_id")
