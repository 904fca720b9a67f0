"""Area 5 — offline recovery.

10,000 facts are remembered while the cloud is unreachable: every 1,000 facts the agent
tries to sync through a HranaClient pointed at a dead loopback port (nothing listens; it
raises Unavailable and the outbox keeps the work). Then the network "returns": one
`Memory.sync()` against the live sqld drains the outbox. Timed: that drain.
"""

from __future__ import annotations

import time

from .data import DAY, Generator, build_tree
from .util import AreaResult, Cloud, Workspace, human_bytes, log, memory, secs, verdict

TITLE = "5. Offline recovery"
N_OFFLINE = 10_000
TARGET_S = 10.0


def run(ws: Workspace) -> AreaResult:
    from evoclaw_memory.cloud.hrana import HranaClient
    from evoclaw_memory.cloud.remote import SqlRemote
    from evoclaw_memory.errors import Unavailable
    from sync.launcher import free_port

    res = AreaResult("offline", TITLE)
    gen = Generator(77).unique_facts(N_OFFLINE, max_age_days=30)
    dead = SqlRemote(HranaClient(f"http://127.0.0.1:{free_port()}", "x", timeout=1, retries=1,
                                 backoff=0.01), label="dead")
    with Cloud(ws) as cloud:
        url = cloud.new_db("offline")
        live = cloud.remote(url)
        live.ensure_schema()
        home = ws.new_home("offline")
        with memory(home) as mem:
            build_tree(mem)
            for k, v in Generator(78).hot_updates():
                mem.update_hot(k, v)
            failures, attempts = 0, 0
            now = time.time()
            t0 = time.perf_counter()
            for i, g in enumerate(gen, 1):
                mem.remember(g.text, category=g.category, importance=g.importance,
                             created_at=now - g.age_days * DAY,
                             metadata={"urls": g.urls, "commands": g.commands, "paths": g.paths})
                if i % 1_000 == 0:
                    attempts += 1
                    try:
                        mem.sync(remote=dead)
                    except Unavailable:
                        failures += 1
            offline_s = time.perf_counter() - t0
            depth = mem.store.outbox_depth()
            log(f"offline: {N_OFFLINE:,} facts remembered offline in {offline_s:.1f} s; outbox {depth:,}")
            c0 = live.sql.pipeline_count
            t = time.perf_counter()
            report = mem.sync(remote=live)
            drain = time.perf_counter() - t
            requests = live.sql.pipeline_count - c0
            after = mem.store.outbox_depth()
            local_facts = mem.store.count_facts()
        cloud_count = live.count_facts("bench")
        sent = live.sql.bytes_sent
        live.close()
    dead.close()
    res.data.update({"facts": N_OFFLINE, "offline_remember_s": offline_s, "outbox_before": depth,
                     "outbox_after": after, "drain_s": drain, "requests": requests,
                     "report": {"pushed": report.pushed_facts, "requests": report.requests,
                                "state_pushed": report.state_pushed},
                     "cloud_rows": cloud_count, "local_facts": local_facts,
                     "offline_sync_attempts": attempts, "offline_sync_unavailable": failures})
    complete = cloud_count == local_facts and after == 0
    res.add(f"drain of {N_OFFLINE:,} offline facts (one sync)", secs(drain),
            f"{requests} requests, {human_bytes(sent)} sent; {N_OFFLINE / drain:,.0f} facts/s",
            "< 10 s", verdict(drain < TARGET_S))
    res.add("offline syncs that failed cleanly (Unavailable)", f"{failures}/{attempts}",
            f"outbox kept {depth:,} entries", "all", verdict(failures == attempts))
    res.add("cloud holds every fact, outbox empty after", str(complete),
            f"cloud {cloud_count:,} / local {local_facts:,}; outbox {after}", "True",
            verdict(complete))
    res.add("remember × 10,000 while offline (incl. 10 failed syncs)", secs(offline_s))
    return res
