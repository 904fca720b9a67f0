"""Nothing lost (SPEC §6) on the sync path, against a real sqld: an entry the cloud refuses
for good is set aside and the rest flows; a push counts as done only when its own
compare-and-set applied; a change made while its entry is in flight stays queued; a cloud that
lost acknowledged data is detected and repaired; a resync page is not skipped on a failure."""

from __future__ import annotations

import json
import shutil
import time

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.cloud.engine import compact_outbox
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote
from evoclaw_memory.errors import RemoteError, Unavailable

DAY = 86_400.0


def remote_for(url, token, retries=2):
    return SqlRemote(HranaClient(url, token, timeout=3, retries=retries, backoff=0.05,
                                 max_backoff=0.2), label=url)


def cloud_rows(url, token, sql, args=()):
    with remote_for(url, token) as remote:
        remote.ensure_schema()
        return remote.sql.execute(sql, args).rows


def cloud_ids(url, token, agent="sam"):
    return {r[0] for r in cloud_rows(url, token, "SELECT id FROM cold_memories WHERE "
                                     "agent_id = ?", (agent,))}


def fill(mem, n, tag="fact", days=1):
    """n facts spread over `days` days of created_at (so the check sees several buckets)."""
    now = time.time()
    return [mem.remember(f"{tag} {i}: the greenhouse sensor {i} reads humidity",
                         category="projects/garden", importance=0.6,
                         created_at=now - (i % days) * DAY) for i in range(n)]


def insert_raw_fact(mem, fact_id, created_at):
    """A fact row written straight into the local store (an old database, or a bug), queued
    like any other: no validation on the way in."""
    with mem.store.transaction():
        mem.store.conn.execute(
            "INSERT INTO facts (id, text, category, importance, created_at, last_access, "
            "access_count, metadata, source, tier, norm_key, size) VALUES (?, ?, 'general', "
            "0.5, ?, ?, 0, '{}', 'manual', 'warm', ?, 20)",
            (fact_id, f"raw fact {fact_id}", created_at, time.time(), fact_id))
        mem.store.enqueue_fact(fact_id, time.time())


