"""The read-only SQL behind the pages: the facts list, the counts, the weekly series.

Reads only, on the memory's own connection (the caller holds the page's lock). Written for
100k facts in well under 200 ms: the list walks the primary key backwards (newest stored
first) and stops after one page, the counts come from the tree's per-node counters and the
partial index of pinned facts, the weekly series are one grouped pass over a bounded range.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Optional

from evoclaw_memory.models import Fact
from evoclaw_memory.store.rows import FACT_AND_FLAGS, fact_from_row, facts_where

PER_PAGE = 50
WEEK = 7 * 86_400
MONDAY = 4 * 86_400          # 1970-01-05 was a Monday: weeks start Monday 00:00 UTC
ARCHIVE_OPS = ("evict.consolidate", "evict.cap")   # warm facts moved to the cold archive


@dataclass
class FactFilter:
    """The facts page's filters (None: any)."""

    category: Optional[str] = None
    tier: Optional[str] = None
    pinned: Optional[bool] = None
    private: Optional[bool] = None
    since: Optional[float] = None     # created at or after (epoch seconds)
    until: Optional[float] = None     # created before

    def where(self) -> tuple[str, list[Any]]:
        """The live facts this filter keeps, as the store's listings filter (rows.facts_where)."""
        return facts_where(category=self.category, tier=self.tier, pinned=self.pinned,
                           private=self.private, since=self.since, until=self.until)

    def keeps(self, fact: Fact) -> bool:
        """The same filter applied to one fact (search results are filtered this way)."""
        c = self.category
        return (fact.superseded_by is None
                and (not c or fact.category == c or fact.category.startswith(c + "/"))
                and (self.tier is None or fact.tier == self.tier)
                and (self.pinned is None or fact.pinned == self.pinned)
                and (self.private is None or fact.private == self.private)
                and (self.since is None or fact.created_at >= self.since)
                and (self.until is None or fact.created_at < self.until))


def facts_page(conn: Any, flt: FactFilter, page: int,
               per_page: int = PER_PAGE) -> tuple[list[Fact], bool]:
    """One page of live facts, newest stored first, and whether another page follows.

    Reads one row more than the page instead of counting every match: the walk down the
    primary key stops as soon as the page is full."""
    clause, args = flt.where()
    rows = conn.execute(f"SELECT {FACT_AND_FLAGS} FROM facts WHERE {clause} "
                        "ORDER BY rowid DESC LIMIT ? OFFSET ?",
                        (*args, per_page + 1, (page - 1) * per_page)).fetchall()
    return [fact_from_row(r) for r in rows[:per_page]], len(rows) > per_page


def tier_counts(store: Any) -> dict[str, int]:
    """Live facts per tier (from the tree's counters, kept true by every write), pinned
    ones (a partial index) and everything stored, superseded versions included."""
    warm = cold = 0
    for node in store.tree_nodes():
        warm += node.warm_count
        cold += node.cold_count
    conn = store.conn
    pinned = conn.execute("SELECT COUNT(*) FROM facts WHERE pinned = 1").fetchone()[0]
    total = conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0]
    return {"warm": warm, "cold": cold, "pinned": pinned, "stored": total,
            "superseded": max(0, total - warm - cold)}


def week_start(ts: float) -> int:
    """The Monday 00:00 UTC that starts the week holding `ts`."""
    return int((ts - MONDAY) // WEEK * WEEK + MONDAY)


def weekly(conn: Any, sql: str, args: tuple, now: float, weeks: int) -> list[tuple[str, int]]:
    """(week label, count) for the last `weeks` weeks, oldest first, zeros included; `sql`
    selects one epoch time per row from `args` plus the first week's start."""
    first = week_start(now) - (weeks - 1) * WEEK
    counts: dict[int, int] = {}
    for index, n in conn.execute(
            f"SELECT CAST((t - {MONDAY}) / {WEEK} AS INTEGER), COUNT(*) FROM ({sql}) "
            "GROUP BY 1", (*args, first)):
        counts[int(index)] = n
    out = []
    for k in range(weeks):
        start = first + k * WEEK
        label = dt.datetime.fromtimestamp(start, dt.timezone.utc).strftime("%d %b")
        out.append((label, counts.get((start - MONDAY) // WEEK, 0)))
    return out


def stored_per_week(conn: Any, now: float, weeks: int = 26) -> list[tuple[str, int]]:
    """Facts created per week (superseded versions included: they were stored)."""
    return weekly(conn, "SELECT created_at AS t FROM facts WHERE created_at >= ?", (), now, weeks)


def archived_per_week(conn: Any, now: float, weeks: int = 26) -> list[tuple[str, int]]:
    """Warm facts moved to the cold archive per week (consolidation, and the warm cap)."""
    marks = ", ".join("?" * len(ARCHIVE_OPS))
    return weekly(conn, f"SELECT ts AS t FROM audit WHERE op IN ({marks}) AND ts >= ?",
                  ARCHIVE_OPS, now, weeks)
