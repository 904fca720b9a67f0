"""Recall on the dev data, retrieval alone (issue 13): a small script beside the quality area.

    python -m bench.recall_dev [--locomo DIR] [--devset FILE] [--json OUT]

- Dev set (../shared/eval/devset.json): recall@5 per query type with the keyword navigator
  (no LLM), and with an ORACLE navigator, a navigator that returns the gold facts' categories:
  the ceiling of tree search, labelled as such, never a product figure.
- LoCoMo dev (../shared/eval/locomo-dev/), turns as facts: every turn stored with
  remember("Speaker: text", created_at=session time); a question's gold is its evidence turns;
  recall@5 over categories 1-4, beside BM25 over the raw turns (rank_bm25.BM25Okapi,
  lowercase word tokens) in the same run. Malformed evidence ids ("D:11:26", "D30:05",
  "D8:6; D9:17") are repaired (split on ';', stray ':' and leading zeros dropped); ids that
  still name no turn are skipped.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from datetime import datetime
from pathlib import Path

from evoclaw_memory import Memory
from evoclaw_memory.models import PathChoice

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "eval"
DAY = 86_400.0


class OracleNavigator:
    """Returns the categories of the current query's gold facts (a ceiling, not a product)."""

    method = "oracle-tree"

    def __init__(self) -> None:
        self.paths: list[str] = []

    def choose(self, query, nodes, limit=5):
        existing = {n.path for n in nodes}
        return [PathChoice(path=p, relevance=1.0, reason="oracle")
                for p in self.paths if p in existing][:limit]


def _devset_store(home: Path, devset: dict, navigator=None):
    mem = Memory.open("bench", home, navigator=navigator)
    now = time.time()
    ours = {}
    for f in devset["facts"]:
        meta = f.get("metadata") or {}
        fact = mem.remember(f["text"], category=f["category"], importance=f["importance"],
                            created_at=now - f["age_days"] * DAY,
                            metadata={k: meta.get(k, []) for k in ("urls", "commands", "paths")})
        ours[fact.id] = f["id"]
    return mem, ours


