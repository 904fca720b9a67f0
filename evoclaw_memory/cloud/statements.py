"""The SQL a SqlRemote sends that is more than one line: shared by its methods (and tests).

Plain strings, no I/O; the schema itself is in schema/cloud/*.sql.
"""

from __future__ import annotations

import re

STATEMENT_SPLIT = re.compile(r";\s*(?:--[^\n]*)?\n")

FACT_COLS = ("id, text, category, importance, created_at, access_count, metadata, source, "
              "last_access, superseded_by, flags")
# "+agent_id" keeps SQLite off the (agent_id, ...) indexes where a rowid range or an id is
# the selective part: without statistics the planner takes agent_id = ? for ~10 rows, then
# reads (and sorts) every fact of the agent for each page, each push and each id lookup.
PAGE_AS_ROWS = (f"SELECT rowid, {FACT_COLS} FROM cold_memories WHERE +agent_id = ? AND "
                 "rowid > ? ORDER BY rowid LIMIT ?")
PAGE_AS_JSON = f"SELECT json_group_array(json_array(rowid, {FACT_COLS})) FROM ({PAGE_AS_ROWS})"
# A row's created_at bucket as the device computes it (LocalStore.settled_buckets): whole
# seconds (the original skill wrote milliseconds in places, see cloud_seconds) divided by the
# bucket width, both in SQLite's integer division. One "?" for the width.
BUCKET = ("CAST(CASE WHEN created_at > 1000000000000 THEN created_at / 1000 ELSE created_at "
           "END AS INTEGER) / ?")
# Upsert by id. A fact's text never changes, but its sealed form does after a key rotation, and
# its category after a tree merge; counters and supersession only move forwards.
UPSERT_ROWS = 50           # facts per INSERT statement (13 values each, well under SQLite's cap)
ROW = "(" + ", ".join("?" * 13) + ")"
UPSERT_FACTS = (
    "INSERT INTO cold_memories (id, agent_id, text, category, importance, created_at, "
    "access_count, metadata, source, last_access, superseded_by, device_id, flags) "
    "SELECT * FROM (VALUES {rows}) WHERE NOT EXISTS ({guard}) "
    # A forgotten fact stays forgotten: a device that has not pulled the tombstone yet (or
    # replays an old push) cannot upsert it back. One "?" for the agent id, after the guard's.
    "AND NOT EXISTS (SELECT 1 FROM cold_tombstones t WHERE t.agent_id = ? AND t.id = column1) "
    "ON CONFLICT(id) DO UPDATE SET category = excluded.category, text = excluded.text, "
    "metadata = excluded.metadata, importance = excluded.importance, "
    "created_at = excluded.created_at, flags = excluded.flags, "
    "access_count = max(cold_memories.access_count, excluded.access_count), "
    "last_access = max(coalesce(cold_memories.last_access, 0), excluded.last_access), "
    "superseded_by = coalesce(excluded.superseded_by, cold_memories.superseded_by) "
    # A sealed row authenticates importance, created_at and superseded_by (enc:v2), so they
    # change together with the sealed values; a device that has not seen a supersession
    # leaves the superseded row as it is rather than pair its values with the old link.
    "WHERE cold_memories.agent_id = excluded.agent_id AND "
    "(excluded.superseded_by IS NOT NULL OR cold_memories.superseded_by IS NULL)")
# The owner's forget (SPEC §5b), inside the push transaction: the tombstone first, then the
# row. "?" order: agent_id, deleted_at, device_id, ids (a JSON array), then the revoked guard.
TOMBSTONE_IDS = ("INSERT OR IGNORE INTO cold_tombstones (agent_id, id, deleted_at, device_id) "
                 "SELECT ?, value, ?, ? FROM json_each(?) WHERE NOT EXISTS ({guard})")
DELETE_FORGOTTEN = ("DELETE FROM cold_memories WHERE agent_id = ? AND id IN "
                    "(SELECT value FROM json_each(?)) AND NOT EXISTS ({guard})")
# unsupersede: an upsert only ever sets the link, so clearing it is its own statement (the
# row's sealed values are rewritten by the upsert of the same push).
CLEAR_SUPERSEDED = ("UPDATE cold_memories SET superseded_by = NULL WHERE agent_id = ? AND id IN "
                    "(SELECT value FROM json_each(?)) AND NOT EXISTS ({guard})")
PULL_TOMBSTONES = ("SELECT rowid, id FROM cold_tombstones WHERE +agent_id = ? AND rowid > ? "
                   "AND (device_id IS NULL OR device_id != ?) ORDER BY rowid LIMIT ?")
