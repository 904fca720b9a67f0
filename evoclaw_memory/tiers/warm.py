"""Warm memory rules (SPEC §1): fact size, eviction plan. Pure functions.

Evicted facts are archived to cold by the caller, never dropped.
"""

from __future__ import annotations

from typing import Iterable

import msgspec

from evoclaw_memory.limits import TIER_WARM
from evoclaw_memory.models import Metadata
from evoclaw_memory.tiers.scoring import age_days, score

_encoder = msgspec.json.Encoder()


def fact_size(text: str, metadata: Metadata) -> int:
    """Bytes a fact counts against the warm cap: its text plus its metadata."""
    extra = 0 if metadata.is_empty() else len(_encoder.encode(metadata))
    return len(text.encode()) + extra


def eviction_plan(warm_rows: Iterable[tuple[str, float, float, int, int, str]], now: float, *,
                  max_bytes: int, retention_days: float, decay_days: float,
                  access_boost: float) -> list[str]:
    """Ids of warm facts to archive: old and weak ones, then the weakest until under the cap.

    `warm_rows` are (id, importance, created_at, access_count, size, category).
    """
    scored = []
    evict: list[str] = []
    total = 0
    for fact_id, importance, created_at, access_count, size, _ in warm_rows:
        value = score(importance, created_at, access_count, now, decay_days, access_boost)
        if age_days(created_at, now) > retention_days and value < TIER_WARM:
            evict.append(fact_id)
        else:
            scored.append((value, created_at, fact_id, size))
            total += size
    if total > max_bytes:
        for _value, _, fact_id, size in sorted(scored):
            if total <= max_bytes:
                break
            evict.append(fact_id)
            total -= size
    return evict


def belongs_in_cold(importance: float, created_at: float, access_count: int, now: float, *,
                    retention_days: float, decay_days: float, access_boost: float) -> bool:
    """True for a fact that would be evicted the moment it is stored (an old, weak fact)."""
    return (age_days(created_at, now) > retention_days
            and score(importance, created_at, access_count, now, decay_days, access_boost)
            < TIER_WARM)
