"""Area 3 — cloud sync against a real sqld (sync/launcher.py) on loopback with JWT auth.

The post-conversation push: 10 new facts remembered and one hot-memory change (so the
critical state is pushed too), then `Memory.sync()`; only the sync is timed. Beside it, a
bare `SELECT 1` round trip to the same server through the same client. Requests per sync
are the HranaClient's pipeline_count delta; bytes are request bodies sent and response
bytes received (gzip, as on the wire).
"""

from __future__ import annotations

import contextlib
import time

from evoclaw_memory.cloud.codec import encode_state
from evoclaw_memory.cloud.sql import Stmt

from .data import Generator, build_tree
from .oldpush import run_old_agent
from .paths import run_paths
from .pulls import run_pulls
from .util import (AreaResult, Cloud, Workspace, human_bytes, log, median, memory, p50_p95,
                   stats, verdict)

TITLE = "3. Sync (real sqld, loopback, JWT)"


def run(ws: Workspace) -> AreaResult:
    res = AreaResult("sync", TITLE)
    rounds = 40 if ws.quick else 150
    with Cloud(ws) as cloud, contextlib.ExitStack() as stack:
        plain = _Rig(ws, cloud, stack, encrypted=False)
        sealed = _Rig(ws, cloud, stack, encrypted=True)
        # Round by round, plaintext then encrypted: the ratio's two sides see the same
        # machine (run one after the other, a drift of the VM's speed showed up as 1.1x in
        # one run and 1.3x in the next).
        for i in range(rounds + _Rig.WARMUP):
            plain.round(i)
            sealed.round(i)
        plain.finish()
        sealed.finish()
        res = plain.report(res, rounds)
        run_paths(ws, cloud, res)          # the paths users take (bench/paths.py)
        run_pulls(ws, cloud, res)          # two devices of one agent (bench/pulls.py)
        run_old_agent(ws, cloud, res, res.data["push"])   # 100k archived facts (bench/oldpush.py)
    enc = sealed.report(AreaResult("sync-encrypted", TITLE), rounds)
    plain_p95, enc_p95 = res.data["push"]["p95"], enc.data["push"]["p95"]
    plain_p50, enc_p50 = res.data["push"]["p50"], enc.data["push"]["p50"]
    res.data["encrypted"] = enc.data
    res.notes.append("The encrypted agent (its own cloud database) takes each round right after "
                     "the plaintext one, so both see the same machine.")
    res.add("push p50 / p95, end-to-end encrypted", p50_p95(enc.data["push"]),
            f"plaintext {p50_p95(res.data['push'])}: p50 {enc_p50 / plain_p50:.2f}×, "
            f"p95 {enc_p95 / plain_p95:.2f}×", "p95 < 1.3× plaintext",
            verdict(enc_p95 / plain_p95 < 1.3))
    # Encryption is the default for a network cloud: its push beside its own interleaved
    # SELECT 1 (the encrypted agent's rounds time their own pings, on the same client).
    enc_sel = enc.data["select1"]
    enc_ratio = enc_p95 / enc_sel["p95"]
    res.data["encrypted_push_ratio"] = enc_ratio
    res.add("encrypted push p95 ÷ SELECT 1 p95 (the default for a network cloud; remote "
            "passed in, no user path)", f"{enc_ratio:.2f}×",
            f"push {p50_p95(enc.data['push'])}; SELECT 1 interleaved {p50_p95(enc_sel)}; "
            f"plaintext {res.data['push']['p95'] / res.data['select1']['p95']:.2f}×",
            "< 3×", verdict(enc_ratio < 3.0))
    return res


