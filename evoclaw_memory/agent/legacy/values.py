"""Pure parsing of legacy values: times, importance, categories, texts, ids, links."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from typing import Any, Iterable, Optional

from evoclaw_memory.errors import ValidationError
from evoclaw_memory.limits import TREE_MAX_DEPTH
from evoclaw_memory.models import Metadata
from evoclaw_memory.tiers import tree as tree_rules

TEXT_KEYS = ("text", "content", "fact", "memory", "summary", "value")


def parse_time(value: Any, now: float) -> Optional[float]:
    """Epoch seconds from epoch s/ms (number or numeric text) or ISO 8601; None if empty.

    Naive ISO times are local time (the skill wrote datetime.now().isoformat()); a time in
    the future becomes now. ValueError when unreadable."""
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"not a time: {text[:40]!r}") from None
            value = stamp.timestamp()          # naive -> local time
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"not a time: {value!r}")
    seconds = float(value) / 1000.0 if value > 1e11 else float(value)   # ms after ~5138 AD
    return min(seconds, now) if seconds else None


def parse_importance(value: Any) -> float:
    """0..1, accepting a 0-10 scale and numeric text; ValueError otherwise."""
    if value is None:
        return 0.5
    if isinstance(value, bool):
        raise ValueError(f"importance {value!r} is not a number")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"importance {value[:20]!r} is not a number") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"importance {value!r} is not a number from 0 to 1")
    if value > 1:
        if value <= 10:
            return round(value / 10.0, 4)
        raise ValueError(f"importance {value!r} is outside 0-1 (and 0-10)")
    return float(value)


def normalize_category(raw: Any) -> str:
    """A valid tree path from a legacy category ('Projects.EvoClaw' -> 'projects/evoclaw')."""
    if not isinstance(raw, str) or not raw.strip():
        return "general"
    text = raw.strip().lower()
    text = re.sub(r"[\\.:>|]+", "/", text)
    text = re.sub(r"\s+", "-", text)
    segments = []
    for seg in text.split("/"):
        seg = re.sub(r"[^\w-]", "", seg, flags=re.UNICODE)
        seg = re.sub(r"^[_-]+", "", seg)[:32]
        if seg:
            segments.append(seg)
    if segments and segments[0] == "root":
        segments = segments[1:]
    if not segments:
        return "general"
    path = "/".join(segments[:TREE_MAX_DEPTH])
    try:
        return tree_rules.validate_path(path)
    except ValidationError:
        return "general"


def first_text(item: dict, keys: Iterable[str] = TEXT_KEYS) -> Optional[str]:
    for key in keys:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def stable_id(kind: str, text: str, given: Any = None) -> str:
    """The legacy entry's own id when sane, else one derived from its text (re-import safe)."""
    if isinstance(given, (str, int)) and not isinstance(given, bool):
        given = str(given).strip()
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}", given):
            return given
    return "lg-" + hashlib.sha1(f"{kind}\0{text}".encode()).hexdigest()[:14]


def trim(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def legacy_metadata(raw: Any) -> Optional[Metadata]:
    if not isinstance(raw, dict):
        return None
    out: dict[str, list[str]] = {"urls": [], "commands": [], "paths": []}
    for field, aliases in (("urls", ("urls", "url", "links", "link")),
                           ("commands", ("commands", "command", "cmds", "cmd")),
                           ("paths", ("paths", "path", "files", "file"))):
        for alias in aliases:
            value = raw.get(alias)
            values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            out[field] += [v.strip() for v in values if isinstance(v, str) and v.strip()]
    if not any(out.values()):
        return None
    return Metadata(urls=out["urls"][:10], commands=out["commands"][:5], paths=out["paths"][:10])
