"""Area 4 — restore onto a new device, from a real sqld.

The cloud database of an agent is populated directly (SqlRemote.ensure_schema, then
multi-row INSERTs through the HranaClient in transactions of 5,000 rows): N cold facts aged
0–10 years, the full hot state and the tree (with counts) in critical_state, and recent
facts (~1,000 for 100k; 1% below) that restore should bring back as the warm working set.

- restore: `Memory.restore()` on a fresh home — hot memory, tree, MEMORY.md and warm.
- full mirror: `Memory.restore(full=True)` on another fresh home — plus the whole archive.
- floor: the same rows, already in memory as Python tuples, inserted into a local SQLite
  file (plain sqlite3 executemany into a table with the same columns + an FTS5 table over
  the text, one transaction, WAL, synchronous=NORMAL).
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import msgspec

from .data import DAY, Generator, TREE
from .util import (AGENT, AreaResult, Cloud, Workspace, count_label, human_bytes, log, median,
                   memory, secs, verdict)

TITLE = "4. Restore (real sqld → fresh device)"
ROWS_PER_STMT = 200
MIRROR_FLOOR_RATIO = 2.5        # restore --full @100k ÷ its local insert floor (issue 29)
ROWS_PER_TXN = 5_000
COLS = ("id, agent_id, text, category, importance, created_at, access_count, metadata, source, "
        "last_access, superseded_by, device_id")


def sizes(quick: bool) -> list[int]:
    return [1_000, 10_000, 100_000]


def repeats(n: int, quick: bool) -> int:
    if n >= 100_000:
        # 5: the encrypted/plaintext ratio at 100k is judged against 1.3x and reads 1.1-1.3x;
        # with 3 runs a side, one slow run moved the median by ~0.1x.
        return 1 if quick else 5
    if n >= 10_000:
        return 2 if quick else 3
    return 3 if quick else 5


def fast_repeats(n: int, quick: bool) -> int:
    """Runs of the usable-device restore: ~0.1 s each, enough for a steady median. Quick
    mode takes 3 at 100k (plaintext and encrypted alternating: 6 restores); its target
    (< 5 s) is 20 times the figure."""
    return 3 if quick and n >= 100_000 else 7


def floor_repeats(n: int, quick: bool) -> int:
    """Runs of the floor, a ratio's denominator (at least as many as the mirror's): 3;
    quick mode 2 at 100k (~2 s each), the first right after the mirrors it is compared with."""
    return 2 if quick and n >= 100_000 else 3


def _rows(n: int) -> list[tuple]:
    """The archive rows: n cold facts over 10 years plus recent warm candidates."""
    recent = 1_000 if n >= 100_000 else max(10, n // 100)
    g = Generator(4000 + n)
    now = time.time()
    enc = msgspec.json.Encoder()
    rows = []
    for fact in g.facts(n - recent, max_age_days=3650) + g.facts(recent, max_age_days=20):
        created = int(now - fact.age_days * DAY)
        meta = enc.encode({k: v for k, v in (("urls", fact.urls), ("commands", fact.commands),
                                             ("paths", fact.paths)) if v}).decode()
        rows.append((fact.id, AGENT, fact.text, fact.category, fact.importance, created,
                     0, meta, "bench", float(created), None, "dev-origin"))
    return rows


def _critical_state(ws: Workspace, rows: list[tuple]) -> str:
    """A full hot state and the 42-node tree with the archive's counts, as the cloud holds it."""
    from evoclaw_memory.cloud.codec import encode_state
    home = ws.new_home("origin")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[3]] = counts.get(r[3], 0) + 1
    with memory(home) as mem:
        for path, desc in TREE:
            mem.tree_add(path, desc)
        for k, v in Generator(9).hot_updates():
            mem.update_hot(k, v)
        state = mem.critical_state()
    state.tree = [msgspec.structs.replace(node, cold_count=counts.get(node.path, 0))
                  for node in state.tree]
    shutil.rmtree(home, ignore_errors=True)
    return encode_state(state)


