"""Restore safety and local damage, on a real SQLite file and the embedded cloud file
($EVOCLAW_HOME/cloud.db): a restore never drops unsynced work unasked, a database that held
memory and is now empty or unreadable is reported as damage (and restore is the way out), a
read-only home says so, and cloud times read back exactly as written."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.cloud.codec import SECONDS_BOUND, cloud_seconds
from evoclaw_memory.errors import StoreError, ValidationError


@pytest.fixture
def run(home):
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(cli, list(args), catch_exceptions=False)
    return invoke


def db_path(home: Path) -> Path:
    return home / "agents" / "default" / "memory.db"


def error_line(result) -> str:
    """The one `error:` line of a failed run (no traceback, nothing else on stderr)."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def ok(result):
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def remember_and_sync(run, *texts: str) -> None:
    for text in texts:
        ok(run("store", "--text", text, "--category", "projects/garden"))
    ok(run("sync"))


def truncate(db: Path) -> None:
    for extra in db.parent.glob("memory.db-*"):
        extra.unlink()
    db.write_bytes(b"")


# -- item 6: an empty or unreadable database is damage ----------------------------------------

def test_truncated_database_is_damage_and_restore_force_is_the_way_out(run, home):
    remember_and_sync(run, "The fig tree gets repotted in March")
    db = db_path(home)
    assert (db.parent / "memory.db.marker").exists()
    truncate(db)
    for args in (("hot",), ("store", "--text", "a new fact"), ("retrieve", "fig"), ("sync",),
                 ("restore",)):
        result = run(*args)
        assert result.exit_code == StoreError.exit_code, args
        line = error_line(result)
        assert "memory.db is empty or damaged" in line and "restore --force" in line, args
    assert db.stat().st_size == 0                 # refused commands created nothing in it
    doctor = run("doctor", "--offline", "--json")
    assert doctor.exit_code == 1
    database = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "database")
    assert not database["ok"] and "restore --force" in database["fix"]

    restored = ok(run("restore", "--force", "--json"))
    assert json.loads(restored.stdout)["warm_facts"] == 1
    assert "fig tree" in ok(run("retrieve", "fig")).stdout
    kept = list(db.parent.glob("memory.db.damaged-*"))
    assert len(kept) == 1 and kept[0].stat().st_size == 0      # set aside, never deleted
    assert ok(run("doctor", "--offline")).exit_code == 0


@pytest.mark.parametrize("damage", ["missing", "no tables", "garbage"])
def test_missing_replaced_or_garbage_database_is_damage(home, damage):
    with Memory.open("a", home=home) as mem:
        mem.remember("keep me", category="misc")
    db = home / "agents" / "a" / "memory.db"
    for extra in db.parent.glob("memory.db-*"):
        extra.unlink()
    if damage == "missing":
        db.unlink()
    elif damage == "no tables":
        db.unlink()
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE other (x)")
        conn.commit()
        conn.close()
    else:
        db.write_bytes(b"not sqlite at all " * 500)
    before = db.read_bytes() if db.exists() else None
    with pytest.raises(StoreError, match="empty or damaged.*restore --force"):
        Memory.open("a", home=home)
    assert (db.read_bytes() if db.exists() else None) == before      # nothing written


def test_placeholder_stays_refused_until_a_restore_lands(run, home):
    remember_and_sync(run, "The hive needs a new queen in spring")
    truncate(db_path(home))
    (home / "cloud.db").rename(home / "cloud.db.away")       # the cloud has nothing to give
    failed = run("restore", "--force")
    assert failed.exit_code != 0 and "no memory for agent" in error_line(failed)
    still = run("hot")
    assert still.exit_code == StoreError.exit_code
    assert "no restore has completed" in error_line(still)
    (home / "cloud.db.away").rename(home / "cloud.db")
    ok(run("restore", "--force"))
    assert "queen" in ok(run("retrieve", "hive queen")).stdout


def test_a_wiped_memory_is_not_damage(home):
    """A revoked device wipes itself on purpose: its (empty, valid) database opens."""
    with Memory.open("a", home=home) as mem:
        mem.remember("soon wiped", category="misc")
        mem.wipe_local()
    with Memory.open("a", home=home) as mem:
        assert mem.store.is_empty()


# -- crash list: a read-only home ----------------------------------------------------------------

