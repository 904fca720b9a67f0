"""Encryption that loses nothing: the re-seal covers the whole cloud archive, an interrupted
`key init` is finished, and forged clear columns are caught (issue 12, items 10-12).

Real parts only: a real sqld per test (fresh_db), the FaultProxy for network cuts, real
SQLite files for the devices; the local-save failure is a real SQLite error (a trigger on the
device's own database refuses the keyring write)."""

from __future__ import annotations

import json

import sqlite3
import time

import pytest
from click.testing import CliRunner

from evoclaw_memory import CryptoError, Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.cloud import keys
from evoclaw_memory.cloud.crypto import Keyring, decode_record
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote
from evoclaw_memory.errors import StoreError, Unavailable

FAST = 2 ** 12
PASS = "correct horse battery staple"
PADDING = " and the details are written down here at some length" * 10   # ~540 B: warm fills


def _raw(url, token) -> SqlRemote:
    return SqlRemote(HranaClient(url, token), "raw")


def _texts(url, token) -> dict[str, str]:
    with _raw(url, token) as raw:
        return dict(raw.sql.execute("SELECT id, text FROM cold_memories").rows)


def _plain_archive(url, token, home, n) -> list:
    """An agent that synced `n` facts before encryption was on (encryption = "off")."""
    with Memory.open("sam", home=home, cloud_url=url, cloud_token=token,
                     encryption="off") as mem:
        facts = [mem.remember(f"fact number {i}: the hedge by gate {i} was trimmed{PADDING}",
                              category=f"home/garden/bed{i % 7}", importance=0.3 + (i % 5) / 10)
                 for i in range(n)]
        mem.sync()
    return facts


def _legacy_row(url, token) -> str:
    """A row as the original skill wrote it: created_at in milliseconds, importance NULL."""
    with _raw(url, token) as raw:
        raw.sql.execute("INSERT INTO cold_memories (id, agent_id, text, category, importance, "
                        "created_at, access_count) VALUES ('legacy-1', 'sam', 'the old skill "
                        "wrote this', 'misc', NULL, ?, 0)", (int(time.time() * 1000),))
    return "legacy-1"


def proxied_again(proxy, url, token) -> SqlRemote:
    return SqlRemote(HranaClient(proxy.url_for(url), token, retries=0), "proxied")


def _mirror(url, token, home):
    mem = Memory.open("sam", home=home, cloud_url=url, cloud_token=token)
    return mem, mem.restore(passphrase=PASS, full=True)


# -- 10: the re-seal covers every cloud row of the agent -------------------------------------

def test_key_init_after_a_restore_reseals_the_whole_cloud_archive(fresh_db, tmp_path):
    url, token = fresh_db
    _plain_archive(url, token, tmp_path / "a", 300)
    legacy = _legacy_row(url, token)
    with Memory.open("sam", home=tmp_path / "b", cloud_url=url, cloud_token=token,
                     encryption="off") as mem:
        mem.restore()
        assert mem.store.count_facts() < 150          # the premise: warm holds a part only
    seen = []
    with Memory.open("sam", home=tmp_path / "b", cloud_url=url, cloud_token=token) as mem:
        recovery = mem.init_encryption(PASS, scrypt_n=FAST,
                                       progress=lambda *a: seen.append(a))
        status = mem.sync_status()["reseal"]
        assert recovery
        mem.sync()
    texts = _texts(url, token)
    assert len(texts) == 301
    clear = [fid for fid, text in texts.items() if not text.startswith("enc:v2:")]
    assert clear == []
    assert status["pending"] is False and status["resealed"] == 301 and status["finished_at"]
    assert seen[0] == ("re-sealing", 0, 301) and seen[-1] == ("re-sealing", 301, 301)
    shown = CliRunner().invoke(cli, ["sync", "--status"], catch_exceptions=False, env={
        "EVOCLAW_HOME": str(tmp_path / "b"), "EVOCLAW_AGENT_ID": "sam",
        "TURSO_DATABASE_URL": url, "TURSO_AUTH_TOKEN": token})
    assert shown.exit_code == 0 and "re-seal: complete (301 row(s)" in shown.output
    mem, report = _mirror(url, token, tmp_path / "c")
    with mem:
        assert report.rejected == [] and mem.store.count_facts() == 301
        assert mem.get(legacy).text == "the old skill wrote this"


