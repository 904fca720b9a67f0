"""Area 8 — retrieval quality: the dev set (../shared/eval/devset.json) and LoCoMo dev.

Dev set, scored exactly as its README says: recall@5 and MRR (first gold in the top 10) over
queries with gold, per type and overall; the 5 "none" queries: results above the system's own
relevance threshold in the top 5 (ideal 0); superseded-above-gold rate for queries that
carry `superseded`.

Systems, each on a freshly loaded store (facts loaded with remember(), created_at = now -
age_days, their own importance, category and metadata; ids are never shown to the system):
- keyword navigator: the default retrieval (`mem.retriever().retrieve`, which does not
  reinforce, so query order cannot change scores); its threshold is the retriever's
  min_relevance (results below it are never returned);
- BM25 over all facts: rank-bm25 BM25Okapi over what the library indexes for a fact (text,
  category words, URLs/commands/paths), tokenised with evoclaw_memory.text.tokens (CJK
  bigrams), queries through text.query_terms; a result "scores above threshold" when its
  BM25 score is > 0;
- oracle navigator: a TreeNavigator (Memory.open(navigator=...)) that returns the gold facts'
  categories: the ceiling of tree search with the shipped candidate search and ranking;
- LLM navigator: when an OpenAI-compatible endpoint is given (EVOCLAW_LLM_BASE_URL, e.g.
  from `bench/local_llm.sh start`), the same retrieval with the LLM tree navigator (one call
  per query; its failures fall back to the keyword navigator inside the call, as in
  production), with calls, tokens and latency from mem.metrics() and how often the LLM's
  answer was used.

LoCoMo dev (bench/locomo.py): turns as facts and sessions through end_conversation, each
beside BM25 over the raw turns; then the issue-13 targets as PASS/FAIL rows.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Optional

from .data import DAY
from .util import ROOT, AreaResult, Workspace, log, median, memory, verdict

TITLE = "8. Retrieval quality (devset, LoCoMo dev)"


def devset_path() -> Path:
    env = os.environ.get("EVOCLAW_DEVSET")
    path = Path(env) if env else ROOT.parent / "shared" / "eval" / "devset.json"
    if not path.is_file():
        raise FileNotFoundError(f"the dev set is missing: looked for {path} (set EVOCLAW_DEVSET "
                                "to the path of devset.json)")
    return path


def _load(ws: Workspace, devset: dict):
    """A fresh store with every dev-set fact; returns (mem-home, our id -> devset id)."""
    home = ws.new_home("devset")
    now = time.time()
    ours: dict[str, str] = {}
    with memory(home) as mem:
        for f in devset["facts"]:
            meta = f.get("metadata") or {}
            fact = mem.remember(f["text"], category=f["category"], importance=f["importance"],
                                created_at=now - f["age_days"] * DAY,
                                metadata={"urls": meta.get("urls", []),
                                          "commands": meta.get("commands", []),
                                          "paths": meta.get("paths", [])})
            if fact.id in ours:
                raise RuntimeError(f"dev-set facts {ours[fact.id]} and {f['id']} were merged as "
                                   "duplicates: the scores would be wrong")
            ours[fact.id] = f["id"]
    return home, ours


def _keyword_runs(ws: Workspace, devset: dict) -> dict[str, list[tuple[str, float]]]:
    home, ours = _load(ws, devset)
    out = {}
    with memory(home) as mem:
        retriever = mem.retriever()
        for q in devset["queries"]:
            results = retriever.retrieve(q["query"], limit=10)
            out[q["id"]] = [(ours[r.fact.id], r.score) for r in results]
    return out


class OracleNavigator:
    """The ceiling of tree search: for each dev-set query, the categories of its gold facts.

    It knows the answers, so it is no system: it shows how far retrieval gets when the tree
    search is perfect and the rest of the pipeline (candidates, ranking) is as shipped."""

    method = "oracle-tree"

    def __init__(self, devset: dict):
        category = {f["id"]: f["category"] for f in devset["facts"]}
        self.paths: dict[str, list[str]] = {}
        for q in devset["queries"]:
            paths = self.paths.setdefault(q["query"], [])
            for fid in q["gold"]:
                if category[fid] not in paths:
                    paths.append(category[fid])

    def choose(self, query: str, nodes: list, limit: int = 5) -> list:
        from evoclaw_memory.models import PathChoice
        existing = {n.path for n in nodes}
        return [PathChoice(path=p, relevance=1.0, reason="oracle: a gold fact's category")
                for p in self.paths.get(query, []) if p in existing][:limit]


def _oracle_runs(ws: Workspace, devset: dict) -> dict[str, list[tuple[str, float]]]:
    """Retrieval with the oracle navigator, through Memory.open(navigator=...)."""
    home, ours = _load(ws, devset)
    out = {}
    with memory(home, navigator=OracleNavigator(devset)) as mem:
        retriever = mem.retriever()
        for q in devset["queries"]:
            out[q["id"]] = [(ours[r.fact.id], r.score) for r in retriever.retrieve(q["query"], limit=10)]
    return out


def _llm_runs(ws: Workspace, devset: dict, url: str, model: str,
              api_key: Optional[str]) -> tuple[dict, dict]:
    """Retrieval with the LLM navigator; returns (runs, call statistics from metrics)."""
    from evoclaw_memory.llm.client import LLMClient
    from evoclaw_memory.llm.navigator import LLMNavigator
    home, ours = _load(ws, devset)
    client = LLMClient(url, model, api_key, timeout=60)
    navigator = LLMNavigator(client)
    out, used, latencies = {}, 0, []
    try:
        # llm=client: Memory counts every call (calls, tokens, seconds) in its metrics.
        with memory(home, navigator=navigator, llm=client) as mem:
            retriever = mem.retriever()
            for q in devset["queries"]:
                t = time.perf_counter()
                results = retriever.retrieve(q["query"], limit=10)
                latencies.append(time.perf_counter() - t)
                last = getattr(navigator, "last", None)
                used += bool(last is not None and getattr(last, "used", False))
                out[q["id"]] = [(ours[r.fact.id], r.score) for r in results]
            counters = mem.metrics()["counters"]
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            close()
    n = len(devset["queries"])
    stats = {"queries": n, "model": model,
             "calls": counters.get("llm.calls", client.stats.calls),
             "errors": counters.get("llm.errors", client.stats.errors),
             "prompt_tokens_per_query": counters.get("llm.tokens_prompt", client.stats.prompt_tokens) / n,
             "completion_tokens_per_query":
                 counters.get("llm.tokens_completion", client.stats.completion_tokens) / n,
             "llm_seconds": counters.get("llm.seconds", client.stats.seconds),
             "answer_used": used, "median_s": median(latencies),
             "p95_s": sorted(latencies)[min(n - 1, int(0.95 * n))]}
    return out, stats


def _bm25_runs(devset: dict) -> dict[str, list[tuple[str, float]]]:
    import numpy as np
    from rank_bm25 import BM25Okapi
    from evoclaw_memory.text import query_terms, tokens
    facts = devset["facts"]
    corpus = []
    for f in facts:
        meta = f.get("metadata") or {}
        extra = " ".join(meta.get("urls", []) + meta.get("commands", []) + meta.get("paths", []))
        corpus.append(tokens(f"{f['text']} {f['category'].replace('/', ' ').replace('-', ' ')} {extra}"))
    bm25 = BM25Okapi(corpus)
    out = {}
    for q in devset["queries"]:
        scores = bm25.get_scores(query_terms(q["query"]))
        order = np.argsort(-scores)[:10]
        out[q["id"]] = [(facts[i]["id"], float(scores[i])) for i in order if scores[i] > 0]
    return out


def score(devset: dict, runs: dict[str, list[tuple[str, float]]]) -> dict:
    """The README's scoring, per type and overall."""
    by_type: dict[str, dict[str, list[float]]] = {}
    none_counts, sup_total, sup_above = [], 0, 0
    for q in devset["queries"]:
        ranked = [fid for fid, _ in runs[q["id"]]]
        top = ranked
        if not q["gold"]:
            none_counts.append(len(top[:5]))
        else:
            gold = set(q["gold"])
            recall5 = len(gold & set(top[:5])) / len(gold)
            mrr = next((1 / (i + 1) for i, f in enumerate(top[:10]) if f in gold), 0.0)
            for key in (q["type"], "overall"):
                d = by_type.setdefault(key, {"recall5": [], "mrr": []})
                d["recall5"].append(recall5)
                d["mrr"].append(mrr)
        if q.get("superseded"):
            sup_total += 1
            gold_ranks = [i for i, f in enumerate(top) if f in set(q["gold"])]
            sup_ranks = [i for i, f in enumerate(top) if f in set(q["superseded"])]
            best_gold = min(gold_ranks) if gold_ranks else len(top) + 1
            if sup_ranks and min(sup_ranks) < best_gold:
                sup_above += 1
    summary = {k: {"n": len(v["recall5"]), "recall5": sum(v["recall5"]) / len(v["recall5"]),
                   "mrr": sum(v["mrr"]) / len(v["mrr"])} for k, v in by_type.items()}
    return {"types": summary,
            "none": {"n": len(none_counts), "mean_results": sum(none_counts) / max(1, len(none_counts)),
                     "zero": sum(1 for c in none_counts if c == 0)},
            "superseded": {"n": sup_total, "above_gold": sup_above,
                           "rate": sup_above / sup_total if sup_total else 0.0}}