@contextlib.contextmanager
def read_only(*paths: Path):
    """Make paths truly unwritable: chmod for a user, the immutable flag for root (who
    writes through any mode)."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", *map(str, paths)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        return
    modes = [p.stat().st_mode for p in paths]
    for p in paths:
        p.chmod(0o500 if p.is_dir() else 0o400)
    try:
        yield
    finally:
        for p, mode in zip(paths, modes):
            p.chmod(mode)


def test_read_only_home_says_read_only_and_never_advises_restore(run, home):
    ok(run("store", "--text", "An unsynced fact about the greenhouse", "--category", "misc"))
    db = db_path(home)
    with read_only(db, db.parent):
        result = run("hot")
        line = error_line(result)
        assert result.exit_code == StoreError.exit_code
        assert "read-only" in line and "restore" not in line
        doctor = run("doctor", "--offline", "--json")
        database = next(c for c in json.loads(doctor.stdout)["checks"]
                        if c["name"] == "database")
        assert not database["ok"] and "writable" in database["fix"]
        assert "restore" not in database["fix"] + database["detail"]
    status = json.loads(ok(run("sync", "--status", "--json")).stdout)
    assert status["outbox_depth"] >= 1                          # the unsynced work is intact


# -- item 1: a restore over unsynced work -------------------------------------------------------

def test_restore_over_unsynced_work_is_refused_with_the_count(run, home):
    remember_and_sync(run, "Synced fact one about tomatoes", "Synced fact two about basil")
    ok(run("store", "--text", "Unsynced fact about the pond pump", "--category",
              "projects/garden"))
    refused = run("restore", "--force")
    assert refused.exit_code == ValidationError.exit_code
    line = error_line(refused)
    assert "has 1 fact not yet synced" in line and "sync" in line and "--discard-unsynced" in line
    assert "pond pump" in ok(run("retrieve", "pond pump")).stdout       # nothing changed
    status = json.loads(ok(run("sync", "--status", "--json")).stdout)
    assert status["outbox_depth"] == 1

    dropped = ok(run("restore", "--force", "--discard-unsynced", "--json"))
    assert "1 fact not synced yet will be discarded" in dropped.stderr
    assert json.loads(dropped.stdout)["discarded_unsynced"] == 1
    assert not list(db_path(home).parent.glob("memory.db.damaged-*"))   # a healthy db stays
    assert "pond pump" not in ok(run("retrieve", "pond pump")).stdout
    assert "tomatoes" in ok(run("retrieve", "tomatoes")).stdout


def test_library_restore_refuses_unsynced_without_discard(home):
    with Memory.open("a", home=home) as mem:
        mem.remember("pushed", category="misc")
        mem.sync()
        mem.remember("not pushed yet", category="misc")
        mem.update_hot("task", {"text": "water the figs"})
        with pytest.raises(ValidationError, match=r"1 fact and a hot memory/category tree "
                                                  r"change not yet synced.*--discard-unsynced"):
            mem.restore(force=True)
        assert mem.store.outbox_depth() == 2 and mem.store.count_facts() == 2
        report = mem.restore(force=True, discard_unsynced=True)
        assert report.discarded_unsynced == 2
        assert mem.store.count_facts() == 1 and mem.store.outbox_depth() == 0


# -- item 8: cloud times are seconds, read back exactly ----------------------------------------

def test_cloud_seconds_reads_every_valid_second_exactly():
    for seconds in (0, 1, 1_000_000_000, 1_700_000_000, 32_000_000_000, SECONDS_BOUND - 1):
        assert cloud_seconds(seconds) == float(seconds)
    # Past the valid range a value cannot be seconds: milliseconds (a hand-written row), and
    # 1e12 ms is 2001-09-09, which the old `> 1e12` guess read as the year 33658.
    assert cloud_seconds(1_000_000_000_000) == 1_000_000_000.0
    assert cloud_seconds(1_700_000_000_123) == 1_700_000_000.123
    assert cloud_seconds(None) == 0.0


def test_mirrors_at_once_put_the_switch_interval_back():
    """The mirror shortens the interpreter's switch interval while it runs; mirrors that
    overlap (a server's agents) must leave it as it was before the first, whatever order
    they end in."""
    import sys
    from evoclaw_memory.cloud.restore import _quick_gil_handover
    before = sys.getswitchinterval()
    first, second = _quick_gil_handover(), _quick_gil_handover()
    first.__enter__()
    assert sys.getswitchinterval() < before
    second.__enter__()
    first.__exit__(None, None, None)                 # the first ends while the second runs
    assert sys.getswitchinterval() < before
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == before