def devset_llm(path: Path, url: str, model: str) -> dict:
    """The dev set with the LLM navigator on a real endpoint: recall, calls, tokens, latency."""
    from evoclaw_memory.llm.client import LLMClient
    from evoclaw_memory.llm.navigator import LLMNavigator
    data = json.loads(path.read_text(encoding="utf-8"))
    client = LLMClient(url, model, None, timeout=120)
    nav = LLMNavigator(client)
    by_type: dict[str, list[float]] = {}
    used = valid = 0
    latencies = []
    with tempfile.TemporaryDirectory() as home:
        mem, ours = _devset_store(Path(home), data, nav)
        retriever = mem.retriever()
        for q in data["queries"]:
            t = time.perf_counter()
            results = retriever.retrieve(q["query"], limit=5)
            latencies.append(time.perf_counter() - t)
            used += bool(nav.last and nav.last.used)
            valid += bool(nav.last and nav.last.used and nav.last.paths)
            if q["gold"]:
                top = [ours[r.fact.id] for r in results]
                r5 = len(set(q["gold"]) & set(top)) / len(q["gold"])
                for key in (q["type"], "overall"):
                    by_type.setdefault(key, []).append(r5)
        mem.close()
    n = len(data["queries"])
    latencies.sort()
    return {"model": model, "queries": n, "answer_used": used, "valid_paths": valid,
            "calls": client.stats.calls, "errors": client.stats.errors,
            "prompt_tokens_per_query": round(client.stats.prompt_tokens / n),
            "completion_tokens_per_query": round(client.stats.completion_tokens / n),
            "median_s": round(latencies[n // 2], 2), "p95_s": round(latencies[int(n * .95)], 2),
            "format_mode": client.format_mode,
            "recall5": {k: round(sum(v) / len(v), 3) for k, v in sorted(by_type.items())}}


def devset(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    category = {f["id"]: f["category"] for f in data["facts"]}
    out = {}
    for label, oracle in (("keyword", False), ("oracle", True)):
        nav = OracleNavigator() if oracle else None
        with tempfile.TemporaryDirectory() as home:
            mem, ours = _devset_store(Path(home), data, nav)
            retriever = mem.retriever()
            by_type: dict[str, list[float]] = {}
            for q in data["queries"]:
                if not q["gold"]:
                    continue
                if nav is not None:
                    nav.paths = list(dict.fromkeys(category[g] for g in q["gold"]))
                top = [ours[r.fact.id] for r in retriever.retrieve(q["query"], limit=5)]
                r5 = len(set(q["gold"]) & set(top)) / len(q["gold"])
                for key in (q["type"], "overall"):
                    by_type.setdefault(key, []).append(r5)
            mem.close()
        out[label] = {k: round(sum(v) / len(v), 3) for k, v in sorted(by_type.items())}
    return out


_DATE = re.compile(r"(\d+):(\d+)\s*(am|pm) on (\d+) (\w+),? (\d{4})", re.I)


def _session_time(text: str) -> float:
    m = _DATE.search(text)
    if not m:
        raise ValueError(f"unreadable session time {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime.strptime(f"{day} {month} {year} {h}:{minute}", "%d %B %Y %H:%M").timestamp()


def _evidence(ids: list[str]) -> list[str]:
    out = []
    for raw in ids:
        for part in raw.split(";"):
            m = re.match(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def locomo(folder: Path) -> dict:
    import numpy as np
    from rank_bm25 import BM25Okapi
    ours_r, bm_r, per_cat = [], [], {}
    for file in sorted(folder.glob("*.json")):
        conv = json.loads(file.read_text(encoding="utf-8"))
        conv = conv.get("conversation", conv)
        qa = json.loads(file.read_text(encoding="utf-8")).get("qa", [])
        turns = []
        n = 1
        while f"session_{n}" in conv:
            at = _session_time(conv[f"session_{n}_date_time"])
            for i, t in enumerate(conv[f"session_{n}"]):
                turns.append((t["dia_id"], f"{t['speaker']}: {t['text']}", at + i))
            n += 1
        index = {d: i for i, (d, _, _) in enumerate(turns)}
        bm25 = BM25Okapi([re.findall(r"\w+", t.lower()) for _, t, _ in turns])
        with tempfile.TemporaryDirectory() as home:
            mem = Memory.open("bench", Path(home))
            ids = {}
            for dia, text, at in turns:
                fact = mem.remember(text, created_at=at)
                ids.setdefault(fact.id, dia)
            retriever = mem.retriever()
            for q in qa:
                if q.get("category") not in (1, 2, 3, 4):
                    continue
                gold = {g for g in _evidence(q.get("evidence", [])) if g in index}
                if not gold:
                    continue
                top = [ids[r.fact.id] for r in retriever.retrieve(q["question"], limit=5)]
                scores = bm25.get_scores(re.findall(r"\w+", q["question"].lower()))
                bm_top = [turns[i][0] for i in np.argsort(-scores)[:5]]
                r, b = len(gold & set(top)) / len(gold), len(gold & set(bm_top)) / len(gold)
                ours_r.append(r)
                bm_r.append(b)
                per_cat.setdefault(q["category"], []).append(r)
            mem.close()
    return {"questions": len(ours_r), "recall5": round(sum(ours_r) / len(ours_r), 3),
            "bm25_recall5": round(sum(bm_r) / len(bm_r), 3),
            "by_category": {c: round(sum(v) / len(v), 3) for c, v in sorted(per_cat.items())}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--devset", type=Path, default=SHARED / "devset.json")
    ap.add_argument("--locomo", type=Path, default=SHARED / "locomo-dev")
    ap.add_argument("--skip-locomo", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--llm", help="OpenAI-compatible base URL: add the LLM navigator column")
    ap.add_argument("--llm-model", default="smollm2-135m-instruct")
    ap.add_argument("--only-llm", action="store_true")
    args = ap.parse_args()
    result = {} if args.only_llm else {"devset": devset(args.devset)}
    print(json.dumps(result, indent=1))
    if args.llm:
        result["devset_llm"] = devset_llm(args.devset, args.llm, args.llm_model)
        print(json.dumps(result["devset_llm"], indent=1))
        if args.only_llm:
            args.skip_locomo = True
    if not args.skip_locomo:
        result["locomo_turns"] = locomo(args.locomo)
        print(json.dumps(result["locomo_turns"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
