"""Restore against a real sqld when things go wrong: a wrong passphrase, an unreachable cloud
or a network lost halfway leave the device as it was (or resumable); times read back exact."""

from __future__ import annotations

import time

import pytest

from evoclaw_memory import CryptoError, Memory
from evoclaw_memory.cloud import restore as restore_mod
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote
from evoclaw_memory.errors import Unavailable, ValidationError

FAST = 2 ** 12
PASS = "correct horse battery staple"


def remote_for(url, token, timeout=2.0, retries=1):
    return SqlRemote(HranaClient(url, token, timeout=timeout, retries=retries, backoff=0.05,
                                 max_backoff=0.1), label=url)


def fill(mem, n, tag):
    return [mem.remember(f"{tag} note {i}: the greenhouse vent {i} sticks in the cold",
                         category="projects/greenhouse") for i in range(n)]


def snapshot(mem) -> tuple:
    """What a failed restore must leave untouched: facts, outbox, hot memory, tree."""
    store = mem.store
    return (sorted(f.id for f in store.iter_facts()), store.outbox(), store.load_hot(),
            store.tree_nodes())


def test_wrong_passphrase_changes_nothing_even_with_force(fresh_db, tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path / "origin", cloud_url=url, cloud_token=token) as a:
        a.init_encryption(PASS, scrypt_n=FAST)
        fill(a, 3, "cloud")
        a.sync()
    # A device with its own memory, none of it synced yet (it never met this cloud).
    with Memory.open("sam", home=tmp_path / "b", cloud_url=url, cloud_token=token) as b:
        fill(b, 4, "local")
        b.update_hot("task", {"text": "Renew the greenhouse insurance"})
        before = snapshot(b)
        with pytest.raises(ValidationError, match=r"4 facts and a hot memory/category tree "
                                                  r"change not yet synced.*--discard-unsynced"):
            b.restore(force=True, passphrase=PASS)
        with pytest.raises(CryptoError, match="wrong passphrase"):
            b.restore(force=True, discard_unsynced=True, passphrase="not it")
        assert snapshot(b) == before
        report = b.restore(force=True, discard_unsynced=True, passphrase=PASS)
        assert report.discarded_unsynced == 5 and b.store.count_facts() == 3


@pytest.mark.parametrize("fault", ["down", "drop"])
def test_unreachable_cloud_changes_nothing(fault, fresh_db, fault_proxy, tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path / "a") as a:
        fill(a, 3, "synced")
        a.sync(remote=remote_for(url, token))
        fill(a, 2, "unsynced")
        before = snapshot(a)
        fault_proxy.set_mode(fault)
        with pytest.raises(Unavailable):
            a.restore(force=True, discard_unsynced=True,
                      remote=remote_for(fault_proxy.url_for(url), token, timeout=0.5))
        assert snapshot(a) == before


def _cut_at(proxy, stage: str):
    """A progress callback that takes the network down when restore reports `stage`."""
    def progress(seen: str, done: int, total: int) -> None:
        if seen == stage:
            proxy.set_mode("down")
    return progress


def test_restore_cut_after_the_state_reruns_to_completion(fresh_db, fault_proxy, tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path / "a") as a:
        fill(a, 12, "archived")
        a.update_hot("identity", {"agent_name": "Claw"})
        a.sync(remote=remote_for(url, token))
    with Memory.open("sam", home=tmp_path / "new") as new:
        with pytest.raises(Unavailable):
            new.restore(remote=remote_for(fault_proxy.url_for(url), token, timeout=0.5),
                        progress=_cut_at(fault_proxy, "state"))
        assert new.store.is_empty()                 # the state was fetched, nothing landed
        fault_proxy.set_mode("pass")
        report = new.restore(remote=remote_for(fault_proxy.url_for(url), token))
        assert report.warm_facts == 12 and new.hot.identity.agent_name == "Claw"


def test_full_restore_cut_mid_mirror_resumes(fresh_db, fault_proxy, tmp_path, monkeypatch):
    monkeypatch.setattr(restore_mod, "PAGE_SIZE", 5)          # several pages to cut between
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path / "a") as a:
        ids = {f.id for f in fill(a, 40, "archived")}
        a.sync(remote=remote_for(url, token))
    # A small warm tier: the fast path brings a few facts, the mirror the rest.
    with Memory.open("sam", home=tmp_path / "new", warm_max_bytes=1_000) as new:
        with pytest.raises(Unavailable):
            new.restore(full=True, progress=_cut_at(fault_proxy, "mirror"),
                        remote=remote_for(fault_proxy.url_for(url), token, timeout=0.5))
        partial = new.store.count_facts()
        assert 0 < partial < 40 and not new.store.is_empty()
        fault_proxy.set_mode("pass")
        report = new.restore(full=True, remote=remote_for(fault_proxy.url_for(url), token))
        assert report.archive_facts == 40
        assert {f.id for f in new.store.iter_facts()} == ids      # all of them, once each


def test_times_read_back_as_written(fresh_db, tmp_path):
    """Rows in the original skill's schema: seconds (as it wrote them) stay exact; a row in
    milliseconds (hand-written) still reads right, even at 1e12 ms (2001-09-09). A time in the
    future (year 3000: a device whose clock ran ahead) is read as the cloud's now (issue 26):
    it would never age."""
    url, token = fresh_db
    with remote_for(url, token) as raw:
        raw.sql.execute("CREATE TABLE cold_memories (id TEXT PRIMARY KEY, agent_id TEXT NOT "
                        "NULL, text TEXT NOT NULL, category TEXT NOT NULL, importance REAL "
                        "DEFAULT 0.5, created_at INTEGER NOT NULL, access_count INTEGER "
                        "DEFAULT 0)")
        raw.sql.execute("CREATE TABLE critical_state (agent_id TEXT PRIMARY KEY, data TEXT "
                        "NOT NULL, updated_at INTEGER NOT NULL)")
        for fid, created in (("secs", 1_000_000_000), ("millis", 1_000_000_000_000),
                             ("late", 32_503_679_999)):
            raw.sql.execute("INSERT INTO cold_memories (id, agent_id, text, category, "
                            "importance, created_at) VALUES (?, 'sam', ?, 'misc', 0.5, ?)",
                            (fid, f"fact written at {fid}", created))
    with Memory.open("sam", home=tmp_path / "new") as new:
        new.restore(full=True, remote=remote_for(url, token))
        created = {f.id: f.created_at for f in new.store.iter_facts()}
    late = created.pop("late")
    assert created == {"secs": 1e9, "millis": 1e9}
    assert abs(late - time.time()) < 60