class _Rig:
    """One agent with 1,000 pushed facts on its own cloud database, synced round by round."""

    WARMUP = 5
    PINGS_PER_ROUND = 3

    def __init__(self, ws: Workspace, cloud: Cloud, stack: contextlib.ExitStack,
                 encrypted: bool):
        self.gen = Generator(55)
        url = cloud.new_db("sync-enc" if encrypted else "sync")
        self.remote = cloud.remote(url)
        stack.callback(self.remote.close)
        self.client = self.remote.sql
        self.remote.ensure_schema()
        self.mem = mem = stack.enter_context(memory(ws.new_home("sync-enc" if encrypted
                                                               else "sync")))
        if encrypted:
            mem.init_encryption("bench passphrase, not a secret", remote=self.remote,
                                scrypt_n=2 ** 14)
        build_tree(mem)
        for k, v in self.gen.hot_updates():
            mem.update_hot(k, v)
        self.seen: set = set()
        for g in self.gen.unique_facts(1_000, max_age_days=365, seen=self.seen):  # pushed once
            mem.remember(g.text, category=g.category, importance=g.importance,
                         created_at=time.time() - g.age_days * 86_400)
        first = mem.sync(remote=self.remote)
        log(f"sync: initial push of {first.pushed_facts} facts in {first.requests} requests"
            + (" (encrypted)" if encrypted else ""))
        self.push_s: list[float] = []
        self.reqs: list[int] = []
        self.sent: list[int] = []
        self.recv: list[int] = []
        self.pushed: list[int] = []
        self.state_pushed: list[bool] = []
        self.state_bytes: list[int] = []
        self.ping: list[float] = []
        self.txn: list[float] = []
        # What any write costs on this server: a one-row write transaction in one request.
        self.client.execute("CREATE TABLE IF NOT EXISTS bench_probe (k INTEGER PRIMARY KEY, v TEXT)")

    def round(self, i: int) -> None:
        mem, client, timed = self.mem, self.client, i >= self.WARMUP
        for g in self.gen.unique_facts(10, max_age_days=1, seen=self.seen):
            mem.remember(g.text, category=g.category, importance=g.importance)
        mem.update_hot("event", {"text": self.gen._fill("Talked about {topic} with {colleague}")})
        # Interleaved with the pushes, so all three see the same machine and server.
        for _ in range(self.PINGS_PER_ROUND):
            t = time.perf_counter()
            client.execute("SELECT 1")
            if timed:
                self.ping.append(time.perf_counter() - t)
        c0, s0, r0 = client.pipeline_count, client.bytes_sent, client.bytes_received
        t = time.perf_counter()
        report = mem.sync(remote=self.remote)
        elapsed = time.perf_counter() - t
        if timed:
            self.push_s.append(elapsed)
            self.reqs.append(client.pipeline_count - c0)
            self.sent.append(client.bytes_sent - s0)
            self.recv.append(client.bytes_received - r0)
            self.pushed.append(report.pushed_facts)
            self.state_pushed.append(report.state_pushed)
            self.state_bytes.append(len(encode_state(mem.critical_state()).encode()))
        t = time.perf_counter()
        client.transaction([Stmt("INSERT OR REPLACE INTO bench_probe VALUES (?, ?)",
                                 (i % 10, "x"))])
        if timed:
            self.txn.append(time.perf_counter() - t)

    def finish(self) -> None:
        self.depth = self.mem.store.outbox_depth()
        self.cloud_rows = self.client.execute("SELECT COUNT(*) FROM cold_memories").rows[0][0]

    def report(self, res: AreaResult, rounds: int) -> AreaResult:
        """The area's rows and data from this agent's rounds."""
        push, sel, wtx = stats(self.push_s), stats(self.ping), stats(self.txn)
        reqs, pushed, state_bytes = self.reqs, self.pushed, self.state_bytes
        every_time = all(self.state_pushed)
        ratio = push["p95"] / sel["p95"]
        res.data.update({"push": push, "select1": sel, "write_txn": wtx,
                         "state_bytes": state_bytes, "requests": reqs,
                         "bytes_sent": self.sent, "bytes_received": self.recv,
                         "facts_per_push": pushed, "state_pushed_every_time": every_time,
                         "outbox_after": self.depth, "cloud_rows": self.cloud_rows,
                         "rounds": rounds})
        # The bench hands its own held remote to mem.sync(remote=...): no user path does that
        # (they are measured as users run them in bench/paths.py, rows marked [plain HTTP]/[TLS]).
        res.add("post-conversation push p50 / p95 (10 facts + state; remote passed in, "
                "no user path)", p50_p95(push),
                f"SELECT 1 {p50_p95(sel)}", "p95 < 3× SELECT 1 p95", verdict(ratio < 3.0))
        res.add("push p95 ÷ SELECT 1 p95", f"{ratio:.2f}×", "", "< 3×", verdict(ratio < 3.0))
        res.add("one-row write transaction p50 / p95 (same client)", p50_p95(wtx),
                f"push p95 ÷ this p95: {push['p95'] / wtx['p95']:.2f}×")
        one = min(reqs) == max(reqs) == 1
        res.add("HTTP requests per sync (remote passed in, no user path)",
                f"{min(reqs)}–{max(reqs)}" if not one else "1",
                f"{rounds} syncs", "exactly 1", verdict(one))
        res.add("bytes on the wire per sync, median (sent / received)",
                f"{human_bytes(median(self.sent))} / {human_bytes(median(self.recv))}",
                f"facts pushed per sync: {min(pushed)}–{max(pushed)}; state every time: "
                f"{every_time}")
        res.add("critical state pushed per sync (JSON)",
                f"{human_bytes(state_bytes[0])} → {human_bytes(state_bytes[-1])}",
                f"over {rounds} syncs with one hot-memory event each")
        res.notes.append(f"{rounds} timed syncs after {self.WARMUP} warm-up, each after 10 "
                         "remember() calls and one hot-memory event (not timed). The agent has "
                         f"1,000 earlier facts. Each round also times {self.PINGS_PER_ROUND} "
                         "`SELECT 1` requests (before the push) and a one-row write transaction "
                         "(after it) through the same HranaClient: interleaved, so all three see "
                         "the same conditions.")
        return res
