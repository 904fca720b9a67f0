"""LoCoMo dev through the product's real path (issue 13): sessions -> end_conversation -> retrieve.

    python -m bench.locomo_dev [--limit 5] [--data DIR]

Two ways side by side, in the same run (see ../shared/eval/locomo-dev/README.md):
  turns     every turn stored with remember("Speaker: text", created_at=session time)
  lifecycle each session given to end_conversation(messages, at=session time, sync=False),
            OpenAI-style messages with the speaker's name in `name`
  relinked  (--way relinked) lifecycle, then every entity link dropped and rebuilt from the
            stored facts: what a restored device, one that pulls the facts, or the linking
            catch-up has (the speaker comes from the fact's stored speaker, issue 13)

Gold for the lifecycle way: "a top-5 fact was made from an evidence turn". There is no
free-form metadata field to carry a dia_id, so a fact is traced back to its turn by text:
a fact came from a turn when at least half of the fact's content words (tokens of 3+
letters, the speaker's name and resolved date words left out, as distillation adds those)
are words of that turn, and the turn is in the same session (its created_at is the
session's time). Answer-in-top-5 (category 2, temporal): the gold answer's date
expression ("7 May 2023", "May 2023", "2022") appears in a top-5 fact's text.

Evidence ids malformed in the release are repaired where unambiguous ("D:11:26" ->
"D11:26", "D30:05" -> "D30:5"); a list in one string ("D8:6; D9:17") is split. Ids that
name no turn are skipped (counted in the report). Categories 1-4 only (5 is adversarial).
No LLM anywhere; nothing here runs in the test suite.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo-dev"
if not DATA.exists():
    DATA = Path("/work/shared/eval/locomo-dev")
CATEGORIES = (1, 2, 3, 4)
_WORD_RE = re.compile(r"[a-z][a-z']{2,}")
_MONTHS = ("january february march april may june july august september october november "
           "december").split()
_DATE_WORDS = set(_MONTHS) | {"on", "around", "week", "weekend", "month", "year", "of", "the"}
_ANSWER_DATE_RE = re.compile(
    r"\b(\d{1,2}\s+(?:%s)\s*,?\s*\d{4}|(?:%s)\s*,?\s*\d{4}|\d{4})\b" % ("|".join(_MONTHS), "|".join(_MONTHS)),
    re.I)


def session_time(raw: str) -> float:
    """"1:56 pm on 8 May, 2023" -> epoch seconds (UTC)."""
    return dt.datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(
        tzinfo=dt.timezone.utc).timestamp()


def load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    sessions = []
    n = 1
    while f"session_{n}" in data:
        turns = data[f"session_{n}"]
        if turns:
            sessions.append((session_time(data[f"session_{n}_date_time"]), turns))
        n += 1
    return {"name": path.stem, "a": data["speaker_a"], "b": data["speaker_b"],
            "sessions": sessions, "qa": data["qa"]}


def turn_text(turn: dict) -> str:
    # An image shared in a turn is part of what was said (its caption is the text we have).
    text = turn["text"]
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def evidence_ids(raw: list, turn_ids: set[str]) -> tuple[list[str], int]:
    out, skipped = [], 0
    for item in raw:
        for part in re.split(r"[;,]\s*", str(item)):
            part = part.strip().replace("D:", "D")
            m = re.fullmatch(r"D(\d+):0*(\d+)", part)
            fixed = f"D{m.group(1)}:{m.group(2)}" if m else part
            if fixed in turn_ids:
                out.append(fixed)
            else:
                skipped += 1
    return out, skipped


def _words(text: str) -> set[str]:
    return set(_WORD_RE.findall(text.lower().replace("’", "'")))


def messages_of(conv: dict, turns: list[dict]) -> list[dict]:
    # The first speaker plays the user (the owner), the other the assistant; both have names.
    return [{"role": "user" if t["speaker"] == conv["a"] else "assistant", "name": t["speaker"],
             "content": turn_text(t)} for t in turns]


def _answer_dates(answer: Any) -> list[str]:
    found = [" ".join(m.replace(",", " ").split()).lower() for m in _ANSWER_DATE_RE.findall(str(answer))]
    return found or [str(answer).lower().strip()]


def run(limit: int = 5, data: Path = DATA, ways: tuple[str, ...] = ("turns", "lifecycle")) -> dict:
    from evoclaw_memory.memory import Memory
    results: dict[str, dict] = {}
    for way in ways:
        per_cat: dict[int, list[float]] = {c: [] for c in CATEGORIES}
        temporal_hits: list[int] = []
        skipped = 0
        facts_total = 0
        turned_into_fact = [0, 0]
        for path in sorted(data.glob("*.json")):
            conv = load(path)
            by_id = {t["dia_id"]: (when, t) for when, turns in conv["sessions"] for t in turns}
            with tempfile.TemporaryDirectory() as home:
                mem = Memory.open(agent_id="locomo", home=home)
                mem.config.llm_base_url = ""
                for when, turns in conv["sessions"]:
                    if way == "turns":
                        for t in turns:
                            mem.remember(f"{t['speaker']}: {turn_text(t)}", created_at=when)
                    else:
                        _end(mem, messages_of(conv, turns), when)
                if way == "relinked":
                    _relink(mem)
                facts = list(mem.store.iter_facts(live_only=True))
                facts_total += len(facts)
                origin = _origin_index(conv, facts)
                turned_into_fact[0] += len({d for ids in origin.values() for d in ids})
                turned_into_fact[1] += len(by_id)
                for qa in conv["qa"]:
                    cat = qa.get("category")
                    if cat not in CATEGORIES:
                        continue
                    gold, bad = evidence_ids(qa.get("evidence", []), set(by_id))
                    skipped += bad
                    if not gold:
                        continue
                    hits = mem.retrieve(qa["question"], limit=limit)
                    found = set()
                    for hit in hits:
                        fact = hit.fact
                        if way == "turns":
                            found |= {d for d in gold if fact.text.endswith(turn_text(by_id[d][1]))}
                        else:
                            found |= set(gold) & origin.get(fact.id, set())
                    per_cat[cat].append(len(found) / len(gold))
                    if cat == 2:
                        texts = " | ".join(" ".join(h.fact.text.replace(",", " ").split()).lower() for h in hits)
                        temporal_hits.append(int(any(d in texts for d in _answer_dates(qa.get("answer")))))
                mem.close()
        all_scores = [s for c in CATEGORIES for s in per_cat[c]]
        results[way] = {
            "recall": round(sum(all_scores) / max(1, len(all_scores)), 3),
            "per_category": {c: round(sum(v) / max(1, len(v)), 3) for c, v in per_cat.items()},
            "temporal_answer_in_top": round(sum(temporal_hits) / max(1, len(temporal_hits)), 3),
            "questions": len(all_scores), "skipped_evidence_ids": skipped, "facts": facts_total,
            "turns_with_a_fact": round(turned_into_fact[0] / max(1, turned_into_fact[1]), 3),
        }
    if "turns" in results and "lifecycle" in results:
        results["ratio"] = round(results["lifecycle"]["recall"] / max(1e-9, results["turns"]["recall"]), 3)
    return results


def _relink(mem: Any) -> None:
    """Drop the entity links and rebuild them from the stored facts (as a new device does)."""
    with mem.store.transaction():
        mem.store.conn.execute("DELETE FROM entity_facts")
        mem.store.set_setting("entities.linked_rowid", "0")
    mem.link_new_facts(None)


def _end(mem: Any, messages: list[dict], when: float) -> None:
    try:
        mem.end_conversation(messages, at=when, sync=False, consolidate=False)
    except TypeError:          # the code before issue 13 had no `at` (the "before" run)
        mem.end_conversation(messages, sync=False, consolidate=False)


def _origin_index(conv: dict, facts: list) -> dict[str, set[str]]:
    """fact id -> the dia_ids it was made from (see the module docstring)."""
    names = {conv["a"].lower(), conv["b"].lower(), "assistant", "user"}
    by_time: dict[float, list[tuple[str, set[str]]]] = {}
    for when, turns in conv["sessions"]:
        by_time[when] = [(t["dia_id"], _words(turn_text(t))) for t in turns]
    origin: dict[str, set[str]] = {}
    for fact in facts:
        words = _words(fact.text) - names - _DATE_WORDS
        if not words:
            continue
        candidates = by_time.get(fact.created_at)
        if candidates is None:    # created_at not a session time: look in every session
            candidates = [c for turns in by_time.values() for c in turns]
        scored = [(len(words & tw) / len(words), d) for d, tw in candidates]
        best = max((s for s, _ in scored), default=0)
        if best >= 0.5:
            origin[fact.id] = {d for s, d in scored if s == best}
    return origin


def evidence_recall_lifecycle(limit: int = 5, data: Optional[Path] = None) -> dict:
    """Lifecycle evidence recall@limit and temporal answer-in-top beside turns-as-facts."""
    return run(limit, data or DATA)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--way", choices=("turns", "lifecycle", "relinked", "both"), default="both")
    args = parser.parse_args(argv)
    ways = ("turns", "lifecycle") if args.way == "both" else (args.way,)
    print(json.dumps(run(args.limit, args.data, ways), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
