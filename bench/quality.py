"""Area 8 — retrieval quality on the dev set (/work/shared/eval/devset.json).

Scored exactly as its README says: recall@5 and MRR (first gold in the top 10) over queries
with gold, per type and overall; the 5 "none" queries: results above the system's own
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
- LLM navigator: when an OpenAI-compatible endpoint is given (EVOCLAW_LLM_BASE_URL, e.g.
  from `bench/local_llm.sh start`), the same retrieval with the LLM tree navigator (one call
  per query; its failures fall back to the keyword navigator inside the call, as in
  production), with calls, tokens and how often the LLM's answer was used.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .data import DAY
from .util import ROOT, AreaResult, Workspace, log, memory

TITLE = "8. Retrieval quality (devset)"


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


def _llm_runs(ws: Workspace, devset: dict, url: str) -> tuple[dict, dict]:
    """Retrieval with the LLM navigator; returns (runs, call statistics)."""
    from evoclaw_memory.llm.client import LLMClient
    from evoclaw_memory.llm.navigator import LLMNavigator
    home, ours = _load(ws, devset)
    client = LLMClient(url, os.environ.get("EVOCLAW_BENCH_LLM_MODEL") or "smollm2-135m-instruct",
                       os.environ.get("EVOCLAW_BENCH_LLM_API_KEY") or None, timeout=60)
    navigator = LLMNavigator(client)
    out, used, latencies = {}, 0, []
    with memory(home, navigator=navigator) as mem:
        retriever = mem.retriever()
        for q in devset["queries"]:
            t = time.perf_counter()
            results = retriever.retrieve(q["query"], limit=10)
            latencies.append(time.perf_counter() - t)
            used += bool(navigator.last and navigator.last.used)
            out[q["id"]] = [(ours[r.fact.id], r.score) for r in results]
    n = len(devset["queries"])
    stats = {"queries": n, "calls": client.stats.calls, "errors": client.stats.errors,
             "prompt_tokens_per_query": client.stats.prompt_tokens / n,
             "completion_tokens_per_query": client.stats.completion_tokens / n,
             "answer_used": used, "median_s": sorted(latencies)[n // 2]}
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


def run(ws: Workspace) -> AreaResult:
    res = AreaResult("quality", TITLE)
    path = devset_path()
    devset = json.loads(path.read_text(encoding="utf-8"))
    log(f"quality: {len(devset['facts'])} facts, {len(devset['queries'])} queries")
    kw = score(devset, _keyword_runs(ws, devset))
    bm = score(devset, _bm25_runs(devset))
    url = os.environ.get("EVOCLAW_BENCH_LLM_BASE_URL")
    lm = None
    if url:
        runs, llm_stats = _llm_runs(ws, devset, url)
        lm = score(devset, runs)
        lm["calls"] = llm_stats
        res.notes.append(f"LLM navigator ({os.environ.get('EVOCLAW_BENCH_LLM_MODEL') or 'default model'}): "
                         f"{llm_stats['calls'] / llm_stats['queries']:.1f} call and "
                         f"{llm_stats['prompt_tokens_per_query']:.0f} prompt + "
                         f"{llm_stats['completion_tokens_per_query']:.0f} completion tokens per "
                         f"query; its answer was used for {llm_stats['answer_used']}/"
                         f"{llm_stats['queries']} queries (the rest fell back to keywords); "
                         f"median {llm_stats['median_s'] * 1000:.0f} ms per retrieval.")
    else:
        res.notes.append("LLM navigator: no endpoint given (set EVOCLAW_LLM_BASE_URL, e.g. "
                         "after `bench/local_llm.sh start`), so its column is n/a.")
    res.data.update({"devset": str(path), "keyword": kw, "bm25": bm, "llm": lm})
    order = ["overall", "direct", "paraphrase", "multi", "temporal", "url", "cjk", "cjk-cross"]
    for t in order + sorted(set(kw["types"]) - set(order)):
        if t not in kw["types"]:
            continue
        k, b = kw["types"][t], bm["types"][t]
        llm_cell = (f"{lm['types'][t]['recall5']:.2f} / {lm['types'][t]['mrr']:.2f}"
                    if lm else "n/a")
        res.add(f"recall@5 / MRR — {t} (n={k['n']})", f"{k['recall5']:.2f} / {k['mrr']:.2f}",
                f"BM25 {b['recall5']:.2f} / {b['mrr']:.2f} · LLM navigator {llm_cell}")
    res.add(f"none queries: mean results above threshold (n={kw['none']['n']})",
            f"{kw['none']['mean_results']:.1f}; {kw['none']['zero']}/{kw['none']['n']} got 0",
            f"BM25 {bm['none']['mean_results']:.1f}; {bm['none']['zero']}/{bm['none']['n']} got 0",
            "ideal 0")
    res.add(f"superseded ranked above best gold (n={kw['superseded']['n']})",
            f"{kw['superseded']['above_gold']}/{kw['superseded']['n']} ({kw['superseded']['rate']:.0%})",
            f"BM25 {bm['superseded']['above_gold']}/{bm['superseded']['n']} "
            f"({bm['superseded']['rate']:.0%})", "ideal 0%")
    res.notes.append("Value = keyword navigator (default Memory retrieval, no LLM); reference = "
                     "BM25 over all facts on the same facts. Fresh store per system; the "
                     "retriever does not reinforce, so query order does not matter. Tree node "
                     "descriptions are left empty (as `remember` creates them): the navigator "
                     "sees path segments only.")
    return res
