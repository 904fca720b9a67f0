"""The sync paths users take, measured as they run them (part of area 3, bench/sync.py).

Every request goes through a counting proxy on loopback (bench/tlsproxy.py) in front of the
same sqld, once over plain HTTP and once over TLS (the proxy terminates TLS with a
self-signed certificate that SSL_CERT_FILE makes trusted: full verification, as against
Turso). Per post-conversation sync it counts HTTP requests and new connections (over TLS
each is a handshake):

- held Memory: one `Memory.open()` for the agent's life; per conversation 10 `remember()`
  calls and `end_conversation(messages)` with sync on (what examples/agent_loop.py does);
- fresh Memory: `Memory.open()` + `end_conversation(messages)` + `close()` per conversation
  (an agent host that opens the memory per conversation);
- the CLI: `evoclaw-memory store ...` then `evoclaw-memory sync` as separate processes;
- serve: `Service.tick()` on a held Memory after each heartbeat's changes.
Beside them, `SELECT 1` through a HranaClient on the same proxy, interleaved round by round.
Encryption is off here (the encrypted push is compared in the rows above).
"""

from __future__ import annotations

import contextlib
import os
import time

from .data import Generator, build_tree
from .tlsproxy import CountingProxy
from .util import (AGENT, AreaResult, Cloud, Workspace, clean_env, cli_path, log, p50_p95,
                   run_timed, stats, verdict)


def _spread(values: list[int]) -> str:
    return str(values[0]) if min(values) == max(values) else f"{min(values)}–{max(values)}"


@contextlib.contextmanager
def _cert_env(proxy: CountingProxy):
    """Trust the proxy's certificate in this process (httpx reads SSL_CERT_FILE)."""
    before = os.environ.get("SSL_CERT_FILE")
    if proxy.cert_file is not None:
        os.environ["SSL_CERT_FILE"] = str(proxy.cert_file)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SSL_CERT_FILE", None)
        else:
            os.environ["SSL_CERT_FILE"] = before


def run_paths(ws: Workspace, cloud: Cloud, res: AreaResult) -> None:
    rounds = 12 if ws.quick else 40
    cli_rounds = 6 if ws.quick else 20
    for tls in (False, True):
        proxy = CountingProxy(cloud.server.port, ws.root / "tls", tls=tls)
        try:
            with _cert_env(proxy):
                _one_transport(ws, cloud, res, proxy, rounds, cli_rounds)
        finally:
            proxy.close()


