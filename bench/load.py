"""Area 9 — many devices, one server: concurrent agents against one sqld on loopback.

- Load: AGENTS agents (threads, each its own device, home and agent id) share ONE cloud
  database (a service hosting many agents on one Turso database, or a family's devices).
  Each ends a 5–10-turn conversation every 1–3 s (a random pause) with sync on, through
  its own held Memory, for SECONDS seconds; then each drains its outbox once more. Reported:
  pushes/s, p50/p95 of the push (SyncReport.seconds), pushes that were queued or failed
  (their work stays in the outbox for the next one), conflicts merged. Verified afterwards:
  the cloud holds every fact of every agent exactly once (ids equal the device's; no text
  stored twice where the device holds it once), and every agent's critical state in the
  cloud equals its device's (hot memory and tree with counts).
- Two devices of ONE agent: both change the owner profile (their own key) and remember a
  fact, then sync at the same moment (a barrier), 200 rounds; each round both sync again
  and the cloud must hold both rounds' values: no update lost, every fact once.
Loopback only; every loop is bounded by a deadline or a round count.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import msgspec

from .data import Generator
from .util import AreaResult, Cloud, Workspace, log, p50_p95, stats, verdict

TITLE = "9. Many devices, one server (load)"
AGENTS = 50
ROUNDS_TWO_DEVICES = 200


def run(ws: Workspace) -> AreaResult:
    res = AreaResult("load", TITLE)
    # Quick: 6 s (+2 s of staggered starts) still gives each of the 50 agents ~4
    # conversations, ~200 pushes in all: the smoke run's check, not a soak.
    seconds = 6.0 if ws.quick else 60.0
    with Cloud(ws) as cloud:
        _many_agents(ws, cloud, res, seconds)
        _two_devices(ws, cloud, res)
    return res


def _open(ws: Workspace, cloud: Cloud, url: str, agent: str, label: str):
    from evoclaw_memory import Memory
    return Memory.open(agent, ws.root / f"load-{label}", cloud_url=url,
                       cloud_token=cloud.token, encryption="off")


def _many_agents(ws: Workspace, cloud: Cloud, res: AreaResult, seconds: float) -> None:
    url = cloud.new_db("load")
    log(f"load: {AGENTS} agents for {seconds:.0f} s on one database")
    mems = [_open(ws, cloud, url, f"agent-{i:02d}", f"agent-{i:02d}") for i in range(AGENTS)]
    mems[0].sync()                                   # the schema, once
    push_s: list[float] = []
    status: Counter[str] = Counter()
    merged = [0]
    lock = threading.Lock()
    start = threading.Barrier(AGENTS)
    deadline = [0.0]

    def agent(i: int) -> None:
        mem, gen, rng = mems[i], Generator(1000 + i), random.Random(i)
        start.wait()
        time.sleep(rng.uniform(0, 2.0))              # not all at the same instant
        while time.monotonic() < deadline[0]:
            report = mem.end_conversation(gen.conversation())
            sync = report["sync"]
            with lock:
                status[sync["status"]] += 1
                if sync["status"] == "pushed":
                    push_s.append(sync["report"].seconds)
                    merged[0] += int(sync["report"].merged)
            pause = rng.uniform(1.0, 3.0)
            if time.monotonic() + pause >= deadline[0]:
                break
            time.sleep(pause)

    threads = [threading.Thread(target=agent, args=(i,), name=f"agent-{i}") for i in range(AGENTS)]
    deadline[0] = time.monotonic() + seconds + 2.0
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 120)
    elapsed = time.monotonic() - began
    alive = sum(t.is_alive() for t in threads)
    log(f"load: {sum(status.values())} conversations in {elapsed:.1f} s; draining")
    for mem in mems:
        if mem.store.outbox_depth():
            mem.sync()
    lost, extra, dup_texts, state_diff, facts_total = _verify(mems)
    for mem in mems:
        mem.close()
    push = stats(push_s)
    pushes = status["pushed"]
    res.data["agents"] = {"agents": AGENTS, "seconds": elapsed, "status": dict(status),
                          "push": push, "merged": merged[0], "lost": lost, "extra": extra,
                          "duplicated_texts": dup_texts, "state_mismatches": state_diff,
                          "facts": facts_total, "threads_stuck": alive}
    res.add("concurrent agents (threads, each its own device and home), one database",
            f"{AGENTS}", f"{elapsed:.0f} s; {sum(status.values())} conversations", ">= 50",
            verdict(AGENTS >= 50 and alive == 0))
    res.add("pushes/s (end_conversation with sync on)", f"{pushes / elapsed:.1f}",
            f"{pushes} pushed, {status['queued']} queued, {status['failed']} failed (work kept "
            "in the outbox)")
    res.add("push p50 / p95 under load", p50_p95(push), f"{len(push_s)} pushes; conflicts "
            f"merged {merged[0]}")
    res.add("facts lost / duplicated in the cloud", f"{lost} / {extra + dup_texts}",
            f"{facts_total:,} facts on the devices", "0 / 0",
            verdict(lost == 0 and extra + dup_texts == 0))
    res.add("agents whose cloud critical state differs from the device's", str(state_diff),
            f"of {AGENTS}", "0", verdict(state_diff == 0))


def _verify(mems) -> tuple[int, int, int, int, int]:
    """(lost, extra, duplicated texts, state mismatches, facts) over every agent."""
    from evoclaw_memory.lifecycle.cloud_side import held_remote
    lost = extra = dup = diff = total = 0
    for mem in mems:
        remote = held_remote(mem)
        rows = remote.sql.execute("SELECT id, text FROM cold_memories WHERE agent_id = ?",
                                  (mem.agent_id,)).rows
        local = {f.id: f.text for f in mem.store.iter_facts()}
        cloud_ids = [r[0] for r in rows]
        total += len(local)
        lost += len(set(local) - set(cloud_ids))
        extra += len(set(cloud_ids) - set(local)) + len(cloud_ids) - len(set(cloud_ids))
        cloud_texts, local_texts = Counter(r[1] for r in rows), Counter(local.values())
        dup += sum(max(0, n - local_texts[t]) for t, n in cloud_texts.items())
        state = remote.pull_state(mem.agent_id)
        if state is None or state.state is None or not _same_state(state.state, mem):
            diff += 1
    return lost, extra, dup, diff, total


def _same_state(state, mem) -> bool:
    hot = msgspec.json.encode(mem.store.load_hot()) == msgspec.json.encode(state.hot)
    tree = sorted((n.path, n.warm_count, n.cold_count) for n in mem.store.tree_nodes())
    return hot and tree == sorted((n.path, n.warm_count, n.cold_count) for n in state.tree)


def _two_devices(ws: Workspace, cloud: Cloud, res: AreaResult) -> None:
    url = cloud.new_db("two-devices")
    log(f"load: two devices of one agent, {ROUNDS_TWO_DEVICES} simultaneous rounds")
    a = _open(ws, cloud, url, "shared", "device-a")
    b = _open(ws, cloud, url, "shared", "device-b")
    a.sync()
    b.sync()
    barrier = threading.Barrier(2)
    merged = Counter()
    lost_rounds: list[int] = []
    errors: list[str] = []

    def push(mem, name: str) -> None:
        barrier.wait()
        try:
            merged[name] += int(mem.sync().merged)
        except Exception as exc:                  # noqa: BLE001 - counted, then retried below
            errors.append(f"{type(exc).__name__}: {exc}")

    from evoclaw_memory.lifecycle.cloud_side import held_remote
    for i in range(ROUNDS_TWO_DEVICES):
        a.update_hot("owner_profile", {"device_a_round": str(i)})
        b.update_hot("owner_profile", {"device_b_round": str(i)})
        a.remember(f"device A noted round {i} of the garden log", category="projects/garden")
        b.remember(f"device B noted round {i} of the garden log", category="projects/garden")
        threads = [threading.Thread(target=push, args=(m, n)) for m, n in ((a, "a"), (b, "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for mem in (a, b, a):                   # the loser merges and pushes; the winner pulls
            mem.sync()
        state = held_remote(a).pull_state("shared")
        profile = state.state.hot.owner_profile if state and state.state else {}
        if profile.get("device_a_round") != str(i) or profile.get("device_b_round") != str(i):
            lost_rounds.append(i)
    rows = held_remote(a).sql.execute("SELECT id FROM cold_memories WHERE agent_id = ?",
                                      ("shared",)).rows
    ids = [r[0] for r in rows]
    both = {f.id for f in a.store.iter_facts()} | {f.id for f in b.store.iter_facts()}
    facts_ok = len(ids) == len(set(ids)) == 2 * ROUNDS_TWO_DEVICES and set(ids) == both
    a.close()
    b.close()
    res.data["two_devices"] = {"rounds": ROUNDS_TWO_DEVICES, "lost_rounds": lost_rounds,
                               "merged": dict(merged), "errors": errors[:5],
                               "cloud_facts": len(ids), "facts_ok": facts_ok}
    res.add(f"two devices of one agent, simultaneous pushes × {ROUNDS_TWO_DEVICES}: state "
            "updates lost", str(len(lost_rounds)),
            f"conflicts merged {sum(merged.values())}; {len(errors)} push error(s) retried",
            "0", verdict(not lost_rounds))
    res.add("two devices: facts in the cloud, each once", f"{len(ids)}",
            f"{2 * ROUNDS_TWO_DEVICES} remembered", f"{2 * ROUNDS_TWO_DEVICES}, once each",
            verdict(facts_ok))
