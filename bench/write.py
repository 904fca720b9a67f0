"""Area 2 — the write path.

- `remember` throughput: 10,000 generated facts stored one call at a time through the API
  (each call its own local transaction with outbox and audit rows, warm eviction included),
  against the floor of the same number of plain sqlite3 INSERT (facts + FTS5) transactions;
  and the same facts on a full 50-node tree of the 100k-fact store. The three run side by
  side, in alternating chunks of 500 calls, so that their ratios see the same machine.
- `end_conversation` (rule mode) latency on realistic 5–10 turn conversations, beside
  `distill` alone (no storing).
- Storing through the CLI as separate processes (`evoclaw-memory store --text … --category …`,
  as agents call it): a sample of calls, extrapolated to 10,000, beside the API.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time

from .data import DAY, Generator, build_tree
from .install import regular_install
from .util import (AreaResult, Workspace, clean_env, log, memory, ms, p50_p95,
                   run_timed, secs, stats, time_calls, verdict)

TITLE = "2. Write path"
N_REMEMBER = 10_000
# Targets are ratios to what the machine itself allows, measured in the same run (issue 29):
TARGET_REMEMBER_FLOOR = 2.0   # young tree ÷ the floor of plain durable sqlite3 transactions
TARGET_FULL_YOUNG = 1.3       # full 50-node tree of the 100k store ÷ the young tree
N_DURABILITY = 2_000
N_DURABILITY_QUICK = 1_000  # an untargeted reference row: half the calls in the smoke run
CHUNK = 500                 # calls per turn when remember runs side by side (small / full / floor)


class _Floor:
    """The same facts as plain sqlite3 inserts, one transaction each (WAL, synchronous=FULL,
    as the store: every commit durable), a chunk at a time."""

    def __init__(self, path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute("CREATE TABLE facts (rowid INTEGER PRIMARY KEY, id TEXT UNIQUE, "
                          "text TEXT, category TEXT, importance REAL, created_at REAL, "
                          "metadata TEXT)")
        self.conn.execute("CREATE VIRTUAL TABLE facts_fts USING fts5 (body)")

    def insert(self, facts) -> float:
        conn = self.conn
        t = time.perf_counter()
        for g in facts:
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute("INSERT INTO facts (id, text, category, importance, created_at, "
                               "metadata) VALUES (?, ?, ?, ?, ?, '{}')",
                               (g.id, g.text, g.category, g.importance, time.time()))
            conn.execute("INSERT INTO facts_fts (rowid, body) VALUES (?, ?)",
                         (cur.lastrowid, g.text))
            conn.execute("COMMIT")
        return time.perf_counter() - t

    def close(self) -> None:
        self.conn.close()


def _durability_cost(ws: Workspace, facts) -> tuple[float, float]:
    """The price of an fsync per commit: the same remember() calls with the store's
    synchronous=FULL and, for reference only, NORMAL (which a power cut can undo)."""
    times: dict[str, float] = {}
    for mode in ("FULL", "NORMAL"):
        with memory(ws.new_home(f"durability-{mode.lower()}")) as mem:
            mem.store.conn.execute(f"PRAGMA synchronous = {mode}")
            t = time.perf_counter()
            for g in facts:
                mem.remember(g.text, category=g.category, importance=g.importance)
            times[mode] = time.perf_counter() - t
    return times["FULL"], times["NORMAL"]


def _full_tree_store(ws: Workspace, stack: contextlib.ExitStack) -> tuple[object, dict]:
    """A copy of the 100k-fact store whose tree is full (50 nodes), open for the stack's life;
    and what its set-up measured (the one-time entity catch-up)."""
    n_store = 100_000
    log(f"write: a full tree on a {n_store:,}-fact store")
    mem = stack.enter_context(memory(ws.copy_store(n_store)))
    # The store is an old agent's: its facts are linked to their entities (the build's
    # consolidation did it). Time that linking once more on its own, as a store from a
    # release before the entity graph needs it: the one-time catch-up after an upgrade.
    # Quick mode times it on a copy of the 10k store (the same per-fact work, a tenth of it:
    # the smoke run's minute goes elsewhere); the row says how many facts it linked.
    if ws.quick:
        with memory(ws.copy_store(10_000)) as small:
            linked, link_s = _catch_up(small)
    else:
        linked, link_s = _catch_up(mem)
    _fill_tree(mem)
    return mem, {"store_facts": n_store, "catch_up_linked": linked, "catch_up_s": link_s}


def _catch_up(mem) -> tuple[int, float]:
    """(facts linked, seconds): the store's entity graph dropped, then linked again."""
    conn = mem.store.conn
    with mem.store.transaction():
        for table in ("entity_facts", "entity_relations", "entity_aliases", "entities"):
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DELETE FROM kv WHERE key = 'entities.linked_rowid'")
    t_link = time.perf_counter()
    linked = mem.link_new_facts(batch=None)
    return linked, time.perf_counter() - t_link


