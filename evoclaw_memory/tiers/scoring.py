"""Decay scoring and tiers (SPEC §1): pure functions, no I/O."""

from __future__ import annotations

import math

from evoclaw_memory.limits import TIER_COLD, TIER_HOT, TIER_WARM

SECONDS_PER_DAY = 86_400.0


def score(importance: float, created_at: float, access_count: int, now: float,
          decay_days: float = 30.0, access_boost: float = 0.1, pinned: bool = False) -> float:
    """importance × exp(-age_days / decay_days) × (1 + access_boost × access_count); a
    pinned fact (the vault) never decays, so its age does not count."""
    age_days = 0.0 if pinned else max(0.0, (now - created_at) / SECONDS_PER_DAY)
    return importance * math.exp(-age_days / decay_days) * (1.0 + access_boost * access_count)


def tier_of(value: float) -> str:
    """The tier a score puts a fact in: hot (candidate), warm, cold or frozen."""
    if value >= TIER_HOT:
        return "hot"
    if value >= TIER_WARM:
        return "warm"
    if value >= TIER_COLD:
        return "cold"
    return "frozen"


def age_days(created_at: float, now: float) -> float:
    """Age in days, never negative (clocks on small devices drift)."""
    return max(0.0, (now - created_at) / SECONDS_PER_DAY)