PASSPHRASE = "bench passphrase, not a secret"


def _sealed(rows: list[tuple], state: str) -> tuple[list[tuple], str, str]:
    """The same archive end-to-end encrypted, as an encrypted device would have pushed it:
    (sealed rows, sealed state, the keyring record for evoclaw_keys)."""
    from evoclaw_memory.cloud.crypto import Keyring, encode_record
    from evoclaw_memory.cloud.codec import SealedCodec, decode_state
    from evoclaw_memory.models import Fact, Metadata
    ring, record, _ = Keyring.create(AGENT, PASSPHRASE, scrypt_n=2 ** 14)
    codec = SealedCodec(ring)
    sealed = []
    for r in rows:
        fact = Fact(id=r[0], text=r[2], category=r[3], importance=r[4], created_at=r[5],
                    last_access=r[9], metadata=msgspec.json.decode(r[7], type=Metadata),
                    source=r[8])
        # The bench writes the 12 columns of COLS; the later ones (flags, change clocks,
        # speaker) are zero/NULL for these facts, as their defaults in the cloud table are.
        sealed.append(codec.fact_args(AGENT, r[11], fact)[:len(COLS.split(","))])
    return sealed, codec.state_data(decode_state(state)), encode_record(record)


def _populate(cloud: Cloud, url: str, rows: list[tuple], state: str,
              keyring: str | None = None) -> float:
    from evoclaw_memory.cloud.sql import Stmt
    remote = cloud.remote(url, timeout=120)
    remote.ensure_schema()
    if keyring:
        remote.put_keyring(AGENT, keyring, None)
    t = time.perf_counter()
    one = "(" + ", ".join("?" * 12) + ")"
    for start in range(0, len(rows), ROWS_PER_TXN):
        chunk = rows[start:start + ROWS_PER_TXN]
        stmts = []
        for s in range(0, len(chunk), ROWS_PER_STMT):
            part = chunk[s:s + ROWS_PER_STMT]
            stmts.append(Stmt(f"INSERT INTO cold_memories ({COLS}) VALUES "
                              + ", ".join([one] * len(part)),
                              [v for row in part for v in row]))
        remote.sql.transaction(stmts)
    remote.sql.execute("INSERT INTO critical_state (agent_id, data, updated_at, version, device_id) "
                       "VALUES (?, ?, ?, 1, 'dev-origin')", (AGENT, state, int(time.time())))
    elapsed = time.perf_counter() - t
    remote.close()
    return elapsed


def _floor(path, rows: list[tuple]) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE facts (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
                 "agent_id TEXT, text TEXT NOT NULL, category TEXT NOT NULL, importance REAL, "
                 "created_at REAL, access_count INTEGER, metadata TEXT, source TEXT, "
                 "last_access REAL, superseded_by TEXT, device_id TEXT)")
    conn.execute("CREATE INDEX facts_cat ON facts (category)")
    conn.execute("CREATE INDEX facts_created ON facts (created_at)")
    conn.execute("CREATE VIRTUAL TABLE facts_fts USING fts5 (body)")
    t = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany(f"INSERT INTO facts (rowid, {COLS}) VALUES (?, {', '.join('?' * 12)})",
                     [(i + 1, *r) for i, r in enumerate(rows)])
    conn.executemany("INSERT INTO facts_fts (rowid, body) VALUES (?, ?)",
                     [(i + 1, r[2]) for i, r in enumerate(rows)])
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - t
    conn.close()
    return elapsed


def _restore_once(ws: Workspace, cloud: Cloud, url: str, full: bool,
                  passphrase: str | None = None) -> dict:
    home = ws.new_home("restored-full" if full else "restored")
    remote = cloud.remote(url, timeout=120)
    t = time.perf_counter()
    with memory(home) as mem:
        report = mem.restore(full=full, remote=remote, passphrase=passphrase)
        elapsed = time.perf_counter() - t
        usable = bool(mem.retrieve("deploy the EvoClaw docs"))
        sizes = mem.metrics()["sizes"]
    out = {"seconds": elapsed, "key_seconds": report.key_seconds,
           "requests": remote.sql.pipeline_count,
           "bytes_received": remote.sql.bytes_received, "warm_facts": report.warm_facts,
           "mirrored": report.mirrored_facts, "archive": report.archive_facts,
           "retrieve_works": usable, "sizes": sizes}
    remote.close()
    shutil.rmtree(home, ignore_errors=True)
    return out


