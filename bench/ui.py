"""Area 12 — the owner's window (issue 28): page loads at 100,000 facts.

On a copy of the 100k-fact store, the page served for real (`evoclaw_memory.ui.server`,
uvicorn on a loopback port, in a thread as `serve --ui` runs it) and loaded over HTTP by a
logged-in client: p50/p95 of the facts page (newest first, deep pages, each filter) and of
the overview (sizes, counts, sync status, the two weekly plots). Target: the facts page
p95 < 200 ms. A search (`?q=`: the agent's retrieve, up to 100 results) is reported beside.
"""

from __future__ import annotations

import random

from .util import AreaResult, Workspace, log, ms, p50_p95, stats, time_calls, verdict

TITLE = "12. Owner's window"
N = 100_000
TARGET_MS = 200.0


def run(ws: Workspace) -> AreaResult:
    import httpx

    from evoclaw_memory.config import load_config
    from evoclaw_memory.ui.server import start_in_thread

    from .util import AGENT
    res = AreaResult("ui", TITLE)
    n = 10_000 if ws.quick else N
    home = ws.copy_store(n)
    calls = 40 if ws.quick else 200
    running = start_in_thread(load_config(home=home, agent_id=AGENT), port=0)
    try:
        base = f"http://127.0.0.1:{running.port}"
        with httpx.Client(follow_redirects=True, timeout=60) as client:
            assert client.get(running.url).status_code == 200        # logs in (cookie)
            paths = _facts_paths(running.memory, n, calls, random.Random(12))

            def load(path: str) -> None:
                response = client.get(base + path)
                if response.status_code != 200:
                    raise RuntimeError(f"GET {path}: {response.status_code}")

            facts_s = time_calls(load, paths)
            overview_s = time_calls(load, ["/"] * (calls + 5))
            queries = ["what does the owner drink", "where did I park", "dentist appointment",
                       "project deadline", "birthday present ideas"]
            search_s = time_calls(load, [f"/facts?q={q}" for q in queries] * (calls // 25 + 2))
    finally:
        running.stop()
    fs, os_, ss = stats(facts_s), stats(overview_s), stats(search_s)
    log(f"ui: facts page p95 {ms(fs['p95'])}, overview p95 {ms(os_['p95'])}, "
        f"search p95 {ms(ss['p95'])}")
    res.data.update({"facts": n, "facts_page": fs, "overview": os_, "search": ss})
    res.add(f"facts page at {n:,} facts (GET /facts, HTTP)", p50_p95(fs),
            f"{len(facts_s)} loads: pages 1 to the last, each filter", f"p95 < {TARGET_MS:g} ms",
            verdict(fs["p95"] * 1000 < TARGET_MS))
    res.add(f"overview at {n:,} facts (GET /)", p50_p95(os_), f"{len(overview_s)} loads", "", "")
    res.add(f"facts page with a search (?q=, retrieve) at {n:,}", p50_p95(ss),
            f"{len(search_s)} loads", "", "")
    res.notes.append("Loads are real HTTP requests to the page served by uvicorn on loopback "
                     "(guard, lock, SQL, template), one at a time after warm-up loads.")
    return res


def _facts_paths(mem, n: int, calls: int, rng: random.Random) -> list[str]:
    """Facts-page addresses: the first page, random deep pages, and every filter."""
    from evoclaw_memory.ui.queries import PER_PAGE
    pages = max(1, n // PER_PAGE)
    categories = [node.path for node in mem.store.tree_nodes()] or ["general"]
    shapes = [lambda: "/facts",
              lambda: f"/facts?page={rng.randint(1, pages)}",
              lambda: f"/facts?tier=cold&page={rng.randint(1, 20)}",
              lambda: "/facts?tier=warm",
              lambda: f"/facts?category={rng.choice(categories)}",
              lambda: "/facts?pinned=yes",
              lambda: "/facts?private=yes",
              lambda: f"/facts?since=202{rng.randint(0, 5)}-0{rng.randint(1, 9)}-01"]
    return [rng.choice(shapes)() for _ in range(calls + 5)]