def _remember_side_by_side(ws: Workspace, gen) -> dict:
    """remember × N on the bench's 42-node tree of a new store, the same facts on the full
    tree of the 100k store (every fifth with a category path the tree does not have, as an
    agent older than a few months sees: categories keep arriving beyond the limit, so leaves
    merge), and the floor's plain transactions: in alternating chunks of CHUNK calls, so that
    the three see the same machine (its fsync drifts over minutes by more than the ratios)."""
    out: dict = {"small": [], "full": [], "floor": 0.0, "full_cpu": 0.0, "new_paths": 0}
    with contextlib.ExitStack() as stack:
        small = stack.enter_context(memory(ws.new_home("remember")))
        build_tree(small)
        full, info = _full_tree_store(ws, stack)
        floor = _Floor(ws.new_home("floor") / "floor.db")
        stack.callback(floor.close)
        log(f"write: remember x {N_REMEMBER:,}, small tree / full tree / floor, side by side")
        now = time.time()
        for start in range(0, len(gen), CHUNK):
            chunk = gen[start:start + CHUNK]
            for g in chunk:
                t = time.perf_counter()
                small.remember(g.text, category=g.category, importance=g.importance,
                               created_at=now - g.age_days * DAY,
                               metadata={"urls": g.urls, "commands": g.commands,
                                         "paths": g.paths})
                out["small"].append(time.perf_counter() - t)
            cpu0 = time.process_time()
            for i, g in enumerate(chunk, start):
                category = g.category
                if i % 5 == 0:
                    out["new_paths"] += 1
                    category = f"{g.category.split('/')[0]}/topic-{i % 37}"
                t = time.perf_counter()
                full.remember(g.text + " (again)", category=category, importance=g.importance,
                              created_at=now - g.age_days * DAY)
                out["full"].append(time.perf_counter() - t)
            out["full_cpu"] += time.process_time() - cpu0
            out["floor"] += floor.insert(chunk)
        out["sizes"] = small.metrics()["sizes"]
        out["tree_nodes_after"] = len(full.tree)
    return {**out, **info}


def _fill_tree(mem) -> None:
    """Fill the tree to its 50 nodes, as an agent older than a few months has it."""
    extra = 0
    while len(mem.tree) < 50 and extra < 60:
        top = ("lessons", "finance", "travel", "health")[extra % 4]
        try:
            mem.tree_add(f"{top}/extra-{extra}", "added to fill the tree")
        except Exception:                                    # noqa: BLE001 - a full parent
            pass
        extra += 1


def _archive_everything(mem) -> int:
    """Put the old agent's facts in its local archive ($EVOCLAW_HOME/cloud.db), as its pushes
    of the years before would have (the bulk-loaded store never queued them), then its first
    sync: an old agent without a cloud pushes into an archive as big as its memory."""
    import sqlite3 as _sqlite3
    from evoclaw_memory.cloud.engine import device_id
    mem.sync()                                   # creates the archive and its schema
    from pathlib import Path
    conn = _sqlite3.connect(Path(mem.config.home) / "cloud.db", isolation_level=None)
    try:
        conn.execute("ATTACH DATABASE ? AS m", (str(mem.store.path),))
        conn.execute("BEGIN")
        cur = conn.execute(
            "INSERT OR IGNORE INTO cold_memories (id, agent_id, text, category, importance, "
            "created_at, access_count, metadata, source, last_access, superseded_by, device_id) "
            "SELECT id, ?, text, category, round(importance, 6), CAST(created_at AS INTEGER), "
            "access_count, metadata, source, last_access, superseded_by, ? FROM m.facts",
            (mem.agent_id, device_id(mem.store)))
        conn.execute("COMMIT")
        n = cur.rowcount
    finally:
        conn.close()
    mem.sync()                                   # its cursors move past its own rows
    return n


def _end_conversation_old_agent(ws: Workspace, convs) -> tuple[list[float], list[float], dict]:
    """end_conversation as agents call it, on an old agent and on a new one, one conversation
    each in turn (so both see the same machine), each a held Memory (bench/README.md).

    The call is the user's: sync on, which with no cloud configured pushes to the local
    archive. The old agent is a copy of the 100k-fact store with its full hot state, its tree
    filled to 50 nodes and an archive holding every fact it has."""
    log("write: end_conversation on an old agent's store (full tree, archive of every fact)")
    old_times: list[float] = []
    young_times: list[float] = []
    with memory(ws.copy_store(100_000)) as old, memory(ws.new_home("conv-young")) as young:
        _fill_tree(old)
        archived = _archive_everything(old)
        info = {"tree_nodes": len(old.tree), "archived": archived}
        for i, conv in enumerate(convs):
            for mem, times in ((old, old_times), (young, young_times)):
                t = time.perf_counter()
                report = mem.end_conversation(conv)
                if i >= 5:
                    times.append(time.perf_counter() - t)
                if report["sync"]["status"] != "pushed":
                    raise RuntimeError(f"end_conversation did not push: {report['sync']}")
        info["pushed_to"] = report["sync"]["target"]
    return old_times, young_times, info


