"""Pinned and private marks across devices, against a real sqld (issue 18): they sync in the
one push, restore onto a new device (a pinned fact even when it is old), and a sealed row
authenticates them (a flipped flag in the cloud is refused and reported, not believed)."""

from __future__ import annotations

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote

PASS = "correct horse battery staple"
FAST = 2 ** 12


def _open(tmp_path, name, url, token, encrypted):
    return Memory.open("sam", home=tmp_path / name, cloud_url=url, cloud_token=token,
                       encryption="on" if encrypted else "off")


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "sealed"])
def test_pinned_and_private_sync_and_restore(fresh_db, tmp_path, encrypted):
    url, token = fresh_db
    with _open(tmp_path, "a", url, token, encrypted) as a:
        if encrypted:
            a.init_encryption(PASS, scrypt_n=FAST)
        old = a.remember("The spare key is under the blue flowerpot", category="home",
                         importance=0.2, created_at=a.clock() - 400 * 86_400)
        a.pin(old.id)
        pin = a.remember("Sam's bank card PIN is 4712", category="general")
        plain = a.remember("The greenhouse vent opens at 24 degrees", category="projects/garden")
        assert a.sync().requests == 1
    with SqlRemote(HranaClient(url, token, timeout=5, retries=1), label="raw") as raw:
        flags = dict(raw.sql.execute("SELECT id, flags FROM cold_memories").rows)
    assert flags == {old.id: 1, pin.id: 2, plain.id: 0}

    with _open(tmp_path, "b", url, token, encrypted) as b:
        b.restore(passphrase=PASS if encrypted else None)
        kept = b.get(old.id)
        assert kept.pinned and kept.tier == "warm"       # 400 days old, on the device anyway
        assert b.get(pin.id).private
        assert b.retrieve("bank card PIN", audience="shared") == []
        b.unpin(old.id)
        assert b.sync().requests == 1
    with SqlRemote(HranaClient(url, token, timeout=5, retries=1), label="raw") as raw:
        assert raw.sql.execute("SELECT flags FROM cold_memories WHERE id = ?",
                               (old.id,)).rows[0][0] == 0       # the unpin replaced the row


def test_a_flag_flipped_in_a_sealed_cloud_is_refused(fresh_db, tmp_path):
    url, token = fresh_db
    with _open(tmp_path, "a", url, token, True) as a:
        a.init_encryption(PASS, scrypt_n=FAST)
        fact = a.remember("Sam's bank card PIN is 4712", category="general")
        a.sync()
        with SqlRemote(HranaClient(url, token, timeout=5, retries=1), label="raw") as raw:
            raw.sql.execute("UPDATE cold_memories SET flags = 0 WHERE id = ?", (fact.id,))
        remote = a.open_remote(PASS)
        # A row that fails authentication is skipped and reported, never read as shared.
        assert remote.facts_by_ids("sam", [fact.id]) == []
        assert remote.rejected and fact.id in remote.rejected[0]