def _llm_endpoint() -> Optional[tuple[str, str, Optional[str]]]:
    """(url, model, key) of the LLM endpoint given to the bench, if any; and keep it away from
    every other store of this process (they measure the library's defaults, no LLM)."""
    def take(name: str) -> str:
        bench = os.environ.get(name.replace("EVOCLAW_", "EVOCLAW_BENCH_")) or ""
        return bench or os.environ.get(name) or ""
    url, model, key = (take(f"EVOCLAW_LLM_{k}") for k in ("BASE_URL", "MODEL", "API_KEY"))
    for name in [k for k in os.environ if k.startswith("TURSO_") or k.startswith("EVOCLAW_LLM_")]:
        del os.environ[name]
    return (url, model or "smollm2-135m-instruct", key or None) if url else None


def _cell(d: Optional[dict], t: str) -> str:
    if d is None:
        return "n/a"
    if t not in d["types"]:
        return "-"
    return f"{d['types'][t]['recall5']:.2f} / {d['types'][t]['mrr']:.2f}"


def _devset_rows(res: AreaResult, kw: dict, bm: dict, orc: dict, lm: Optional[dict]) -> None:
    order = ["overall", "direct", "paraphrase", "multi", "temporal", "url", "cjk", "cjk-cross"]
    for t in order + sorted(set(kw["types"]) - set(order)):
        if t not in kw["types"]:
            continue
        k = kw["types"][t]
        res.add(f"devset recall@5 / MRR — {t} (n={k['n']})", f"{k['recall5']:.2f} / {k['mrr']:.2f}",
                f"BM25 {_cell(bm, t)} · oracle navigator (ceiling) {_cell(orc, t)} · "
                f"LLM navigator {_cell(lm, t)}")
    res.add(f"devset none queries: mean results above threshold (n={kw['none']['n']})",
            f"{kw['none']['mean_results']:.1f}; {kw['none']['zero']}/{kw['none']['n']} got 0",
            f"BM25 {bm['none']['mean_results']:.1f}; {bm['none']['zero']}/{bm['none']['n']} got 0"
            + (f" · LLM navigator {lm['none']['mean_results']:.1f}; {lm['none']['zero']}/"
               f"{lm['none']['n']} got 0" if lm else ""), "ideal 0")
    res.add(f"devset superseded ranked above best gold (n={kw['superseded']['n']})",
            f"{kw['superseded']['above_gold']}/{kw['superseded']['n']} ({kw['superseded']['rate']:.0%})",
            f"BM25 {bm['superseded']['above_gold']}/{bm['superseded']['n']} "
            f"({bm['superseded']['rate']:.0%})", "ideal 0%")