def run(ws: Workspace) -> AreaResult:
    res = AreaResult("write", TITLE)
    quick = ws.quick
    gen = Generator(101).unique_facts(N_REMEMBER, max_age_days=30)

    # -- remember throughput, on a small and on a full tree, beside the floor -------------
    both = _remember_side_by_side(ws, gen)
    total, floor = sum(both["small"]), both["floor"]
    st = stats(both["small"][100:])
    res.data["remember"] = {"n": N_REMEMBER, "total_s": total, "per_call": st,
                            "floor_total_s": floor, "sizes_after": both["sizes"]}
    young_ratio = total / floor
    res.data["remember"]["floor_ratio"] = young_ratio
    res.add(f"remember × {N_REMEMBER:,} (one call each), young tree ÷ floor",
            f"{young_ratio:.2f}× ({secs(total)})",
            f"floor: {N_REMEMBER:,} durable sqlite3 txns (row + FTS5), same run, chunks "
            f"alternating: {secs(floor)}", f"≤ {TARGET_REMEMBER_FLOOR}×",
            verdict(young_ratio <= TARGET_REMEMBER_FLOOR))
    res.add("remember throughput", f"{N_REMEMBER / total:,.0f} facts/s",
            f"floor {N_REMEMBER / floor:,.0f} facts/s")
    res.add("remember per call p50 / p95", p50_p95(st), "(first 100 calls discarded)")
    n_durability = N_DURABILITY_QUICK if quick else N_DURABILITY
    full_s, normal_s = _durability_cost(ws, gen[:n_durability])
    res.data["durability"] = {"n": n_durability, "full_s": full_s, "normal_s": normal_s}
    res.add(f"remember × {n_durability:,}, synchronous=FULL (the store's)", secs(full_s),
            f"synchronous=NORMAL (not used): {secs(normal_s)} ({full_s / normal_s:.1f}×)")

    # -- remember on a full tree of a big store (measured above, chunk by chunk) ----------
    full_s, full_st = sum(both["full"]), stats(both["full"][100:])
    first, last = stats(both["full"][:1000])["p50"], stats(both["full"][-1000:])["p50"]
    info = {k: both[k] for k in ("store_facts", "catch_up_linked", "catch_up_s",
                                  "tree_nodes_after", "new_paths")}
    res.data["remember_full_tree"] = {"n": N_REMEMBER, "total_s": full_s, "per_call": full_st,
                                      "cpu_s": both["full_cpu"], "first_p50": first,
                                      "last_p50": last, **info}
    full_ratio = full_s / total
    res.data["remember_full_tree"]["young_ratio"] = full_ratio
    res.add(f"remember × {N_REMEMBER:,} on a full 50-node tree of a {info['store_facts']:,}-fact "
            "store ÷ young tree", f"{full_ratio:.2f}× ({secs(full_s)})",
            f"the young (42-node) tree above, same run, chunks alternating: {secs(total)} (p50 "
            f"{full_st['p50'] / st['p50']:.2f}×); {info['new_paths']:,} calls with a path beyond "
            f"the tree; CPU {secs(both['full_cpu'])} (the rest is waiting on fsync)",
            f"≤ {TARGET_FULL_YOUNG}×", verdict(full_ratio <= TARGET_FULL_YOUNG))
    res.add("remember per call p50 / p95, full tree, 100k facts", p50_p95(full_st),
            f"first 1,000 calls p50 {ms(first)} · last 1,000 p50 {ms(last)} (no growth)")
    res.add(f"linking the {info['catch_up_linked']:,} facts of a store from before the entity graph",
            secs(info["catch_up_s"]),
            f"{info['catch_up_s'] / max(info['catch_up_linked'], 1) * 1e3:.3f} ms per fact; once, "
            "after an upgrade (consolidation, or 100 per store call); not in the row above")

    # -- end_conversation (rule mode) ----------------------------------------------------
    log("write: end_conversation")
    convs = [Generator(300 + i).conversation() for i in range(60 if quick else 200)]
    turns = [len(c) for c in convs]
    try:
        # (a) the agent's own tree: it starts empty and the distiller files facts as it goes.
        home = ws.new_home("conv")
        with memory(home) as mem:
            mem.distill(convs[0])            # import the distiller before timing
            ec = time_calls(lambda c: mem.end_conversation(c), convs, warmup=10)
            dist = time_calls(lambda c: mem.distill(c), convs, warmup=10)
            added = mem.store.count_facts()
            nodes = len(mem.tree)
        # (b) the 42-node tree of the other benchmarks (10 top-level nodes: the root is full).
        home = ws.new_home("conv-full-tree")
        failures, fail_msg, ok_times = 0, "", []
        with memory(home) as mem:
            build_tree(mem)
            for c in convs:
                t = time.perf_counter()
                try:
                    mem.end_conversation(c)
                    ok_times.append(time.perf_counter() - t)
                except Exception as exc:                       # noqa: BLE001
                    failures += 1
                    fail_msg = f"{type(exc).__name__}: {exc}"
        res.data["end_conversation"] = {"end_conversation": stats(ec), "distill": stats(dist),
                                        "conversations": len(convs), "facts_stored": added,
                                        "tree_nodes": nodes, "turns_min": min(turns),
                                        "turns_max": max(turns),
                                        "full_tree_failures": failures,
                                        "full_tree_error": fail_msg,
                                        "full_tree_ok": stats(ok_times)}
        res.add("end_conversation (rule mode) p50 / p95", p50_p95(stats(ec)),
                f"distill alone {p50_p95(stats(dist))}")
        old_agent, young, old_info = _end_conversation_old_agent(ws, convs[:40 if quick else 100])
        so, sy = stats(old_agent), stats(young)
        ratio = so["p50"] / sy["p50"]
        res.data["end_conversation_old_agent"] = {"old": so, "young": sy, "p50_ratio": ratio,
                                                  **old_info}
        res.add(f"end_conversation p50, old agent (100,000 facts, full hot state, "
                f"{old_info['tree_nodes']}-node tree, {old_info['archived']:,} facts in its "
                f"archive) ÷ young agent", f"{ratio:.2f}× ({p50_p95(so)})",
                f"young agent, same conversations, interleaved: {p50_p95(sy)}; sync on "
                f"(pushed to the {old_info['pushed_to']}, as with no cloud configured)",
                "≤ 1.2×", verdict(ratio <= 1.2))
        res.add("end_conversation failures, 42-node tree with a full root",
                f"{failures}/{len(convs)}",
                (fail_msg[:90] + "…") if fail_msg else "none", "0 (check)",
                verdict(failures == 0))
        res.notes.append(f"end_conversation: {len(convs)} generated conversations of "
                         f"{min(turns)}–{max(turns)} turns (10 warm-up) on a store whose tree the "
                         f"distiller grows itself ({added} facts, {nodes} nodes at the end). The "
                         "same conversations are then replayed on the 42-node benchmark tree "
                         "(10 top-level nodes, the root's limit) to count failures.")
    except (ImportError, AttributeError) as exc:
        res.add("end_conversation (rule mode) p50 / p95", "n/a", f"not runnable: {exc}", "", "n/a")
        res.data["end_conversation"] = {"error": repr(exc)}

    # -- CLI store as separate processes vs the API --------------------------------------
    n_cli = 40 if quick else 200
    log(f"write: CLI store x {n_cli}")
    home = ws.new_home("cli")
    env = clean_env(home)
    _, exe = regular_install(ws.root)
    cli_facts = Generator(202).unique_facts(n_cli + 5, max_age_days=30)
    samples = []
    for i, g in enumerate(cli_facts):
        cmd = [exe, "--agent-id", "bench", "store", "--text", g.text, "--category", g.category,
               "--importance", str(g.importance)]
        for u in g.urls:
            cmd += ["--url", u]
        elapsed, _ = run_timed(cmd, env)
        if i >= 5:
            samples.append(elapsed)
    cst = stats(samples)
    api_mean = total / N_REMEMBER
    res.data["cli_store"] = {"calls": len(samples), "per_call": cst,
                             "extrapolated_10k_s": cst["mean"] * 10_000,
                             "api_10k_s": api_mean * 10_000}
    res.add("CLI `store` per process p50 / p95", p50_p95(cst),
            f"API remember mean {ms(api_mean)}")
    res.add("CLI `store` × 10,000 (extrapolated)", secs(cst["mean"] * 10_000),
            f"API {secs(api_mean * 10_000)} ({cst['mean'] / api_mean:.0f}× slower via CLI)")
    res.notes.append(f"CLI: {len(samples)} `evoclaw-memory store` processes of a regular install "
                     "(bench/install.py) timed (5 warm-up), no `serve` running, wall clock incl. "
                     "interpreter start-up; the per-10k figure is their mean × 10,000, an "
                     "extrapolation, not a measured 10k run.")
    res.notes.append("remember: facts aged 0–30 days, with their metadata; every call is a "
                     "full API call (validation, duplicate check, tree, outbox, audit, eviction "
                     "once warm passes 50 KB).")
    return res
