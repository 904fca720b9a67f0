"""LoCoMo dev conversations for the quality area (../shared/eval/locomo-dev/, its README).

Two ways, one store per conversation, beside BM25 over the raw turns:
- turns as facts: every turn stored with `remember("Speaker: text", created_at=session time)`;
  a result is the turn it was made from (retrieval alone);
- through the lifecycle: each session, in order, given to `end_conversation(messages,
  at=session time, sync=False)` as OpenAI-style messages (speaker_a -> role "user", speaker_b
  -> "assistant", the speaker's name in `name`); a result is a distilled fact, credited to
  the evidence turns it was made from by the overlap rule below (`credited_turns`).

The device clock is simulated: while session k is stored it reads session k's time, and the
questions are asked one day after the last session (as an agent would be asked later).
Questions of categories 1-4 with at least one valid evidence turn are scored; category 5
(adversarial, no `answer`) is not.
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import os
import re
import string
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .util import ROOT, Workspace, log, memory

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
QUICK_FILES = ("26.json", "30.json")      # --quick: the two shortest-to-load conversations
DAY = 86_400.0


def dev_dir() -> Path:
    env = os.environ.get("EVOCLAW_LOCOMO_DEV")
    path = Path(env) if env else ROOT.parent / "shared" / "eval" / "locomo-dev"
    if not path.is_dir():
        raise FileNotFoundError(f"the LoCoMo dev set is missing: looked for {path} (set "
                                "EVOCLAW_LOCOMO_DEV to the folder holding 26.json ...)")
    return path


# -- the data ---------------------------------------------------------------------------------

@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int

    @property
    def as_fact(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass
class Session:
    index: int
    at: float                      # epoch seconds (UTC) of session_N_date_time
    turns: list[Turn]


@dataclass
class Question:
    question: str
    answer: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    name: str
    speakers: tuple[str, str]
    sessions: list[Session]
    questions: list[Question]
    repaired: list[str] = field(default_factory=list)     # "raw -> fixed"
    skipped: list[str] = field(default_factory=list)      # evidence ids that name no turn
    unscorable: int = 0                                   # cat 1-4 questions left with no evidence

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]


def parse_time(text: str) -> float:
    """'1:56 pm on 8 May, 2023' -> epoch seconds (read as UTC)."""
    stamp = dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return stamp.replace(tzinfo=dt.timezone.utc).timestamp()


_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


def _evidence(raw: list[str], turn_ids: set[str], conv: Conversation) -> list[str]:
    """Valid evidence ids: split 'D8:6; D9:17', repair 'D:11:26' / 'D30:05'; skip the rest."""
    out: list[str] = []
    for item in raw:
        fixed_here = []
        for part in re.split(r"[;,\s]+", str(item).strip()):
            if not part:
                continue
            m = _EVIDENCE.fullmatch(part)
            fixed = f"D{m.group(1)}:{m.group(2)}" if m else part
            if fixed in turn_ids:
                fixed_here.append(fixed)
                if fixed not in out:
                    out.append(fixed)
            else:
                conv.skipped.append(part)
        if fixed_here and fixed_here != [item]:
            conv.repaired.append(f"{item} -> {', '.join(fixed_here)}")
    return out


def load(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    for key, value in data.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(value, list) and value:
            k = int(m.group(1))
            turns = [Turn(t["dia_id"], t["speaker"], t["text"], k) for t in value
                     if str(t.get("text") or "").strip()]
            sessions.append(Session(k, parse_time(data[f"session_{k}_date_time"]), turns))
    sessions.sort(key=lambda s: s.at)
    conv = Conversation(path.stem, (data["speaker_a"], data["speaker_b"]), sessions, [])
    turn_ids = {t.dia_id for t in conv.turns}
    for qa in data["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = _evidence(qa.get("evidence") or [], turn_ids, conv)
        if not evidence:
            conv.unscorable += 1
            continue
        conv.questions.append(Question(qa["question"], str(qa.get("answer", "")), evidence,
                                       qa["category"]))
    return conv


def conversations(quick: bool) -> list[Conversation]:
    files = sorted(dev_dir().glob("*.json"))
    if quick:
        files = [f for f in files if f.name in QUICK_FILES] or files[:2]
    return [load(f) for f in files]


# -- evidence matching (fixed here, so the rule is the same before and after any change) ------

_STOP = frozenset("""
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing done down during each few for from further
get got had has have having he her here hers herself him himself his how i if in into is it its
itself just let me more most my myself no nor not now of off on once only or other our ours
ourselves out over own really same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up us very was we were
what when where which while who whom why will with would you your yours yourself yourselves
im ive id ill youre youve youll hes shes its were theyre weve thats whats theres dont doesnt
didnt isnt wasnt arent cant couldnt wont wouldnt shouldnt oh yeah yes hey hi wow ok okay so
much many lot lots thing things something anything one like know think well still even way
""".split())
# Words a distiller may add to a turn's words when it rewrites it into a fact (the speaker's
# name, a resolved date): they do not count for or against a match.
_DATE_WORDS = frozenset("""
january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
saturday sunday yesterday today tomorrow tonight last next week weekend month year ago
""".split())
_TABLE = str.maketrans({"'": "", "\u2019": ""})


def _stem(word: str) -> str:
    for suffix, keep in (("ing", 4), ("ed", 3), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """Lower-case word tokens, apostrophes dropped, stop words out, a light suffix strip."""
    words = re.findall(r"[a-z0-9]+", text.lower().translate(_TABLE))
    return {_stem(w) for w in words if w not in _STOP and len(w) > 1}


MATCH_SHARE = 0.5     # share of the fact's counted words that the turn must hold
MATCH_MIN = 2         # ... and at least this many (or all of them, for a 1-word fact)


def credited_turns(fact_text: str, turns: list[Turn], speakers: tuple[str, str]) -> set[str]:
    """The turns (of the session the fact came from) a fact is credited to.

    The fact's counted words are its content words minus the speakers' names, numbers and
    date words (a distiller adds those when it says who and resolves "yesterday"). A turn
    qualifies when it holds >= MATCH_SHARE of them and at least MATCH_MIN (or all, when only
    one is counted); the fact is credited to the qualifying turn(s) holding the most."""
    names = {_stem(w) for s in speakers for w in content_words(s)}
    counted = {w for w in content_words(fact_text)
               if w not in names and w not in _DATE_WORDS and not w.isdigit()}
    if not counted:
        return set()
    need = min(MATCH_MIN, len(counted))
    best, found = 0, set()
    for t in turns:
        shared = len(counted & content_words(t.text))
        if shared < need or shared < MATCH_SHARE * len(counted):
            continue
        if shared > best:
            best, found = shared, {t.dia_id}
        elif shared == best:
            found.add(t.dia_id)
    return found


# -- answers ----------------------------------------------------------------------------------

_PUNCT = str.maketrans({c: " " for c in string.punctuation + "\u2019\u2018\u201c\u201d"})


def normalise(text: str) -> str:
    """SQuAD-style: lower case, punctuation to spaces, articles out, spaces collapsed."""
    words = text.lower().translate(_PUNCT).split()
    return " ".join(w for w in words if w not in ("a", "an", "the"))


def answer_in(answer: str, texts: list[str]) -> bool:
    gold = normalise(answer)
    return bool(gold) and any(f" {gold} " in f" {normalise(t)} " for t in texts)


# -- scoring ----------------------------------------------------------------------------------

# One ranked result: (the turns it stands for, its text).
Ranked = list[tuple[set[str], str]]


def score_question(q: Question, ranked: Ranked) -> dict[str, float]:
    gold = set(q.evidence)
    top5 = set().union(*(turns for turns, _ in ranked[:5])) if ranked else set()
    recall5 = len(gold & top5) / len(gold)
    mrr = next((1 / (i + 1) for i, (turns, _) in enumerate(ranked[:10]) if turns & gold), 0.0)
    return {"recall5": recall5, "hit5": float(bool(gold & top5)), "mrr10": mrr,
            "answer5": float(answer_in(q.answer, [text for _, text in ranked[:5]]))}


def summarise(rows: list[tuple[int, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Means per category (1-4) and overall."""
    out: dict[str, dict[str, float]] = {}
    groups: dict[str, list[dict[str, float]]] = {"overall": [r for _, r in rows]}
    for cat in CATEGORIES:
        groups[str(cat)] = [r for c, r in rows if c == cat]
    for key, items in groups.items():
        if not items:
            continue
        out[key] = {"n": len(items), **{m: sum(r[m] for r in items) / len(items)
                                        for m in ("recall5", "hit5", "mrr10", "answer5")}}
    return out


