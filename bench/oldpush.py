"""Part of area 3: the post-conversation push of an OLD agent, whose cloud archive holds
100,000 facts this device pushed itself (quick: 20,000), beside the same push of the young
agent of the main sync rows.

Before the pull cursors moved past a device's own rows, a one-device agent's cursor stayed
at 0 and every push read every row of the archive after it (`+agent_id AND rowid > 0`: the
whole table, on Turso billed as rows read). The reference row reproduces that push in the
same run, interleaved: the same device with its pull cursor set back to 0 before the push
(no user path takes it now; labelled so).
"""

from __future__ import annotations

import time

from .data import Generator, build_tree
from .restore import _populate, _rows
from .util import AreaResult, Cloud, Workspace, log, memory, p50_p95, stats


def run_old_agent(ws: Workspace, cloud: Cloud, res: AreaResult, young_push: dict) -> None:
    from evoclaw_memory.cloud.codec import encode_state
    from evoclaw_memory.cloud.engine import KV_PULL_CURSOR, device_id
    n = 20_000 if ws.quick else 100_000
    rounds = 20 if ws.quick else 60
    log(f"sync: the push of an old agent ({n:,} facts in its archive)")
    url = cloud.new_db("old-agent")
    remote = cloud.remote(url)
    gen = Generator(91)
    seen: set = set()
    try:
        with memory(ws.new_home("old-agent")) as mem:
            build_tree(mem)
            for k, v in gen.hot_updates():
                mem.update_hot(k, v)
            own = device_id(mem.store)
            rows = [r[:11] + (own,) for r in _rows(n)]         # this device pushed them
            _populate(cloud, url, rows, encode_state(mem.critical_state()))
            mem.sync(remote=remote)                 # an upgraded device's first sync
            moved: list[float] = []
            at_zero: list[float] = []
            for i in range(rounds + 3):
                for label, timings in (("moved", moved), ("zero", at_zero)):
                    for g in gen.unique_facts(10, max_age_days=1, seen=seen):
                        mem.remember(g.text, category=g.category, importance=g.importance)
                    mem.update_hot("event", {"text": gen._fill("Talked about {topic}")})
                    if label == "zero":
                        with mem.store.transaction():
                            mem.store.set_setting(KV_PULL_CURSOR, "0")
                    t = time.perf_counter()
                    mem.sync(remote=remote)
                    if i >= 3:
                        timings.append(time.perf_counter() - t)
    finally:
        remote.close()
    old, before = stats(moved), stats(at_zero)
    res.data["old_agent"] = {"facts": n, "push": old, "push_cursor_at_zero": before}
    res.add(f"post-conversation push of an old agent ({n:,} facts archived) p50 / p95",
            p50_p95(old), f"young agent (1,000) {p50_p95(young_push)}: p50 "
            f"{old['p50'] / young_push['p50']:.2f}×; the same push with its pull cursor at 0, "
            f"as every push ran before (no user path now) {p50_p95(before)}", "", "")
    res.notes.append(f"Old agent: {n:,} archived facts written straight into sqld with this "
                     "device's id, then its first sync; each round (10 facts + a hot event) "
                     "is timed twice, once as it runs and once with the pull cursor set back "
                     "to 0 first, interleaved.")
