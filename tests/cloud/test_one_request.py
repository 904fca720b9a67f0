"""ONE request per sync on the paths users take (SPEC §6), counted at a real proxy in front of
the real sqld: a held Memory, a fresh Memory per conversation, the CLI `sync` process and
every `serve` heartbeat. Also: the remembered schema heals itself when the cloud lost its
tables, no SSL context verifies anything for a plain-HTTP URL, and `serve` stops with its
documented status on errors no retry can fix."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.agent.service import EXIT_AUTH, EXIT_KEYS, Service
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote

AGENT = "sam"


def conversation(i: int) -> list[dict]:
    return [{"role": "user", "content": f"Remember: the greenhouse sensor {i} reads humidity "
                                        f"every {i + 2} minutes"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": f"My dentist appointment number {i} is on Friday at 3pm"},
            {"role": "assistant", "content": "Got it."}]


@pytest.fixture
def cloud(fresh_db, fault_proxy):
    """(url through the proxy, token, proxy) of a fresh database."""
    url, token = fresh_db
    return fault_proxy.url_for(url), token, fault_proxy


def open_device(home, url, token, **kw):
    return Memory.open(AGENT, home=home, cloud_url=url, cloud_token=token, encryption="off", **kw)


def cloud_count(url, token, sql="SELECT COUNT(*) FROM cold_memories WHERE agent_id = ?"):
    with SqlRemote(HranaClient(url, token), label="check") as remote:
        return remote.sql.execute(sql, (AGENT,)).rows[0][0]


def test_a_held_memory_sends_one_request_per_conversation_on_one_connection(cloud, tmp_path):
    url, token, proxy = cloud
    with open_device(tmp_path / "a", url, token) as mem:
        first = mem.end_conversation(conversation(0))
        assert first["sync"]["status"] == "pushed", first["sync"]
        connections = proxy.accepted
        for i in range(1, 6):
            before = proxy.total
            report = mem.end_conversation(conversation(i))
            assert report["sync"]["status"] == "pushed" and report["counts"]["added"] >= 1
            assert proxy.total - before == 1, f"conversation {i}"
            before = proxy.total
            mem.remember(f"one more fact {i}", category="projects/garden")
            mem.sync()
            assert proxy.total - before == 1
        assert proxy.accepted == connections          # no new connection (or handshake)
        local = mem.store.count_facts("warm") + mem.store.count_facts("cold")
    assert cloud_count(url, token) == local


def test_a_fresh_memory_per_conversation_sends_one_request_once_it_synced_before(cloud, tmp_path):
    url, token, proxy = cloud
    home = tmp_path / "a"
    with open_device(home, url, token) as mem:       # the first sync sets up the schema
        mem.end_conversation(conversation(0))
    for i in range(1, 4):
        before = proxy.total
        with open_device(home, url, token) as mem:
            report = mem.end_conversation(conversation(i))
        assert report["sync"]["status"] == "pushed"
        assert proxy.total - before == 1, f"conversation {i}"


def test_the_cli_sync_process_sends_one_request(cloud, tmp_path):
    url, token, proxy = cloud
    home = tmp_path / "cli"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVOCLAW_", "TURSO_"))}
    env.update(EVOCLAW_HOME=str(home), TURSO_DATABASE_URL=url, TURSO_AUTH_TOKEN=token,
               EVOCLAW_ENCRYPTION="off")
    with Memory.open(AGENT, home=home, cloud_url=url, cloud_token=token,
                     encryption="off") as mem:
        mem.remember("first fact", category="projects/garden")
        mem.sync()
    cmd = [sys.executable, "-m", "evoclaw_memory.cli.main", "--agent-id", AGENT]
    for i in range(2):
        subprocess.run(cmd + ["store", "--text", f"cli fact {i}", "--category", "projects/garden"],
                       env=env, check=True, capture_output=True, timeout=60)
        before = proxy.total
        done = subprocess.run(cmd + ["sync"], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert proxy.total - before == 1, done.stdout
    assert cloud_count(url, token) == 3


def test_every_serve_heartbeat_is_one_request_on_the_same_connection(cloud, tmp_path):
    url, token, proxy = cloud
    now = [1_764_460_800.0]
    with open_device(tmp_path / "svc", url, token, clock=lambda: now[0]) as mem:
        service = Service(mem, heartbeat=60, consolidate=False, clock=lambda: now[0])
        mem.remember("before the service", category="projects/garden")
        assert service.sync()                     # the first sync of this device
        connections = proxy.accepted
        for i in range(4):
            mem.remember(f"heartbeat fact {i}", category="projects/garden")
            now[0] = service.next_sync
            before = proxy.total
            service.tick()
            assert proxy.total - before == 1 and "pushed 1 fact" in service.actions[-1]
        assert proxy.accepted == connections
    assert cloud_count(url, token) == 5


def test_a_cloud_that_lost_its_tables_is_migrated_again_and_the_push_retried(cloud, tmp_path):
    url, token, proxy = cloud
    with open_device(tmp_path / "a", url, token) as mem:
        mem.remember("before the reset", category="projects/garden")
        mem.sync()
    with SqlRemote(HranaClient(url, token), label="reset") as raw:   # the database was reset
        names = [r[0] for r in raw.sql.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND name NOT LIKE '_litestream%'").rows]
        for name in names:
            raw.sql.execute(f'DROP TABLE IF EXISTS "{name}"')
    with open_device(tmp_path / "a", url, token) as mem:
        mem.remember("after the reset", category="projects/garden")
        before = proxy.total
        report = mem.sync()
        # The new fact, and the one the reset lost: the push found the cloud's state gone
        # (issue 26), checked the archive and re-pushed it in the same sync.
        assert report.pushed_facts == 2 and report.repaired == 1
        assert proxy.total - before > 1             # the refused push, the schema, the retry
        mem.remember("and then", category="projects/garden")
        before = proxy.total
        mem.sync()
        assert proxy.total - before == 1            # remembered again
    assert cloud_count(url, token) == 3


def test_no_ssl_context_verifies_for_plain_http_and_https_keeps_verification():
    plain = HranaClient("http://127.0.0.1:9")
    secure = HranaClient("https://example.invalid")
    try:
        def context(client):
            return client._http._transport._pool._ssl_context
        assert context(plain).verify_mode == ssl.CERT_NONE
        assert not context(plain).get_ca_certs()
        assert context(secure).verify_mode == ssl.CERT_REQUIRED
        assert context(secure).check_hostname
    finally:
        plain.close()
        secure.close()


def test_serve_stops_with_its_status_on_a_refused_token(fresh_db, tmp_path):
    url, _ = fresh_db
    with open_device(tmp_path / "svc", url, "not-a-valid-token") as mem:
        mem.remember("queued forever otherwise", category="projects/garden")
        service = Service(mem, heartbeat=0.05, retry_min=0.05, consolidate=False)
        assert service.run() == EXIT_AUTH
        stops = [a for a in service.actions if a.startswith("stopped")]
        assert len(stops) == 1 and "401" in stops[0] and "refused access" in stops[0]
        assert len(service.actions) == 2                          # started, stopped: no loop
        assert mem.store.outbox_depth() > 0                       # the work stays queued


def test_serve_stops_with_its_status_when_the_keys_need_a_passphrase(fresh_db, tmp_path,
                                                                     monkeypatch):
    monkeypatch.delenv("EVOCLAW_PASSPHRASE", raising=False)
    monkeypatch.delenv("EVOCLAW_RECOVERY_KEY", raising=False)
    url, token = fresh_db
    with Memory.open(AGENT, home=tmp_path / "origin", cloud_url=url, cloud_token=token) as mem:
        mem.init_encryption("correct horse battery", scrypt_n=2 ** 10)
        mem.sync()
    with Memory.open(AGENT, home=tmp_path / "new", cloud_url=url, cloud_token=token) as mem:
        mem.remember("cannot be sealed here", category="projects/garden")
        service = Service(mem, heartbeat=0.05, retry_min=0.05, consolidate=False)
        assert service.run() == EXIT_KEYS
        assert [a for a in service.actions if a.startswith("stopped")][0].count("passphrase")