# -- the systems ------------------------------------------------------------------------------

class SimClock:
    """The device's clock, set by the bench (sessions happen at their own times)."""

    def __init__(self, t: float):
        self.t = t

    def __call__(self) -> float:
        return self.t


def _bm25(conv: Conversation) -> list[Ranked]:
    import numpy as np
    from rank_bm25 import BM25Okapi
    turns = conv.turns
    bm25 = BM25Okapi([re.findall(r"\w+", t.as_fact.lower()) for t in turns])
    out = []
    for q in conv.questions:
        scores = bm25.get_scores(re.findall(r"\w+", q.question.lower()))
        order = np.argsort(-scores, kind="stable")[:10]
        out.append([({turns[i].dia_id}, turns[i].as_fact) for i in order if scores[i] > 0])
    return out


def _ask(mem: Any, conv: Conversation, credit: Callable[[Any], set[str]]) -> list[Ranked]:
    retriever = mem.retriever()          # does not reinforce: question order cannot matter
    out = []
    for q in conv.questions:
        results = retriever.retrieve(q.question, limit=10, now=mem.clock())
        out.append([(credit(r.fact), r.fact.text) for r in results])
    return out


def _turns_as_facts(ws: Workspace, conv: Conversation) -> tuple[list[Ranked], dict]:
    home = ws.new_home(f"locomo-{conv.name}-turns")
    clock = SimClock(conv.sessions[0].at)
    by_id: dict[str, set[str]] = {}
    merged = 0
    with memory(home, clock=clock) as mem:
        for s in conv.sessions:
            clock.t = s.at
            for t in s.turns:
                fact = mem.remember(t.as_fact, created_at=s.at)
                merged += fact.id in by_id
                by_id.setdefault(fact.id, set()).add(t.dia_id)
        clock.t = conv.sessions[-1].at + DAY
        ranked = _ask(mem, conv, lambda f: by_id.get(f.id, set()))
    # The matching rule applied to the turns themselves: how often it credits a turn's own
    # fact to that turn (a check of the rule, reported beside the lifecycle figures).
    own = sum(t.dia_id in credited_turns(t.as_fact, s.turns, conv.speakers)
              for s in conv.sessions for t in s.turns)
    return ranked, {"facts": len(by_id), "merged_turns": merged,
                    "rule_self_credit": own, "turns": len(conv.turns)}


