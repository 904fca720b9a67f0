import os
import sqlite3
import stat
import subprocess
import sys

import pytest

from evoclaw_memory import Memory, StoreError, ValidationError
from evoclaw_memory import migrate
from evoclaw_memory.store import LocalStore


def test_database_is_private_and_wal(mem, home):
    db = home / "agents" / "test-agent" / "memory.db"
    assert db.exists()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    assert mem.store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migrations_rerun_is_noop(tmp_path):
    store = LocalStore.open(tmp_path / "m.db")
    version = store.conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
    assert version == migrate.latest_version("local") >= 1
    store.close()
    store = LocalStore.open(tmp_path / "m.db")
    rows = store.conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0]
    assert rows == migrate.latest_version("local")
    store.close()


def test_newer_database_is_refused(tmp_path):
    LocalStore.open(tmp_path / "m.db").close()
    conn = sqlite3.connect(tmp_path / "m.db")
    conn.execute("INSERT INTO schema_version VALUES (999, '0999_future.sql', 0)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        LocalStore.open(tmp_path / "m.db")


def test_corrupted_database_is_a_clear_error_and_kept(home, clock):
    with Memory.open("a", home=home, clock=clock) as m:
        m.remember("keep me", category="x")
    db = home / "agents" / "a" / "memory.db"
    for extra in ("-wal", "-shm"):
        (db.parent / (db.name + extra)).unlink(missing_ok=True)
    db.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not a usable evoclaw database"):
        Memory.open("a", home=home, clock=clock)
    assert db.read_bytes().startswith(b"this is not sqlite")   # nothing deleted
    # Another agent's memory is untouched by the broken one.
    with Memory.open("b", home=home, clock=clock) as other:
        other.remember("fine", category="x")


def test_outbox_written_in_same_transaction(mem):
    fact = mem.remember("The wifi password is on the fridge", category="home")
    kinds = [(k, r) for _, k, r in mem.store.outbox()]
    assert ("fact", fact.id) in kinds
    assert ("state", "state") in kinds
    # The state entry is coalesced: one row, however many changes.
    mem.remember("Second fact", category="home")
    mem.update_hot("identity", {"agent_name": "Claw"})
    assert sum(1 for _, k, _ in mem.store.outbox() if k == "state") == 1
    assert mem.store.outbox()[-1][1] == "state"


def test_failed_change_leaves_no_outbox_or_fact(mem):
    before = mem.store.outbox_depth()
    with pytest.raises(ValidationError):
        mem.remember("x" * 3000, category="home")
    with pytest.raises(ValidationError):
        mem.remember("ok text", category="../etc")
    assert mem.store.outbox_depth() == before
    assert mem.store.count_facts() == 0


def test_audit_log_records_mutations(mem):
    fact = mem.remember("Audit me", category="misc")
    mem.update_hot("lesson", {"text": "Check twice", "importance": 0.9})
    ops = [row[1] for row in mem.store.audit_log()]
    assert "remember" in ops and "hot.lesson" in ops and "tree.add" in ops
    targets = [row[2] for row in mem.store.audit_log()]
    assert fact.id in targets


def test_invalid_agent_ids_rejected(home):
    for bad in ("../../etc", "a/b", "", ".hidden", "x" * 65, "a b"):
        with pytest.raises(ValidationError, match="invalid agent id"):
            Memory.open(bad, home=home)
    assert not (home / "etc").exists()


def _bulk_rows(mem, texts, tier_by_score=False):
    from evoclaw_memory.models import Fact
    now = mem.clock()
    facts = [Fact(id=f"bulk-{i}", text=t, category="home/garden", importance=0.5,
                  created_at=now - 400 * 86_400, last_access=now - 400 * 86_400)
             for i, t in texts]
    return mem.prepare_bulk(facts, tier_by_score)


def test_bulk_insert_skips_known_ids_and_indexes_only_new_rows(mem):
    first = _bulk_rows(mem, [(0, "tomatoes need shade"), (1, "basil likes sun")])
    assert mem.insert_prepared(first) == 2
    again = _bulk_rows(mem, [(1, "basil likes sun"), (2, "mint spreads everywhere")])
    assert mem.insert_prepared(again) == 1
    conn = mem.store.conn
    assert conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0] == 3
    # every full-text row belongs to a stored fact: the skipped one left nothing behind
    assert conn.execute("SELECT COUNT(*) FROM facts_fts").fetchone()[0] == 3
    assert conn.execute("SELECT COUNT(*) FROM facts_fts WHERE rowid NOT IN "
                        "(SELECT rowid FROM facts)").fetchone()[0] == 0
    assert [r.fact.id for r in mem.retrieve("mint spreads")][:1] == ["bulk-2"]
    assert [r.fact.id for r in mem.retrieve("garden basil")][:1] == ["bulk-1"]


def test_bulk_insert_still_fails_loudly_on_other_constraints(mem):
    rows = _bulk_rows(mem, [(0, "a fact")])
    values, body = rows[0]
    broken = [(values[:1] + (None,) + values[2:], body)]        # text NOT NULL
    with pytest.raises(sqlite3.IntegrityError):
        mem.insert_prepared(broken)
    assert mem.store.count_facts() == 0


def _facts_indexes(store):
    return {r[0] for r in store.conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'facts' "
        "AND sql IS NOT NULL")}


def test_deferred_indexes_are_rebuilt_after_the_load(tmp_path):
    store = LocalStore.open(tmp_path / "m.db")
    before = _facts_indexes(store)
    assert {"facts_norm_key", "facts_tier_category", "facts_created"} <= before
    with store.indexes_deferred():
        assert _facts_indexes(store) == set()
    assert _facts_indexes(store) == before
    assert store.get_setting("store.deferred_indexes") is None
    store.close()


def test_deferred_indexes_come_back_after_a_killed_load(tmp_path):
    store = LocalStore.open(tmp_path / "m.db")
    before = _facts_indexes(store)
    store.close()
    # Another process starts a bulk load and dies in the middle of it.
    script = ("import os, sys\nfrom evoclaw_memory.store import LocalStore\n"
              "store = LocalStore.open(sys.argv[1])\n"
              "load = store.indexes_deferred()\n"
              "load.__enter__()\n"
              "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.db")], check=True)
    raw = sqlite3.connect(tmp_path / "m.db")
    assert raw.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' "
                       "AND name = 'facts_norm_key'").fetchone()[0] == 0
    raw.close()
    reopened = LocalStore.open(tmp_path / "m.db")
    assert _facts_indexes(reopened) == before
    assert reopened.get_setting("store.deferred_indexes") is None
    reopened.close()
