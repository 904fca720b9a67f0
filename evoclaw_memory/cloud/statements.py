"""The SQL a SqlRemote sends that is more than one line: shared by its methods (and tests).

Plain strings, no I/O; the schema itself is in schema/cloud/*.sql.
"""

from __future__ import annotations

import re

STATEMENT_SPLIT = re.compile(r";\s*(?:--[^\n]*)?\n")

FACT_COLS = ("id, text, category, importance, created_at, access_count, metadata, source, "
              "last_access, superseded_by")
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
UPSERT_ROWS = 50           # facts per INSERT statement (12 values each, well under SQLite's cap)
ROW = "(" + ", ".join("?" * 12) + ")"
UPSERT_FACTS = (
    "INSERT INTO cold_memories (id, agent_id, text, category, importance, created_at, "
    "access_count, metadata, source, last_access, superseded_by, device_id) "
    "SELECT * FROM (VALUES {rows}) WHERE NOT EXISTS ({guard}) "
    "ON CONFLICT(id) DO UPDATE SET category = excluded.category, text = excluded.text, "
    "metadata = excluded.metadata, importance = excluded.importance, "
    "created_at = excluded.created_at, "
    "access_count = max(cold_memories.access_count, excluded.access_count), "
    "last_access = max(coalesce(cold_memories.last_access, 0), excluded.last_access), "
    "superseded_by = coalesce(excluded.superseded_by, cold_memories.superseded_by) "
    # A sealed row authenticates importance, created_at and superseded_by (enc:v2), so they
    # change together with the sealed values; a device that has not seen a supersession
    # leaves the superseded row as it is rather than pair its values with the old link.
    "WHERE cold_memories.agent_id = excluded.agent_id AND "
    "(excluded.superseded_by IS NOT NULL OR cold_memories.superseded_by IS NULL)")