def at_supported() -> bool:
    from evoclaw_memory import Memory
    return "at" in inspect.signature(Memory.end_conversation).parameters


def _lifecycle(ws: Workspace, conv: Conversation, use_at: bool) -> tuple[list[Ranked], dict]:
    from evoclaw_memory.errors import ValidationError
    home = ws.new_home(f"locomo-{conv.name}-life")
    clock = SimClock(conv.sessions[0].at)
    credit: dict[str, set[str]] = {}
    a, _ = conv.speakers
    stats: dict[str, Any] = {"sessions": len(conv.sessions), "added": 0, "reinforced": 0,
                             "superseded": 0, "modes": {}, "name_refused": None, "seconds": 0.0}
    with_names, at_form = True, "datetime"
    with memory(home, clock=clock) as mem:
        for s in conv.sessions:
            clock.t = s.at
            messages = [{"role": "user" if t.speaker == a else "assistant",
                         "name": t.speaker, "content": t.text} for t in s.turns]
            kw: dict[str, Any] = {"sync": False}
            if use_at:
                kw["at"] = (dt.datetime.fromtimestamp(s.at, dt.timezone.utc)
                            if at_form == "datetime" else s.at)
            began = time.perf_counter()
            try:
                report = mem.end_conversation(messages if with_names else _no_names(messages), **kw)
            except ValidationError as exc:
                if not with_names or "name" not in str(exc):
                    raise
                stats["name_refused"] = str(exc)          # reported; the rest go without names
                with_names = False
                report = mem.end_conversation(_no_names(messages), **kw)
            except TypeError:
                if not use_at or at_form != "datetime":
                    raise
                at_form = "epoch"                         # this build wants epoch seconds
                kw["at"] = s.at
                report = mem.end_conversation(messages if with_names else _no_names(messages), **kw)
            stats["at_form"] = at_form if use_at else None
            stats["seconds"] += time.perf_counter() - began
            stats["modes"][report.get("mode")] = stats["modes"].get(report.get("mode"), 0) + 1
            for key in ("added", "reinforced", "duplicates"):
                for fact in report.get(key) or []:
                    if hasattr(fact, "id"):
                        credit.setdefault(fact.id, set()).update(
                            credited_turns(fact.text, s.turns, conv.speakers))
            stats["added"] += len(report.get("added") or [])
            stats["reinforced"] += report.get("counts", {}).get("reinforced", 0)
            stats["superseded"] += report.get("counts", {}).get("superseded", 0)
        clock.t = conv.sessions[-1].at + DAY
        live = _live_ids(mem)
        ranked = _ask(mem, conv, lambda f: credit.get(f.id, set()))
    kept = {t for fid, turns in credit.items() if live is None or fid in live for t in turns}
    evidence = {e for q in conv.questions for e in q.evidence}
    stats.update({"facts_credited": sum(bool(v) for v in credit.values()),
                  "facts_uncredited": sum(not v for v in credit.values()),
                  "evidence_turns": len(evidence), "evidence_kept": len(evidence & kept),
                  "turns_kept": len(kept), "turns": len(conv.turns)})
    return ranked, stats