def run(ws: Workspace) -> AreaResult:
    res = AreaResult("restore", TITLE)
    per_size = {}
    with Cloud(ws) as cloud:
        for n in sizes(ws.quick):
            rows = _rows(n)
            state = _critical_state(ws, rows)
            url = cloud.new_db(f"restore{n}")
            k = repeats(n, ws.quick)
            k_fast = fast_repeats(n, ws.quick)
            encrypted = n == max(sizes(ws.quick))
            if encrypted:
                # The two archives are written at once (the client mostly waits on sqld,
                # which has the other core): not timed, only the bench's own set-up.
                enc_url = cloud.new_db(f"restore{n}enc")
                with ThreadPoolExecutor(max_workers=1) as pool:
                    pending = pool.submit(_populate, cloud, url, rows, state)
                    sealed_rows, sealed_state, keyring = _sealed(rows, state)
                    _populate(cloud, enc_url, sealed_rows, sealed_state, keyring)
                    pop = pending.result()
            else:
                pop = _populate(cloud, url, rows, state)
            log(f"restore: populated {n:,} rows in {pop:.1f} s")
            # The runs each ratio compares alternate, round by round, so that both sides see
            # the same machine: on a shared VM its speed drifts over a minute by more than the
            # margins judged here.
            fast, enc_fast, full, enc_full, floors = [], [], [], [], []
            for _ in range(k_fast):
                fast.append(_restore_once(ws, cloud, url, full=False))
                if encrypted:
                    enc_fast.append(_restore_once(ws, cloud, enc_url, False, PASSPHRASE))
            for _ in range(max(k, floor_repeats(n, ws.quick))):
                if len(full) < k:
                    full.append(_restore_once(ws, cloud, url, full=True))
                    if encrypted:
                        enc_full.append(_restore_once(ws, cloud, enc_url, True, PASSPHRASE))
                path = ws.new_home("floor") / "floor.db"
                floors.append(_floor(path, rows))
                shutil.rmtree(path.parent, ignore_errors=True)
            per_size[n] = {
                "populate_s": pop, "repeats": k, "fast_repeats": k_fast,
                "floor_repeats": len(floors),
                "restore_s": median([r["seconds"] for r in fast]),
                "full_s": median([r["seconds"] for r in full]),
                "floor_s": median(floors),
                "restore": fast[-1], "full": full[-1],
            }
            log(f"restore: {n:,}: restore {per_size[n]['restore_s']:.2f} s, full "
                f"{per_size[n]['full_s']:.2f} s, floor {per_size[n]['floor_s']:.2f} s")
            if encrypted:
                per_size[n]["encrypted"] = {
                    "restore_s": median([r["seconds"] for r in enc_fast]),
                    "full_s": median([r["seconds"] for r in enc_full]),
                    "restore_data_s": median([r["seconds"] - r["key_seconds"] for r in enc_fast]),
                    "plain_restore_data_s": median([r["seconds"] - r["key_seconds"] for r in fast]),
                    "key_s": median([r["key_seconds"] for r in enc_fast]),
                    "complete": enc_full[-1]["archive"] == n and enc_full[-1]["retrieve_works"]}
                log(f"restore: {n:,} encrypted: restore "
                    f"{per_size[n]['encrypted']['restore_s']:.2f} s, full "
                    f"{per_size[n]['encrypted']['full_s']:.2f} s")
    res.data["sizes"] = per_size
    for n, d in per_size.items():
        big = n == 100_000
        r, f = d["restore"], d["full"]
        res.add(f"restore (usable device) @ {count_label(n)}", secs(d["restore_s"]),
                f"{r['requests']} requests, {human_bytes(r['bytes_received'])} in; "
                f"{r['warm_facts']} warm facts",
                "< 5 s" if big else "", verdict(d["restore_s"] < 5) if big else "")
        ratio = d["full_s"] / d["floor_s"]
        res.add(f"restore --full (mirror) @ {count_label(n)}", secs(d["full_s"]),
                f"floor {secs(d['floor_s'])} ({ratio:.2f}×); {f['requests']} requests, "
                f"{human_bytes(f['bytes_received'])} in",
                f"< 30 s and ≤ {MIRROR_FLOOR_RATIO}× floor" if big else "",
                verdict(d["full_s"] < 30 and ratio <= MIRROR_FLOOR_RATIO) if big else "")
    for n, d in per_size.items():
        enc = d.get("encrypted")
        if not enc:
            continue
        # scrypt (one unlock per restore) is in the encrypted times; the bench keyring uses
        # N=2^14, a device's real one 2^17 (~0.3 s more, once). The mirror restores all
        # 100,000 facts: its ratio is the target. The fast restore moves a few hundred facts in
        # well under a second, so the fixed unlock dominates its ratio: shown with and
        # without it, judged on the data part.
        ratio = enc["full_s"] / d["full_s"]
        res.add(f"restore --full encrypted vs plaintext @ {count_label(n)}", secs(enc["full_s"]),
                f"plaintext {secs(d['full_s'])} ({ratio:.2f}×)", "< 1.3×", verdict(ratio < 1.3))
        whole = enc["restore_s"] / d["restore_s"]
        data = enc["restore_data_s"] / enc["plain_restore_data_s"]
        res.add(f"restore encrypted vs plaintext @ {count_label(n)}", secs(enc["restore_s"]),
                f"plaintext {secs(d['restore_s'])} ({whole:.2f}×); without the one-time key "
                f"unlock ({secs(enc['key_s'])}): {data:.2f}×", "< 1.3× (data)", verdict(data < 1.3))
    checks = all(d["full"]["sizes"]["warm_facts"] + d["full"]["sizes"]["cold_facts"]
                 == d["full"]["archive"] == n and d["restore"]["retrieve_works"]
                 and d["full"]["retrieve_works"] for n, d in per_size.items())
    res.data["complete"] = checks
    res.notes.append("Median of " + ", ".join(f"{d['fast_repeats']} / {d['repeats']} / "
                                              f"{d['floor_repeats']} @ {count_label(n)}"
                                              for n, d in per_size.items())
                     + " runs (restore / mirror / floor); each on a fresh home with "
                     "a fresh client (schema check included). The runs compared in a ratio "
                     "alternate (plaintext, encrypted, floor; round after round). "
                     f"Every mirror holds the whole archive locally and retrieval works after "
                     f"each restore: {checks}.")
    res.notes.append("Floor: the same rows already decoded in memory, inserted with plain "
                     "sqlite3 executemany (same columns + FTS5 over the raw text) in one "
                     "transaction; no network, no tokenising, no tree.")
    plot(per_size, ws.quick)
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
    ax.plot(ns, [per_size[n]["restore_s"] for n in ns], "o-", label="restore (usable device)")
    ax.plot(ns, [per_size[n]["full_s"] for n in ns], "o-", label="restore --full (mirror)")
    ax.plot(ns, [per_size[n]["floor_s"] for n in ns], "o--", color="tab:gray",
            label="floor: local sqlite3 executemany + FTS5")
    ax.axhline(5, color="tab:red", lw=0.8, ls=":", label="targets @100k: restore 5 s")
    ax.axhline(30, color="tab:purple", lw=0.8, ls=":", label="full mirror 30 s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("facts in the cloud archive")
    ax.set_ylabel("seconds")
    ax.set_title("Restore time vs archive size (real sqld on loopback)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / ("restore_time_quick.png" if quick else "restore_time.png"), dpi=120)
    plt.close(fig)
