"""The owner's control across devices, against a real sqld (SPEC §5b): a forget erases the
cloud row in the same single push, reaches other devices at their next pull, is never brought
back by a restore or a stale device; an edit and an unsupersede replace the cloud row, sealed
or clear; a forget made offline, or cut off by SIGKILL before its push, is still delivered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote
from evoclaw_memory.errors import Unavailable

PASS = "correct horse battery staple"
FAST = 2 ** 12


def _raw(url, token):
    return SqlRemote(HranaClient(url, token, timeout=5, retries=1), label="raw")


def _cloud_row(url, token, fact_id):
    with _raw(url, token) as raw:
        return raw.sql.execute("SELECT text, superseded_by FROM cold_memories WHERE id = ?",
                               (fact_id,)).rows


def _open(tmp_path, name, url, token, encrypted=False):
    return Memory.open("sam", home=tmp_path / name, cloud_url=url, cloud_token=token,
                       encryption="on" if encrypted else "off")


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "sealed"])
def test_forget_edit_unsupersede_reach_cloud_devices_and_restores(fresh_db, tmp_path, encrypted):
    url, token = fresh_db
    secret = "My old address is 12 Elm Street, Springfield"
    with _open(tmp_path, "a", url, token, encrypted) as a, \
            _open(tmp_path, "b", url, token, encrypted) as b:
        if encrypted:
            a.init_encryption(PASS, scrypt_n=FAST)
        gone = a.remember(secret, category="owner/home", importance=0.8)
        fixed = a.remember("Luna's vet is Dr Hargreve", category="home/pets", importance=0.7)
        old = a.remember("The greenhouse vent opens at 24 degrees", category="projects/garden")
        new = a.remember("The greenhouse vent opens at 26 degrees", category="projects/garden")
        keep = [a.remember(f"kept fact {i}: sensor {i} reads humidity", category="projects/garden")
                for i in range(5)]
        a.supersede(old.id, new.id)
        a.sync()
        b.restore(passphrase=PASS if encrypted else None)
        assert any(r.fact.id == gone.id for r in b.retrieve("Elm Street address"))
        b.edit(gone.id, importance=0.9)          # B still holds it and will push it again

        # A forgets, corrects and unsupersedes: one push, one request.
        assert a.forget(gone.id) == [gone.id]
        a.edit(fixed.id, text="Luna's vet is Dr Hargreaves at Spire Vets")
        a.unsupersede(old.id)
        report = a.sync()
        assert report.requests == 1 and a.store.outbox_depth() == 0
        assert _cloud_row(url, token, gone.id) == []                 # queried through the server
        with _raw(url, token) as raw:
            tombs = raw.sql.execute("SELECT id FROM cold_tombstones WHERE agent_id = 'sam'").rows
            assert [tuple(r) for r in tombs] == [(gone.id,)]
        (text, superseded), = _cloud_row(url, token, fixed.id)
        assert superseded is None and ("Spire" in text) != encrypted   # sealed: no clear text
        assert _cloud_row(url, token, old.id)[0][1] is None             # the link is cleared

        # B's stale upsert is refused by the tombstone; B deletes at its pull.
        b.sync()
        assert b.store.get_fact(gone.id) is None and _cloud_row(url, token, gone.id) == []
        assert all(r.fact.id != gone.id for r in b.retrieve("Elm Street address"))
        assert b.history(gone.id).forgotten_at is not None
        assert b.store.conn.execute("SELECT count(*) FROM facts_fts WHERE facts_fts MATCH 'elm'"
                                    ).fetchone()[0] == 0

        # A fresh device's full restore never sees it, and opens every edited/revived row.
        with _open(tmp_path, "c", url, token, encrypted) as c:
            restored = c.restore(full=True, passphrase=PASS if encrypted else None)
            assert not restored.rejected
            assert c.store.get_fact(gone.id) is None
            assert c.store.count_facts() == 3 + len(keep)
            assert c.get(fixed.id).text == "Luna's vet is Dr Hargreaves at Spire Vets"
            assert c.get(old.id).superseded_by is None
    # The audit trail says that a forget happened, never what was forgotten.
    with _open(tmp_path, "a", url, token, encrypted) as a:
        log = a.store.conn.execute("SELECT op, target, detail FROM audit").fetchall()
        assert ("forget", gone.id, "actor=manual") in log
        assert "Elm Street" not in "\n".join(a.store.conn.iterdump())


def test_forget_offline_is_delivered_when_the_network_returns(fresh_db, tmp_path):
    from sync.launcher import free_port
    url, token = fresh_db
    with _open(tmp_path, "a", url, token) as a:
        fact = a.remember("The spare key is under the blue pot", category="home")
        a.remember("Another fact that stays", category="home")
        a.sync()
        a.forget(fact.id)
        dead = SqlRemote(HranaClient(f"http://127.0.0.1:{free_port()}", "x", timeout=1,
                                     retries=1, backoff=0.01), label="dead")
        with pytest.raises(Unavailable):
            a.sync(remote=dead)
        assert [k for _, k, _ in a.store.outbox()].count("forget") == 1
        assert _cloud_row(url, token, fact.id) != []
        assert a.sync().requests == 1
        assert _cloud_row(url, token, fact.id) == []
        with _raw(url, token) as raw:
            assert raw.count_facts("sam") == 1


def test_sigkill_between_the_local_forget_and_the_push_loses_nothing(fresh_db, tmp_path):
    url, token = fresh_db
    with _open(tmp_path, "a", url, token) as a:
        facts = [a.remember(f"fact {i}: the pump {i} runs at night", category="projects/garden")
                 for i in range(20)]
        a.sync()
    victim = facts[7].id
    child = textwrap.dedent(f"""
        import sys, time
        from evoclaw_memory import Memory
        mem = Memory.open("sam", home={str(tmp_path / "a")!r}, cloud_url={url!r},
                          cloud_token={token!r}, encryption="off")
        mem.forget({victim!r})
        mem.remember("a fact stored after the forget", category="projects/garden")
        print("forgotten", flush=True)
        time.sleep(60)               # killed here: before any push
        mem.sync()
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "forgotten"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert _cloud_row(url, token, victim) != []           # the push never happened
    with _open(tmp_path, "a", url, token) as a:
        assert a.store.get_fact(victim) is None
        assert a.store.count_facts() == 20
        a.sync()
    assert _cloud_row(url, token, victim) == []
    with _raw(url, token) as raw:
        assert raw.count_facts("sam") == 20