def _one_transport(ws: Workspace, cloud: Cloud, res: AreaResult, proxy: CountingProxy,
                   rounds: int, cli_rounds: int) -> None:
    from evoclaw_memory import Memory
    from evoclaw_memory.agent.service import Service
    from evoclaw_memory.cloud.hrana import HranaClient
    kind = "TLS" if proxy.tls else "plain HTTP"
    log(f"sync: the users' paths over {kind}")
    gen = Generator(77 + proxy.tls)
    seen: set = set()
    token = cloud.token
    urls = {name: proxy.url_for(cloud.new_db(f"path-{name}{'-tls' if proxy.tls else ''}"))
            for name in ("held", "fresh", "cli", "serve")}

    def open_mem(name: str, **kw):
        return Memory.open(AGENT, ws.root / f"path-{name}-{proxy.tls}", cloud_url=urls[name],
                           cloud_token=token, encryption="off", **kw)

    def ten_facts(mem) -> None:
        for g in gen.unique_facts(10, max_age_days=1, seen=seen):
            mem.remember(g.text, category=g.category, importance=g.importance)

    ping = HranaClient(urls["held"], token, timeout=60)
    held = open_mem("held")
    build_tree(held)
    clock = [time.time()]
    svc_mem = open_mem("serve", clock=lambda: clock[0])
    service = Service(svc_mem, heartbeat=60, consolidate=False, clock=lambda: clock[0])
    with open_mem("fresh") as first:          # each device's first sync sets up the schema
        first.end_conversation(gen.conversation())
    held.end_conversation(gen.conversation())
    svc_mem.remember("first heartbeat", category="projects/garden")
    service.tick()
    data: dict = {k: {"requests": [], "connections": [], "seconds": []}
                  for k in ("held", "fresh", "cli", "serve")}
    push_s: list[float] = []
    sel_s: list[float] = []
    facts: list[int] = []

    def counted(name: str, fn) -> object:
        r0, c0 = proxy.counts()
        t = time.perf_counter()
        out = fn()
        data[name]["seconds"].append(time.perf_counter() - t)
        r1, c1 = proxy.counts()
        data[name]["requests"].append(r1 - r0)
        data[name]["connections"].append(c1 - c0)
        return out

    for _round in range(rounds):
        for _ in range(3):
            t = time.perf_counter()
            ping.execute("SELECT 1")
            sel_s.append(time.perf_counter() - t)
        ten_facts(held)
        report = counted("held", lambda: held.end_conversation(gen.conversation()))
        sync = report["sync"]
        if sync["status"] != "pushed":
            raise RuntimeError(f"held Memory: sync {sync['status']}: {sync.get('detail')}")
        push_s.append(sync["report"].seconds)
        facts.append(sync["report"].pushed_facts)

        def fresh_conversation():
            with open_mem("fresh") as mem:
                return mem.end_conversation(gen.conversation())
        counted("fresh", fresh_conversation)
        ten_facts(svc_mem)
        clock[0] = service.next_sync
        counted("serve", service.tick)
    ping.close()
    held.close()
    svc_mem.close()

    home = ws.root / f"path-cli-{proxy.tls}"
    env = clean_env(home)
    env.update(TURSO_DATABASE_URL=urls["cli"], TURSO_AUTH_TOKEN=token, EVOCLAW_ENCRYPTION="off")
    if proxy.cert_file is not None:
        env["SSL_CERT_FILE"] = str(proxy.cert_file)
    cli = [cli_path(), "--agent-id", AGENT]
    run_timed(cli + ["sync"], env)                           # the first sync of this device
    for i in range(cli_rounds):
        run_timed(cli + ["store", "--text", f"cli fact {i} about the garden hose",
                         "--category", "home/maintenance"], env)
        counted("cli", lambda: run_timed(cli + ["sync"], env))

    push, sel = stats(push_s), stats(sel_s)
    ratio = push["p95"] / sel["p95"]
    res.data.setdefault("user_paths", {})[kind] = {
        **data, "push": push, "select1": sel, "facts_per_push": facts, "rounds": rounds}
    labels = {"held": "held Memory, end_conversation", "fresh": "fresh Memory per conversation",
              "cli": "CLI `sync` process", "serve": "serve heartbeat"}
    for name in ("held", "fresh", "cli", "serve"):
        reqs = data[name]["requests"]
        ok = min(reqs) == max(reqs) == 1
        res.add(f"[{kind}] requests per post-conversation sync: {labels[name]}", _spread(reqs),
                f"{len(reqs)} syncs; new connections per sync {_spread(data[name]['connections'])}",
                "exactly 1", verdict(ok))
    res.add(f"[{kind}] end_conversation + sync, held Memory: push p50 / p95 "
            f"({min(facts)}–{max(facts)} facts + state)", p50_p95(push),
            f"SELECT 1 same path {p50_p95(sel)}: p95 {ratio:.2f}×", "p95 < 3× SELECT 1 p95",
            verdict(ratio < 3.0))
    res.add(f"[{kind}] whole call p50 / p95: held end_conversation · fresh open+end+close · "
            "CLI sync",
            " · ".join(p50_p95(stats(data[n]["seconds"])) for n in ("held", "fresh", "cli")),
            "distillation included; the CLI pays start-up")
    if proxy.tls:
        for name in ("held", "serve"):
            conns = data[name]["connections"]
            res.add(f"[TLS] TLS handshakes per sync after the first: {labels[name]}",
                    _spread(conns), f"{len(conns)} syncs", "0", verdict(max(conns) == 0))
    if proxy.tls:
        res.notes.append("[TLS] a fresh Memory (and each CLI process) opens a new connection, "
                         "so it pays one TLS handshake per sync "
                         f"({_spread(data['fresh']['connections'])} per conversation, "
                         f"{_spread(data['cli']['connections'])} per CLI sync); a held Memory "
                         "and serve pay it once.")
