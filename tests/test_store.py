import os
import sqlite3
import stat

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
