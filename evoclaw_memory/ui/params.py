"""Reading the page's query and form fields: bad input is one clear ValidationError (the
page shows it with status 400), never a guess."""

from __future__ import annotations

import datetime as dt
from typing import Any, Optional

from evoclaw_memory.errors import ValidationError
from evoclaw_memory.ui.queries import FactFilter

YES, NO = ("1", "yes", "true", "on"), ("0", "no", "false", "off")
PAGE_MAX = 1_000_000


def flag(name: str, value: str) -> Optional[bool]:
    """'' (any), yes or no."""
    value = value.lower()
    if not value or value == "any":
        return None
    if value in YES:
        return True
    if value in NO:
        return False
    raise ValidationError(f"{name} must be yes or no, not {value[:40]!r}")


def when(name: str, value: str) -> Optional[float]:
    """An ISO 8601 date or date-time (UTC when no zone is given) or epoch seconds."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        if len(value) == 10:
            day = dt.date.fromisoformat(value)
            return dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp()
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"{name} must be a date like 2025-11-30, not {value[:40]!r}") \
            from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


def page(value: str) -> int:
    if not value:
        return 1
    if not value.isdigit() or not 1 <= int(value) <= PAGE_MAX:
        raise ValidationError(f"page must be a number from 1 to {PAGE_MAX}, not {value[:20]!r}")
    return int(value)


def fact_filter(arg: Any) -> FactFilter:
    """The facts page's filters from `arg(name)` (View.arg)."""
    from evoclaw_memory.tiers import tree as tree_rules
    category = arg("category")
    tier = arg("tier").lower()
    if tier not in ("", "any", "warm", "cold"):
        raise ValidationError(f"tier must be warm or cold, not {tier[:20]!r}")
    return FactFilter(category=tree_rules.validate_path(category) if category else None,
                      tier=tier if tier in ("warm", "cold") else None,
                      pinned=flag("pinned", arg("pinned")), private=flag("private", arg("private")),
                      since=when("since", arg("since")), until=when("until", arg("until")))


def lines(value: str) -> list[str]:
    """A textarea's non-empty lines (one URL, command or path per line)."""
    return [line.strip() for line in value.splitlines() if line.strip()]