def _triple(d: dict) -> str:
    return f"{d['recall5']:.3f} / {d['hit5']:.2f} / {d['mrr10']:.2f}"


def _locomo_rows(res: AreaResult, lo: dict, tag: str) -> None:
    from .locomo import CATEGORIES, lifecycle_label
    bm, tf, lf = (lo["summary"][k] for k in ("bm25", "turns", "life"))
    keys = ["overall"] + [str(c) for c in CATEGORIES if str(c) in tf]

    def name(key: str, n: int) -> str:
        return f"{'overall, cat 1-4' if key == 'overall' else f'cat {key} ' + CATEGORIES[int(key)]} (n={n})"

    for key in keys:
        res.add(f"LoCoMo{tag} turns as facts: r@5 / hit@5 / MRR@10 — {name(key, tf[key]['n'])}",
                _triple(tf[key]), f"BM25 raw turns {_triple(bm[key])}")
    for key in keys:
        label = lifecycle_label(lo) if key == "overall" else ""
        res.add(f"LoCoMo{tag} lifecycle{label}: evidence r@5 / hit@5 / MRR@10 — "
                f"{name(key, lf[key]['n'])}",
                _triple(lf[key]), f"turns as facts {_triple(tf[key])} · BM25 {_triple(bm[key])}")
    for key in keys:
        res.add(f"LoCoMo{tag} lifecycle: answer in top 5 — {name(key, lf[key]['n'])}",
                f"{lf[key]['answer5']:.3f}",
                f"turns as facts {tf[key]['answer5']:.3f} · BM25 raw turns {bm[key]['answer5']:.3f}")
    convs = lo["conversations"]
    kept = sum(c["lifecycle"]["evidence_kept"] for c in convs)
    evidence = sum(c["lifecycle"]["evidence_turns"] for c in convs)
    facts = sum(c["lifecycle"]["added"] for c in convs)
    turns = sum(c["turns"] for c in convs)
    turns_kept = sum(c["lifecycle"]["turns_kept"] for c in convs)
    res.add(f"LoCoMo{tag} lifecycle: evidence turns credited with a stored fact",
            f"{kept}/{evidence} ({kept / max(1, evidence):.0%})",
            f"{facts:,} facts from {turns:,} turns; {turns_kept / max(1, turns):.0%} of all turns "
            "credited with one")