def cli_json(home, *args, url=None, token=None):
    env = {"EVOCLAW_HOME": str(home), "EVOCLAW_ENCRYPTION": "off", "EVOCLAW_AGENT_ID": "sam"}
    if url:
        env.update(TURSO_DATABASE_URL=url, TURSO_AUTH_TOKEN=token)
    result = CliRunner().invoke(cli, ["--json", *args], env=env, catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


# -- 2b: an entry the cloud refuses for good is set aside ---------------------------------------

def test_a_fact_sqlite_cannot_hold_is_set_aside_and_the_rest_flows(fresh_db, tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path) as mem:
        good = fill(mem, 30)
        insert_raw_fact(mem, "bad-created-at", 1e30)       # past SQLite's 64-bit integers
        good += fill(mem, 5, tag="later")
        with remote_for(url, token) as remote:
            report = mem.sync(remote=remote)
        assert report.rejected == 1 and mem.store.outbox_depth() == 0
        assert cloud_ids(url, token) == {f.id for f in good}
        (entry,) = mem.sync_status()["rejected"]
        assert entry["kind"] == "fact" and entry["ref"] == "bad-created-at"
        assert "does not fit SQLite's 64-bit range" in entry["reason"]
        # Set aside for good: the next syncs neither retry it nor stall on it.
        mem.remember("after the rejection", category="projects/garden")
        with remote_for(url, token) as remote:
            again = mem.sync(remote=remote)
        assert again.requests == 1 and again.rejected == 0 and mem.store.outbox_depth() == 0
    code, status = cli_json(tmp_path, "sync", "--status")
    assert code == 0 and status["rejected"][0]["ref"] == "bad-created-at"
    code, doctor = cli_json(tmp_path, "doctor", "--offline")
    check = {c["name"]: c for c in doctor["checks"]}["outbox_rejected"]
    assert code == 1 and not check["ok"] and "bad-created-at" in check["detail"]


def test_a_row_the_server_refuses_is_set_aside(fresh_db, tmp_path):
    url, token = fresh_db
    # The server itself refuses one row (a SQL error on that row only, inside a 50-row insert).
    cloud_rows(url, token, "CREATE TRIGGER refuse_poison BEFORE INSERT ON cold_memories "
               "WHEN NEW.text LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'poison row refused'); "
               "END")
    with Memory.open("sam", home=tmp_path) as mem:
        good = fill(mem, 70)
        poison = mem.remember("the poison ivy grows by the fence", category="projects/garden")
        good += fill(mem, 50, tag="after")
        mem.update_hot("identity", {"agent_name": "Claw"})
        with remote_for(url, token) as remote:
            report = mem.sync(remote=remote)
            state = remote.pull_state("sam")
        assert report.rejected == 1 and report.state_pushed and mem.store.outbox_depth() == 0
        assert cloud_ids(url, token) == {f.id for f in good}
        assert state.state.hot.identity.agent_name == "Claw"
        (entry,) = mem.sync_status()["rejected"]
        assert entry["ref"] == poison.id and "poison row refused" in entry["reason"]


def test_a_cloud_that_refuses_everything_sets_nothing_aside(fresh_db, tmp_path):
    url, token = fresh_db
    cloud_rows(url, token, "CREATE TRIGGER refuse_all BEFORE INSERT ON devices "
               "BEGIN SELECT RAISE(ABORT, 'read-only archive'); END")
    with Memory.open("sam", home=tmp_path) as mem:
        fill(mem, 4)
        queued = mem.store.outbox_depth()
        with remote_for(url, token) as remote, pytest.raises(RemoteError, match="read-only"):
            mem.sync(remote=remote)
        # Not one row's fault: everything stays queued, nothing is set aside.
        assert mem.store.outbox_depth() == queued == 5          # 4 facts + the state
        assert mem.sync_status()["rejected"] == []


# -- 3: a push succeeds only when its own compare-and-set applied --------------------------------

def test_a_state_push_whose_answer_was_lost_does_not_pass_for_the_next_one(fresh_db, fault_proxy,
                                                                             tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path) as mem:
        with remote_for(url, token) as remote:
            mem.sync(remote=remote)                              # registered, version known
        mem.update_hot("identity", {"agent_name": "Claw"})
        lossy = remote_for(fault_proxy.url_for(url), token, retries=0)
        lossy.ensure_schema()
        fault_proxy.set_mode("drop_response", count=1)          # commits, answer lost
        with pytest.raises(Unavailable):
            mem.sync(remote=lossy)
        lossy.close()
        mem.update_hot("identity", {"agent_name": "Bolt"})      # a newer hot update
        with remote_for(url, token) as remote:
            report = mem.sync(remote=remote)
            cloud = remote.pull_state("sam")
        assert report.state_pushed and mem.store.outbox_depth() == 0
        # The cloud's version was "expected + 1 by this device" (the lost push): only the
        # nonce tells that this push's write had not applied.
        assert cloud.state.hot.identity.agent_name == "Bolt"
    with Memory.open("sam", home=tmp_path / "elsewhere") as other:
        with remote_for(url, token) as remote:
            other.restore(remote=remote)
        assert other.hot.identity.agent_name == "Bolt"


# -- 4: a change made while its entry is in flight stays queued ---------------------------------

class SupersedeDuringPush(SqlRemote):
    """The real SqlRemote; before its first push it lets a second connection to the same
    device database remember a new value and supersede `old_id` (serve beside a CLI)."""

    def __init__(self, executor, home, old_id):
        super().__init__(executor, label="supersede-during-push")
        self.home, self.old_id, self.new_id = home, old_id, None

    def push(self, agent_id, device_id, device_name, facts, *args, **kwargs):
        if self.new_id is None and any(f.id == self.old_id for f in facts):
            with Memory.open("sam", home=self.home) as second:
                self.new_id = second.remember("the fence is painted blue now",
                                              category="projects/garden").id
                second.supersede(self.old_id, self.new_id)
        return super().push(agent_id, device_id, device_name, facts, *args, **kwargs)


def test_a_supersession_made_during_the_push_reaches_the_cloud(fresh_db, tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path) as mem:
        old = mem.remember("the fence is painted green", category="projects/garden")
        remote = SupersedeDuringPush(HranaClient(url, token, timeout=3, retries=2),
                                     tmp_path, old.id)
        with remote:
            mem.sync(remote=remote)
        assert remote.new_id is not None and mem.store.outbox_depth() == 0
    rows = cloud_rows(url, token, "SELECT id, superseded_by FROM cold_memories WHERE agent_id = ?",
                      ("sam",))
    assert dict(rows) == {old.id: remote.new_id, remote.new_id: None}


# -- 5: a cloud that lost acknowledged data is detected and repaired ----------------------------

def test_a_wiped_cloud_is_detected_by_doctor_and_repaired_by_a_plain_sync(make_sqld, tmp_path):
    server = make_sqld()
    url, token = server.url, server.mint_token("rw")
    home = tmp_path / "device"
    with Memory.open("sam", home=home, cloud_url=url, cloud_token=token,
                     encryption="off") as mem:
        facts = fill(mem, 61, days=9)
        mem.update_hot("identity", {"agent_name": "Claw"})
        mem.sync()
    assert len(cloud_ids(url, token)) == 61
    # The server loses its data directory; a later device writes one fact to the empty cloud.
    server.stop()
    shutil.rmtree(server.db_path)
    server.restart()
    with Memory.open("sam", home=tmp_path / "other", cloud_url=url, cloud_token=token,
                     encryption="off") as other:
        stray = other.remember("a fact from another device", category="general")
        other.sync()
    code, doctor = cli_json(home, "doctor", url=url, token=token)
    check = {c["name"]: c for c in doctor["checks"]}["cloud_archive"]
    assert code == 1 and not check["ok"] and "lost 61" in check["detail"]
    assert "sync --verify" in check["fix"]
    # Nothing queued, yet a plain sync notices (its push finds the cloud's state older than
    # the one this device knew: issue 26), checks the archive and re-pushes what it lost.
    code, synced = cli_json(home, "sync", url=url, token=token)
    assert code == 0 and synced["repaired"] == 62 and synced["pushed_facts"] == 61
    assert cloud_ids(url, token) == {f.id for f in facts} | {stray.id}
    code, doctor = cli_json(home, "doctor", url=url, token=token)
    assert {c["name"]: c for c in doctor["checks"]}["cloud_archive"]["ok"]
    code, again = cli_json(home, "sync", "--verify", url=url, token=token)
    assert again["missing"] == 0 and again["requeued"] == 0 and again["verified"] is True

    with Memory.open("sam", home=tmp_path / "restored", cloud_url=url, cloud_token=token,
                     encryption="off") as fresh:
        restored = fresh.restore()
        assert restored.archive_facts == 62 and fresh.hot.identity.agent_name == "Claw"


def test_daily_consolidation_finds_a_partly_lost_archive(fresh_db, tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path, cloud_url=url, cloud_token=token,
                     encryption="off") as mem:
        facts = fill(mem, 40, days=4)
        mem.sync()
        lost = sorted(f.id for f in facts)[:7]         # a few rows of several buckets
        cloud_rows(url, token, f"DELETE FROM cold_memories WHERE id IN ({','.join('?' * 7)})",
                   lost)
        report = mem.consolidate("daily")
        assert report["cloud_verify"] == {"missing": 7, "state_missing": False, "requeued": 7}
        assert mem.store.outbox_depth() == 7
        mem.sync()
        assert cloud_ids(url, token) == {f.id for f in facts}
        assert mem.consolidate("daily")["cloud_verify"]["missing"] == 0


# -- a resync page moves on only once the cloud committed it ------------------------------------

def test_a_resync_page_whose_push_failed_is_sent_again(fresh_db, fault_proxy, tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path) as mem:
        facts = fill(mem, 12)
        assert compact_outbox(mem.store, 5)            # the queue overflowed: one resync entry
        flaky = remote_for(fault_proxy.url_for(url), token, retries=0)
        flaky.ensure_schema()
        fault_proxy.set_mode("drop", count=1)
        with pytest.raises(Unavailable):
            mem.sync(remote=flaky)
        mem.sync(remote=flaky)
        flaky.close()
        assert cloud_ids(url, token) == {f.id for f in facts}
        assert mem.store.outbox_depth() == 0