def test_reseal_cut_by_the_network_resumes_at_its_cursor(fresh_db, fault_proxy, tmp_path):
    url, token = fresh_db
    _plain_archive(url, token, tmp_path / "a", 120)
    proxied = SqlRemote(HranaClient(fault_proxy.url_for(url), token, retries=0), "proxied")
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as mem:
        assert mem.init_encryption(PASS, remote=proxied, scrypt_n=FAST,
                                   progress=lambda *a: fault_proxy.set_mode("down"))
        # The keys are set up and the recovery key came back; the walk waits for a sync.
        assert mem.sync_status()["reseal"]["pending"] is True
        fault_proxy.set_mode("pass")
        seen = []

        def cut_after_first_page(stage, done, total):
            seen.append((done, total))
            if done:
                fault_proxy.set_mode("down")
        with pytest.raises(Unavailable):
            keys.reseal(mem.store, proxied, "sam", "dev-x", "x", cut_after_first_page,
                        page_size=50)
        assert seen == [(0, 120), (50, 120)]
        status = mem.reseal_status()
        assert status.pending and status.resealed == 50
        proxied.close()
        fault_proxy.set_mode("pass")
        seen.clear()
        with proxied_again(fault_proxy, url, token) as remote:
            keys.attach(remote, keys.local_keyring(mem.store))
            mem.reseal(remote, lambda stage, done, total: seen.append((done, total)))
        assert seen[0] == (0, 70) and seen[-1] == (70, 70)       # from the cursor on
        assert mem.reseal_status().resealed == 120 and not mem.reseal_status().pending
    assert all(t.startswith("enc:v2:") for t in _texts(url, token).values())


# -- 11: an interrupted key init is finished --------------------------------------------------

def _fail_keyring_saves(db_path) -> sqlite3.Connection:
    """A real local failure at the save step: the device's database refuses the keyring row."""
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TRIGGER refuse_keyring BEFORE INSERT ON kv WHEN "
                 "NEW.key = 'crypto.keyring' BEGIN SELECT RAISE(ABORT, 'disk is full'); END")
    conn.commit()
    return conn


def _interrupted_init(url, token, home) -> None:
    with Memory.open("sam", home=home, cloud_url=url, cloud_token=token) as mem:
        conn = _fail_keyring_saves(mem.config.db_path)
        with pytest.raises(StoreError, match="key init"):
            mem.init_encryption(PASS, scrypt_n=FAST)
        conn.execute("DROP TRIGGER refuse_keyring")
        conn.commit()
        conn.close()
    with _raw(url, token) as raw:
        assert raw.get_keyring("sam") is not None     # the failure came after the upload


def test_interrupted_key_init_is_finished_by_key_init_again(fresh_db, tmp_path):
    url, token = fresh_db
    _plain_archive(url, token, tmp_path / "a", 40)
    _interrupted_init(url, token, tmp_path / "a")
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as mem:
        with pytest.raises(CryptoError, match="does not open"):
            mem.init_encryption("another passphrase", scrypt_n=FAST)
        recovery = mem.init_encryption(PASS, scrypt_n=FAST)
    assert all(t.startswith("enc:v2:") for t in _texts(url, token).values())
    with _raw(url, token) as raw:          # the recovery key that was never shown, at last
        Keyring.unlock("sam", decode_record(raw.get_keyring("sam")), recovery_key=recovery)
    mem, report = _mirror(url, token, tmp_path / "b")
    with mem:
        assert report.rejected == [] and mem.store.count_facts() == 40


def test_interrupted_key_init_is_finished_by_the_next_sync(fresh_db, tmp_path, monkeypatch):
    url, token = fresh_db
    _plain_archive(url, token, tmp_path / "a", 40)
    _interrupted_init(url, token, tmp_path / "a")
    monkeypatch.delenv("EVOCLAW_PASSPHRASE", raising=False)    # no secret needed to finish
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as mem:
        mem.remember("written after the failed key init", category="misc")
        mem.sync()
        assert mem.store.outbox_depth() == 0 and not mem.reseal_status().pending
        assert mem.init_encryption(PASS, scrypt_n=FAST)   # still shows its recovery key
    assert all(t.startswith("enc:v2:") for t in _texts(url, token).values())
    mem, report = _mirror(url, token, tmp_path / "b")
    with mem:
        assert report.rejected == [] and mem.store.count_facts() == 41