def _target_rows(res: AreaResult, kw: dict, orc: dict, lm: Optional[dict], lo: dict, tag: str,
                 llm_stats: Optional[dict]) -> None:
    from .locomo import lifecycle_label, ratio
    tf, bm, lf = (lo["summary"][k]["overall"] for k in ("turns", "bm25", "life"))
    gain = tf["recall5"] - bm["recall5"]
    res.add(f"LoCoMo{tag} turns as facts: recall@5 gain over BM25", f"{gain:+.3f}",
            f"{tf['recall5']:.3f} vs BM25 raw turns {bm['recall5']:.3f}", ">= +0.10",
            verdict(gain >= 0.10 - 1e-9))
    share = ratio(lf["recall5"], tf["recall5"])
    res.add(f"LoCoMo{tag} lifecycle{lifecycle_label(lo)}: evidence recall@5 ÷ turns as facts",
            f"{share:.2f}×" if share is not None else "n/a",
            f"{lf['recall5']:.3f} vs {tf['recall5']:.3f}", ">= 0.85×",
            verdict(None if share is None else share >= 0.85 - 1e-9))
    temporal = lo["summary"]["life"].get("2")
    if temporal:
        res.add(f"LoCoMo{tag} lifecycle{lifecycle_label(lo)}: answer in top 5, temporal "
                f"(n={temporal['n']})", f"{temporal['answer5']:.3f}",
                f"turns as facts {lo['summary']['turns']['2']['answer5']:.3f} · BM25 raw turns "
                f"{lo['summary']['bm25']['2']['answer5']:.3f}", ">= 0.30",
                verdict(temporal["answer5"] >= 0.30 - 1e-9))
    para = kw["types"].get("paraphrase")
    if para:
        res.add("devset paraphrase recall@5, keyword navigator (no LLM)", f"{para['recall5']:.2f}",
                "", ">= 0.50", verdict(para["recall5"] >= 0.50 - 1e-9))
    for t, floor in (("paraphrase", 0.80), ("cjk-cross", 0.60)):
        if t in orc["types"]:
            value = orc["types"][t]["recall5"]
            res.add(f"devset {t} recall@5, oracle navigator (ceiling of tree search)",
                    f"{value:.2f}", f"keyword navigator {kw['types'][t]['recall5']:.2f}",
                    f">= {floor:.2f}", verdict(value >= floor - 1e-9))
    if llm_stats is not None and lm is not None:
        share_used = llm_stats["answer_used"] / max(1, llm_stats["queries"])
        res.add(f"devset LLM navigator ({llm_stats['model']}): answer used (valid paths)",
                f"{llm_stats['answer_used']}/{llm_stats['queries']} ({share_used:.0%})",
                f"recall@5 {lm['types']['overall']['recall5']:.2f} vs keyword "
                f"{kw['types']['overall']['recall5']:.2f}", ">= 90%", verdict(share_used >= 0.90))
    else:
        res.add("devset LLM navigator: answer used (valid paths)", "n/a",
                "no endpoint given (EVOCLAW_LLM_BASE_URL)", ">= 90%", verdict(None))


