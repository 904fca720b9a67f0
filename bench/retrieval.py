"""Area 1 — retrieval latency and scaling.

`Memory.retrieve` (keyword navigator, no LLM; reinforces what it returns, as agents call it)
at 1k … 1M facts, against two baselines over the same facts and queries:
- a naive linear scan: the facts as a JSON list (loaded once), every fact's text searched
  word by word for the query's words, top 5 by hits — what a flat-file memory does;
- BM25 over all facts (rank-bm25 BM25Okapi), tokenised like the library (text.tokens):
  query time of get_scores + top 5 (the index build is reported apart).
Stores are loaded in bulk (Memory.bulk_insert, tier by score, then recount_tree and a quick
consolidation), not one remember() at a time.
"""

from __future__ import annotations

import heapq
import json
import threading
import time

from .data import Generator
from .util import (AreaResult, Workspace, count_label, log, memory, ms, p50_p95, stats,
                   time_calls, verdict)

TITLE = "1. Retrieval latency & scaling"
TARGET_P95 = 0.010          # retrieve over 100k facts, p95 < 10 ms
MIN_BASELINE_CALLS = 20     # quick mode: timed baseline calls at least, whatever the budget
QUICK_BASELINE_BUDGET_S = 2.0


def sizes(quick: bool) -> list[int]:
    return [1_000, 10_000, 100_000] if quick else [1_000, 10_000, 100_000, 1_000_000]


def _scan_baseline(gen_facts, queries, budget_s: float, warmup: int, min_n: int = 5):
    """A flat-file memory: json.loads of the whole list once, then a word-by-word scan."""
    blob = json.dumps([{"id": g.id, "text": g.text, "category": g.category,
                        "importance": g.importance} for g in gen_facts], ensure_ascii=False)
    t = time.perf_counter()
    facts = json.loads(blob)
    load_s = time.perf_counter() - t
    texts = [(f["text"].lower(), f["id"]) for f in facts]

    def search(query: str):
        words = [w for w in query.lower().split() if len(w) > 2] or query.lower().split()
        return heapq.nlargest(5, ((sum(1 for w in words if w in text), fid) for text, fid in texts))

    return time_calls(search, queries, warmup=warmup, budget_s=budget_s, min_n=min_n), load_s, len(blob)


