"""The facts table's columns and their codecs, shared by every part of the store."""

from __future__ import annotations

import functools

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