def _no_names(messages: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if k != "name"} for m in messages]


def _live_ids(mem: Any) -> Optional[set[str]]:
    """Ids of the facts not superseded (None when this build's store cannot list them)."""
    fn = getattr(mem.store, "iter_facts", None)
    if fn is None or "live_only" not in inspect.signature(fn).parameters:
        return None
    return {f.id for f in fn(live_only=True)}


def run_all(ws: Workspace, quick: bool) -> dict:
    """Every conversation through the three systems; per-category summaries and stats."""
    convs = conversations(quick)
    use_at = at_supported()
    rows: dict[str, list[tuple[int, dict[str, float]]]] = {"bm25": [], "turns": [], "life": []}
    per_conv, seconds = [], {"bm25": 0.0, "turns": 0.0, "life": 0.0}
    for conv in convs:
        t0 = time.perf_counter()
        bm = _bm25(conv)
        t1 = time.perf_counter()
        tf, tf_stats = _turns_as_facts(ws, conv)
        t2 = time.perf_counter()
        lf, lf_stats = _lifecycle(ws, conv, use_at)
        t3 = time.perf_counter()
        seconds["bm25"] += t1 - t0
        seconds["turns"] += t2 - t1
        seconds["life"] += t3 - t2
        for name, ranked in (("bm25", bm), ("turns", tf), ("life", lf)):
            rows[name] += [(q.category, score_question(q, r)) for q, r in zip(conv.questions, ranked)]
        per_conv.append({"conversation": conv.name, "sessions": len(conv.sessions),
                         "turns": len(conv.turns), "questions": len(conv.questions),
                         "unscorable": conv.unscorable, "repaired": conv.repaired,
                         "skipped": conv.skipped, "turns_as_facts": tf_stats, "lifecycle": lf_stats})
        log(f"quality: LoCoMo {conv.name}: {len(conv.questions)} questions, "
            f"{lf_stats['added']} facts distilled from {len(conv.turns)} turns "
            f"({t2 - t1:.1f} s turns, {t3 - t2:.1f} s lifecycle)")
    return {"files": [c.name for c in convs], "at_supported": use_at,
            "summary": {k: summarise(v) for k, v in rows.items()},
            "conversations": per_conv, "seconds": seconds}


def lifecycle_label(data: dict) -> str:
    """What the lifecycle rows ran with (at= support, names accepted)."""
    parts = []
    if not data["at_supported"]:
        parts.append("no at= support in this build")
    refused = [c["lifecycle"]["name_refused"] for c in data["conversations"]
               if c["lifecycle"]["name_refused"]]
    if refused:
        parts.append(f"`name` refused: {refused[0][:80]}")
    return f" ({'; '.join(parts)})" if parts else ""


def ratio(a: float, b: float) -> Optional[float]:
    return a / b if b else None