def _bm25_baseline(gen_facts, queries, budget_s: float, warmup: int, min_n: int = 5):
    import numpy as np
    from rank_bm25 import BM25Okapi
    from evoclaw_memory.text import query_terms, tokens
    t = time.perf_counter()
    corpus = [tokens(f"{g.text} {g.category.replace('/', ' ')}") for g in gen_facts]
    bm25 = BM25Okapi(corpus)
    build_s = time.perf_counter() - t
    del corpus

    def search(query: str):
        scores = bm25.get_scores(query_terms(query))
        k = min(5, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        return top[np.argsort(-scores[top])]

    samples = time_calls(search, queries, warmup=warmup, budget_s=budget_s, min_n=min_n)
    return samples, build_s


def _install_meanwhile(ws: Workspace) -> threading.Thread:
    """bench/install.py's regular install, started in a thread. A failure here is left to the
    area that needs the install: it finds no finished install and makes it itself."""
    from .install import regular_install

    def install() -> None:
        try:
            regular_install(ws.root)
        except Exception as exc:                       # noqa: BLE001 - redone by its user
            log(f"  the regular install failed here ({exc}); the CLI rows will make it")

    thread = threading.Thread(target=install, name="regular-install", daemon=True)
    thread.start()
    return thread


def run(ws: Workspace) -> AreaResult:
    res = AreaResult("retrieval", TITLE)
    quick = ws.quick
    queries = Generator(7).queries(400)
    per_size = {}
    for n in sizes(quick):
        log(f"retrieval: {n:,} facts")
        # Quick: the regular install the CLI rows need (~5 s of pip and compiling, in other
        # processes) is made while the biggest store is built, both set-up, neither timed;
        # it is finished before any call here is timed.
        installing = _install_meanwhile(ws) if quick and n == max(sizes(quick)) else None
        home = ws.copy_store(n)
        if installing is not None:
            installing.join()
        # More repetitions where a call is cheap; a time budget caps the slow baselines.
        n_queries = 200 if quick else 400
        with memory(home) as mem:
            samples = time_calls(lambda q: mem.retrieve(q), queries[:n_queries], warmup=20)
            probe = mem.retrieve("how do we deploy the EvoClaw docs")
            found_by = sorted({r.method for r in probe})
        gen = ws.generated(n)
        # Quick: a 2 s budget, but never fewer than MIN_BASELINE_CALLS timed calls (at 100k
        # the scan takes ~100 ms a call: 20 calls, so its p95 is not its single worst call).
        budget = QUICK_BASELINE_BUDGET_S if quick else 15.0
        min_n = MIN_BASELINE_CALLS if quick else 5
        scan, load_s, blob_bytes = _scan_baseline(gen, queries[:n_queries], budget, 3, min_n)
        bm25, build_s = _bm25_baseline(gen, queries[:n_queries], budget, 3, min_n)
        per_size[n] = {"retrieve": stats(samples), "scan": stats(scan), "bm25": stats(bm25),
                       "scan_json_load_s": load_s, "scan_json_bytes": blob_bytes,
                       "bm25_build_s": build_s, "methods_seen": found_by}
        if n >= 1_000_000:
            ws.drop_store(n)        # a million-fact store is ~0.5 GB: do not keep it around
        import shutil
        shutil.rmtree(home, ignore_errors=True)
    res.data["sizes"] = per_size

    for n, d in per_size.items():
        is_target = n == 100_000
        res.add(f"retrieve p50 / p95 @ {count_label(n)} facts", p50_p95(d["retrieve"]),
                f"scan {p50_p95(d['scan'])}; BM25 {p50_p95(d['bm25'])}",
                "p95 < 10 ms" if is_target else "",
                verdict(d["retrieve"]["p95"] < TARGET_P95) if is_target else "")
    ns = sorted(per_size)
    lo = 10_000 if 10_000 in per_size else ns[0]
    hi = ns[-1]
    growth = {k: per_size[hi][k]["p50"] / per_size[lo][k]["p50"] for k in ("retrieve", "scan", "bm25")}
    res.data["growth"] = {"from": lo, "to": hi, **growth}
    res.add(f"growth of p50 {count_label(lo)} → {count_label(hi)} ({hi // lo}× facts)",
            f"{growth['retrieve']:.1f}×",
            f"scan {growth['scan']:.1f}×; BM25 {growth['bm25']:.1f}×")
    for n, d in per_size.items():
        res.add(f"baseline set-up @ {count_label(n)}", "—",
                f"JSON load {ms(d['scan_json_load_s'])}; BM25 build {ms(d['bm25_build_s'])}")
    res.notes.append(f"Queries: {len(queries)} generated agent questions (English, Chinese, some "
                     "with no answer); 20 warm-up calls discarded, then one timed call per "
                     "query (baselines: 3 warm-up, then until the query list or a time budget "
                     f"of {QUICK_BASELINE_BUDGET_S if quick else 15:g} s ends, at least "
                     f"{MIN_BASELINE_CALLS if quick else 5} calls; each one's count is its "
                     "stats' n in the results JSON).")
    res.notes.append("Stores are loaded in bulk (Memory.bulk_insert(tier_by_score=True), "
                     "recount_tree, quick consolidation), with a full hot state.")
    plot(per_size, quick)
    return res


def plot(per_size: dict, quick: bool) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    from .util import RESULTS
    ns = sorted(per_size)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label, color in (("retrieve", "Memory.retrieve", "tab:blue"),
                              ("bm25", "BM25 over all facts (rank-bm25)", "tab:orange"),
                              ("scan", "linear scan (flat JSON)", "tab:gray")):
        ax.plot(ns, [per_size[n][key]["p50"] * 1e3 for n in ns], "o-", color=color,
                label=f"{label} p50")
        ax.plot(ns, [per_size[n][key]["p95"] * 1e3 for n in ns], "o--", color=color,
                alpha=0.6, label=f"{label} p95")
    ax.axhline(TARGET_P95 * 1e3, color="tab:red", lw=0.8, ls=":", label="target p95 @100k: 10 ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("facts in memory")
    ax.set_ylabel("query latency (ms)")
    ax.set_title("Retrieval latency vs number of facts")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / ("retrieval_latency_quick.png" if quick else "retrieval_latency.png"), dpi=120)
    plt.close(fig)
