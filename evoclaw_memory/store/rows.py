"""The facts table's columns and their codecs, shared by every part of the store."""

from __future__ import annotations

import functools
from typing import Any, Optional

import msgspec

from evoclaw_memory.models import Fact, HotState, Metadata

FACT_COLUMNS = ("id, text, category, importance, created_at, last_access, access_count, "
                "metadata, source, tier, superseded_by")
# Read after FACT_COLUMNS where a Fact must say whether it is pinned or private; kept apart
# so the rows that ranking slices by position (retrieval) keep their layout.
FLAG_COLUMNS = ("pinned, private, changed_at, content_changed_at, flags_changed_at, speaker, "
                "superseded_changed_at")
FACT_AND_FLAGS = f"{FACT_COLUMNS}, {FLAG_COLUMNS}"
_metadata_decoder = msgspec.json.Decoder(Metadata)


def facts_where(*, category: Optional[str] = None, tier: Optional[str] = None,
                pinned: Optional[bool] = None, private: Optional[bool] = None,
                since: Optional[float] = None, until: Optional[float] = None,
                include_superseded: bool = False) -> tuple[str, list[Any]]:
    """The WHERE clause ("" for none) and its arguments of a filtered read of `facts`, for
    the owner's listings (`list`, the window's facts page): a category with its subtree,
    tier, pinned, private, created at or after `since` and before `until`.

    Warm is small (its byte cap keeps it to hundreds of facts): the (tier, category) index
    finds it. Cold is nearly everything: through that index SQLite would sort 100k rows to
    give one page in stored order (130 ms), so `+tier` keeps the read on the primary key,
    which stops after one page."""
    where, args = [], []
    if category:
        where.append("(category = ? OR substr(category, 1, ?) = ?)")
        args += [category, len(category) + 1, category + "/"]
    if tier:
        where.append("tier = ?" if tier == "warm" else "+tier = ?")
        args.append(tier)
    for column, value in (("pinned", pinned), ("private", private)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(int(value))
    if since is not None:
        where.append("created_at >= ?")
        args.append(since)
    if until is not None:
        where.append("created_at < ?")
        args.append(until)
    if not include_superseded:
        where.append("superseded_by IS NULL")
    return " AND ".join(where), args


encoder = msgspec.json.Encoder()


@functools.cache
def hot_decoder() -> "msgspec.json.Decoder[HotState]":
    """The hot state's decoder, built on first use (~1.5 ms: its nested Structs' type info),
    which `store` and `retrieve` runs never need."""
    return msgspec.json.Decoder(HotState)


def fact_from_row(row: tuple) -> Fact:
    """A Fact from the FACT_COLUMNS (optionally followed by the FLAG_COLUMNS) of one row."""
    flags = row[11:18]
    return Fact(id=row[0], text=row[1], category=row[2], importance=row[3],
                created_at=row[4], last_access=row[5], access_count=row[6],
                metadata=_metadata_decoder.decode(row[7]), source=row[8], tier=row[9],
                superseded_by=row[10], pinned=bool(flags and flags[0]),
                private=bool(len(flags) > 1 and flags[1]),
                changed_at=float(flags[2]) if len(flags) > 2 and flags[2] else 0.0,
                content_changed_at=float(flags[3]) if len(flags) > 3 and flags[3] else 0.0,
                flags_changed_at=float(flags[4]) if len(flags) > 4 and flags[4] else 0.0,
                speaker=flags[5] if len(flags) > 5 else None,
                superseded_changed_at=float(flags[6]) if len(flags) > 6 and flags[6] else 0.0)