def run(ws: Workspace) -> AreaResult:
    from . import locomo
    res = AreaResult("quality", TITLE)
    endpoint = _llm_endpoint()
    path = devset_path()
    devset = json.loads(path.read_text(encoding="utf-8"))
    log(f"quality: {len(devset['facts'])} facts, {len(devset['queries'])} queries")
    began = time.perf_counter()
    kw = score(devset, _keyword_runs(ws, devset))
    bm = score(devset, _bm25_runs(devset))
    orc = score(devset, _oracle_runs(ws, devset))
    devset_s = time.perf_counter() - began
    lm, llm_stats = None, None
    if endpoint:
        url, model, key = endpoint
        runs, llm_stats = _llm_runs(ws, devset, url, model, key)
        lm = score(devset, runs)
        lm["calls"] = llm_stats
    lo = locomo.run_all(ws, ws.quick)
    tag = "" if not ws.quick else f" [quick: {len(lo['files'])}/5 conv.]"

    _target_rows(res, kw, orc, lm, lo, tag, llm_stats)
    _locomo_rows(res, lo, tag)
    _devset_rows(res, kw, bm, orc, lm)

    res.data.update({"devset": str(path), "keyword": kw, "bm25": bm, "oracle": orc, "llm": lm,
                     "locomo": lo, "seconds": {"devset": devset_s, **lo["seconds"]}})
    convs = lo["conversations"]
    repaired = sorted({r for c in convs for r in c["repaired"]})
    skipped = sorted({f"{c['conversation']}:{s}" for c in convs for s in c["skipped"]})
    self_credit = sum(c["turns_as_facts"]["rule_self_credit"] for c in convs)
    turns = sum(c["turns"] for c in convs)
    res.notes.append(
        f"LoCoMo dev ({', '.join(lo['files'])}.json): questions of categories 1-4 with a valid "
        f"evidence turn ({sum(c['questions'] for c in convs)}; category 5, adversarial, is not "
        "scored); one fresh store per conversation and system; the device clock reads each "
        "session's time while it is stored, questions are asked a day after the last session, "
        "through mem.retriever() (no reinforcement). Evidence ids repaired: "
        f"{'; '.join(repaired) or 'none'}; skipped (no such turn): {', '.join(skipped) or 'none'}.")
    res.notes.append(
        "Lifecycle: each session through end_conversation(messages, "
        + ("at=session time, " if lo["at_supported"] else "")
        + "sync=False), speaker_a as role user and speaker_b as assistant, the speaker in `name`"
        + ("" if lo["at_supported"] else "; this build's end_conversation takes no at=, so "
           "none was passed") + ". A distilled fact counts as an evidence turn when, among the "
        "turns of the session it came from, that turn holds the most (>= 50% and >= 2) of the "
        "fact's content words, not counting the speakers' names, numbers and date words (see "
        f"bench/README.md). The rule credits {self_credit}/{turns} turns-as-facts facts to their "
        "own turn. Answer in top 5: the gold answer, SQuAD-normalised, as a phrase inside one "
        "of the top 5 results' normalised text.")
    res.notes.append("Oracle navigator: a TreeNavigator returning the gold facts' categories for "
                     "each dev-set query (Memory.open(navigator=...)); it knows the answers: the "
                     "ceiling of tree search with today's candidate search and ranking, not a "
                     "system.")
    if llm_stats is not None:
        res.notes.append(
            f"LLM navigator ({llm_stats['model']}; figures from mem.metrics()): "
            f"{llm_stats['calls'] / llm_stats['queries']:.1f} call and "
            f"{llm_stats['prompt_tokens_per_query']:.0f} prompt + "
            f"{llm_stats['completion_tokens_per_query']:.0f} completion tokens per query, "
            f"{llm_stats['errors']} errors; its answer was used for {llm_stats['answer_used']}/"
            f"{llm_stats['queries']} queries (the rest fell back to keywords); retrieval median "
            f"{llm_stats['median_s'] * 1000:.0f} ms, p95 {llm_stats['p95_s'] * 1000:.0f} ms.")
    else:
        res.notes.append("LLM navigator: no endpoint given (set EVOCLAW_LLM_BASE_URL, e.g. "
                         "after `bench/local_llm.sh start`), so its column is n/a.")
    res.notes.append("Devset value = keyword navigator (default Memory retrieval, no LLM); "
                     "reference = BM25 over all facts on the same facts. Fresh store per system; "
                     "tree node descriptions are left empty (as `remember` creates them).")
    return res
