"""Requests per sync on a device that pulls another device's changes (part of area 3).

Two devices of ONE agent, each a held `Memory` (its own home) on the same cloud database,
every request counted at the proxy on loopback (bench/tlsproxy.py, plain HTTP). Per round,
device A remembers two facts in a category B's tree lacks (a new one each round while the
tree has room), moves an earlier fact to another category and forgets another, then syncs;
device B then syncs and takes all of it (its tree's nodes and counts move). Both syncs are
counted: B's pull must not cost a second request (the state it would push back is already
the cloud's, from A's push in the same round).
"""

from __future__ import annotations

import time

from .data import Generator
from .tlsproxy import CountingProxy
from .util import AGENT, AreaResult, Cloud, Workspace, log, p50_p95, stats, verdict


def _spread(values: list[int]) -> str:
    return str(values[0]) if min(values) == max(values) else f"{min(values)}–{max(values)}"


def run_pulls(ws: Workspace, cloud: Cloud, res: AreaResult) -> None:
    from evoclaw_memory import Memory
    rounds = 12 if ws.quick else 40
    log("sync: a device pulling another device's changes (two devices of one agent)")
    proxy = CountingProxy(cloud.server.port, ws.root / "tls-pulls", tls=False)
    gen = Generator(91)
    seen: set = set()
    url = proxy.url_for(cloud.new_db("pulls"))

    def device(name: str):
        return Memory.open(AGENT, ws.root / f"pulls-{name}", cloud_url=url,
                           cloud_token=cloud.token, encryption="off")

    reqs: dict[str, list[int]] = {"a": [], "b": []}
    seconds: list[float] = []
    moved = {"pulled": 0, "changed": 0, "forgotten": 0}
    try:
        with device("a") as a, device("b") as b:
            earlier = [a.remember(g.text, category=g.category, importance=g.importance).id
                       for g in gen.unique_facts(2 * rounds + 10, max_age_days=30, seen=seen)]
            a.sync()
            b.restore()
            b.sync()                        # each device's first sync may set up the schema
            for i in range(rounds):
                for g in gen.unique_facts(2, max_age_days=1, seen=seen):
                    a.remember(g.text, category=f"pulls/r{i % 20}", importance=g.importance)
                a.edit(earlier[2 * i], category=f"moved/r{i % 10}")
                a.forget(earlier[2 * i + 1])
                before = proxy.counts()[0]
                a.sync()
                after_a = proxy.counts()[0]
                t = time.perf_counter()
                report = b.sync()
                seconds.append(time.perf_counter() - t)
                reqs["a"].append(after_a - before)
                reqs["b"].append(proxy.counts()[0] - after_a)
                moved["pulled"] += report.pulled_facts
                moved["changed"] += report.changed
                moved["forgotten"] += report.forgotten
            owed = b.store.outbox_depth()
    finally:
        proxy.close()
    one = min(reqs["b"]) == max(reqs["b"]) == 1
    res.data["pulling_device"] = {"requests_b": reqs["b"], "requests_a": reqs["a"],
                                  "seconds_b": stats(seconds), "moved": moved,
                                  "outbox_after_b": owed, "rounds": rounds}
    res.add("[plain HTTP] requests per sync: device pulling another device's changes "
            "(two devices of one agent)", _spread(reqs["b"]),
            f"{rounds} syncs taking {moved['pulled']} new facts in new categories, "
            f"{moved['changed']} moved, {moved['forgotten']} forgotten; the pushing device "
            f"{_spread(reqs['a'])} per sync", "exactly 1", verdict(one))
    res.add("[plain HTTP] pulling device's sync p50 / p95", p50_p95(stats(seconds)),
            f"outbox left on it: {owed} entries (nothing pushed back)")