def test_a_key_init_killed_during_its_reseal_still_gives_the_recovery_key(fresh_db, tmp_path,
                                                                          monkeypatch):
    """Issue 26: the keys reached the cloud and this device, the re-seal of the archive was
    under way when the process died: the next `key init` (after a sync, even) shows the
    recovery key it never showed, and forgets it only once shown."""
    from evoclaw_memory.lifecycle import cloud_side
    url, token = fresh_db
    _plain_archive(url, token, tmp_path / "a", 20)
    real_reseal = cloud_side.reseal_now

    def killed(mem, remote, progress=None):
        raise KeyboardInterrupt("killed during the re-seal")

    monkeypatch.setattr(cloud_side, "reseal_now", killed)
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as mem:
        with pytest.raises(KeyboardInterrupt):
            mem.init_encryption(PASS, scrypt_n=FAST)
    monkeypatch.setattr(cloud_side, "reseal_now", real_reseal)
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as mem:
        mem.sync()                                     # finishes the re-seal, keeps the key
        recovery = mem.init_encryption(PASS, scrypt_n=FAST)
        assert recovery is not None
        with _raw(url, token) as raw:
            Keyring.unlock("sam", decode_record(raw.get_keyring("sam")), recovery_key=recovery)
        assert mem.init_encryption(PASS, scrypt_n=FAST) is None     # shown: not kept
    shown = CliRunner().invoke(cli, ["--json", "key", "init"], catch_exceptions=False, env={
        "EVOCLAW_HOME": str(tmp_path / "c"), "EVOCLAW_AGENT_ID": "sam",
        "TURSO_DATABASE_URL": url, "TURSO_AUTH_TOKEN": token, "EVOCLAW_PASSPHRASE": PASS})
    assert shown.exit_code == 0 and json.loads(shown.stdout)["recovery_key"] is None


# -- 12: clear columns are authenticated --------------------------------------------------------

@pytest.fixture
def sealed_agent(fresh_db, tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as mem:
        mem.init_encryption(PASS, scrypt_n=FAST)
        facts = [mem.remember(f"sealed fact {i} about the allotment shed", category=f"home/s{i}",
                              importance=0.7) for i in range(8)]
        mem.sync()
        mem.supersede(facts[7].id, facts[6].id)          # after sealing: re-sealed on push
        mem.retrieve("allotment shed")                    # reinforcement moves access counts
        mem.sync()
    return url, token, facts


def test_forged_clear_columns_are_reported_and_skipped(sealed_agent, tmp_path):
    url, token, facts = sealed_agent
    forged = {facts[0].id: ("superseded_by = ?", facts[1].id),
              facts[1].id: ("importance = ?", 0.0),
              facts[2].id: ("created_at = ?", 946684800),
              facts[3].id: ("category = (SELECT category FROM cold_memories WHERE id = ?)",
                            facts[4].id)}
    with _raw(url, token) as raw:
        for fid, (assignment, value) in forged.items():
            raw.sql.execute(f"UPDATE cold_memories SET {assignment} WHERE id = ?", (value, fid))
        raw.sql.execute("UPDATE cold_memories SET access_count = 99 WHERE id = ?",
                        (facts[5].id,))                   # not authenticated: merged by max()
    mem, report = _mirror(url, token, tmp_path / "b")
    with mem:
        for fid in forged:
            assert any(fid in line and "clear columns" in line for line in report.rejected), fid
            assert mem.store.get_fact(fid) is None
        assert len(report.rejected) == 4 and mem.store.count_facts() == 4   # once each
        assert mem.get(facts[7].id).superseded_by == facts[6].id      # the genuine one opens
        assert mem.get(facts[5].id).access_count == 99


def test_rows_sealed_by_the_previous_release_still_open(sealed_agent, tmp_path):
    url, token, facts = sealed_agent
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as mem:
        ring = keys.local_keyring(mem.store)
    token_ = ring.category_token("home/old")
    v1 = (ring.seal("sealed before clear columns were bound", "old-1", "text"),
          f"{token_} {ring.seal('home/old', 'old-1', 'category')}")
    assert v1[0].startswith("enc:v1:")
    with _raw(url, token) as raw:
        raw.sql.execute("INSERT INTO cold_memories (id, agent_id, text, category, importance, "
                        "created_at, access_count, metadata) VALUES ('old-1', 'sam', ?, ?, 0.5, "
                        "?, 0, '{}')", (v1[0], v1[1], int(time.time())))
    mem, report = _mirror(url, token, tmp_path / "b")
    with mem:
        assert report.rejected == []
        assert mem.get("old-1").text == "sealed before clear columns were bound"
        mem.rotate_key()                       # the re-seal moves it to today's form
    assert all(t.startswith("enc:v2:") for t in _texts(url, token).values())


def test_supersession_made_elsewhere_keeps_rows_authentic(sealed_agent, tmp_path):
    url, token, facts = sealed_agent
    mem_b, _ = _mirror(url, token, tmp_path / "b")        # B holds facts[0] live
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as mem_a:
        mem_a.supersede(facts[0].id, facts[1].id)
        mem_a.sync()
    with mem_b:
        assert mem_b.get(facts[0].id).superseded_by is None
        mem_b.rotate_key()                     # B re-sends every local fact, facts[0] live
        mem_b.sync()
    mem, report = _mirror(url, token, tmp_path / "c")
    with mem:
        assert report.rejected == []
        assert mem.get(facts[0].id).superseded_by == facts[1].id
