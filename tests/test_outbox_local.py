"""Nothing lost (SPEC §6) with the cloud in a local file (the embedded default, a backup
drive): the outbox's versions and set-aside entries, the push nonce, and the repair of a cloud
that lost data. The same engine and SQL as against sqld (tests/cloud/test_outbox_safety.py)."""

from __future__ import annotations

import sqlite3
import time

from evoclaw_memory import Memory
from evoclaw_memory.cloud.remote import SqlRemote
from evoclaw_memory.cloud.sql import FileExecutor


def file_remote(path):
    return SqlRemote(FileExecutor(path), label=str(path))


def cloud_sql(path, sql, args=()):
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, args).fetchall()


def fill(mem, n, days=1):
    now = time.time()
    return [mem.remember(f"note {i}: the bike chain {i} needs oil", category="projects/bike",
                         created_at=now - (i % days) * 86_400.0) for i in range(n)]


def test_enqueue_bumps_the_version_and_ack_keeps_a_changed_entry(tmp_path):
    with Memory.open("sam", home=tmp_path) as mem:
        fact = mem.remember("the kettle is descaled monthly", category="home")
        ((seq, kind, ref, version),) = [e for e in mem.store.outbox_entries(10) if e[1] == "fact"]
        assert (kind, ref, version) == ("fact", fact.id, 0)
        with mem.store.transaction():
            mem.store.enqueue_fact(fact.id, time.time())         # changed while "in flight"
        with mem.store.transaction():
            mem.store.ack_sent([(seq, version)])
        assert [(e[0], e[3]) for e in mem.store.outbox_entries(10) if e[1] == "fact"] == \
            [(seq, 1)]
        with mem.store.transaction():
            mem.store.ack_sent([(seq, 1)])
        assert not [e for e in mem.store.outbox_entries(10) if e[1] == "fact"]


def test_an_infinite_created_at_is_set_aside_and_the_rest_flows(tmp_path):
    cloud = tmp_path / "backup.db"
    with Memory.open("sam", home=tmp_path) as mem:
        good = fill(mem, 8)
        with mem.store.transaction():           # an old database: a value no check let in
            mem.store.conn.execute("UPDATE facts SET created_at = 1e999 WHERE id = ?",
                                   (good[3].id,))
        bad = good.pop(3)
        with file_remote(cloud) as remote:
            report = mem.sync(remote=remote)
        assert report.rejected == 1 and mem.store.outbox_depth() == 0
        assert {r[0] for r in cloud_sql(cloud, "SELECT id FROM cold_memories")} == \
            {f.id for f in good}
        (entry,) = mem.sync_status()["rejected"]
        assert entry["ref"] == bad.id and "64-bit range" in entry["reason"]
        # Fixed later (an edit queues it again): it goes, and is no longer set aside.
        with mem.store.transaction():
            mem.store.conn.execute("UPDATE facts SET created_at = ? WHERE id = ?",
                                   (time.time(), bad.id))
            mem.store.enqueue_fact(bad.id, time.time())
        with file_remote(cloud) as remote:
            mem.sync(remote=remote)
        assert mem.sync_status()["rejected"] == []
        assert cloud_sql(cloud, "SELECT COUNT(*) FROM cold_memories")[0][0] == 8


class SupersedeDuringPush(SqlRemote):
    """A real file remote; before its first push carrying `old_id`, a second connection to
    the same device database remembers a new value and supersedes the old one."""

    def __init__(self, path, home, old_id):
        super().__init__(FileExecutor(path), label=str(path))
        self.home, self.old_id, self.new_id = home, old_id, None

    def push(self, agent_id, device_id, device_name, facts, *args, **kwargs):
        if self.new_id is None and any(f.id == self.old_id for f in facts):
            with Memory.open("sam", home=self.home) as second:
                self.new_id = second.remember("the bike is blue now", category="projects/bike").id
                second.supersede(self.old_id, self.new_id)
        return super().push(agent_id, device_id, device_name, facts, *args, **kwargs)


def test_a_supersession_made_during_the_push_stays_queued(tmp_path):
    cloud = tmp_path / "backup.db"
    with Memory.open("sam", home=tmp_path) as mem:
        old = mem.remember("the bike is red", category="projects/bike")
        with SupersedeDuringPush(cloud, tmp_path, old.id) as remote:
            mem.sync(remote=remote)
        assert mem.store.outbox_depth() == 0
    assert dict(cloud_sql(cloud, "SELECT id, superseded_by FROM cold_memories")) == \
        {old.id: remote.new_id, remote.new_id: None}


class SecondSyncAfterPush(SqlRemote):
    """A real file remote; right after its first push commits, a second sync of the same
    device (serve beside a CLI) pushes a newer hot update, expecting the old version."""

    def __init__(self, path, home):
        super().__init__(FileExecutor(path), label=str(path))
        self.path, self.home, self.done = path, home, False

    def push(self, *args, **kwargs):
        result = super().push(*args, **kwargs)
        if not self.done:
            self.done = True
            with Memory.open("sam", home=self.home) as second:
                second.update_hot("identity", {"agent_name": "Bolt"})
                with file_remote(self.path) as plain:
                    second.sync(remote=plain)
        return result


def test_a_second_sync_of_the_device_does_not_take_the_first_ones_write(tmp_path):
    cloud = tmp_path / "backup.db"
    with Memory.open("sam", home=tmp_path) as mem:
        mem.update_hot("identity", {"agent_name": "Claw"})
        with SecondSyncAfterPush(cloud, tmp_path) as remote:
            mem.sync(remote=remote)
        with file_remote(cloud) as remote:
            assert remote.pull_state("sam").state.hot.identity.agent_name == "Bolt"


def test_a_truncated_cloud_file_is_repaired_by_the_daily_consolidation(tmp_path):
    with Memory.open("sam", home=tmp_path) as mem:          # the embedded default cloud.db
        facts = fill(mem, 25, days=5)
        mem.update_hot("identity", {"agent_name": "Claw"})
        mem.sync()
        cloud = tmp_path / "cloud.db"
        cloud_sql(cloud, "DELETE FROM cold_memories")
        cloud_sql(cloud, "DELETE FROM critical_state")
        found = mem.consolidate("daily")["cloud_verify"]
        assert found == {"missing": 25, "state_missing": True, "requeued": 26}
        mem.sync()
        assert {r[0] for r in cloud_sql(cloud, "SELECT id FROM cold_memories")} == \
            {f.id for f in facts}
        assert mem.verify_cloud().missing == 0
    with Memory.open("sam", home=tmp_path / "new-device", cloud_url=str(cloud)) as fresh:
        report = fresh.restore()
        assert report.archive_facts == 25 and fresh.hot.identity.agent_name == "Claw"


def test_a_device_that_never_pushed_skips_the_check(tmp_path):
    with Memory.open("sam", home=tmp_path) as mem:
        fill(mem, 3)
        assert mem.consolidate("daily")["cloud_verify"] == \
            {"skipped": "this device has never pushed"}
        assert not (tmp_path / "cloud.db").exists()


def test_sync_status_shows_set_aside_entries_and_flags_do_not_mix(tmp_path):
    from click.testing import CliRunner

    from evoclaw_memory.cli.main import cli
    with Memory.open("sam", home=tmp_path) as mem:
        fill(mem, 2)
        with mem.store.transaction():
            mem.store.conn.execute("UPDATE facts SET created_at = 1e999")
    env = {"EVOCLAW_HOME": str(tmp_path), "EVOCLAW_AGENT_ID": "sam"}
    runner = CliRunner()
    synced = runner.invoke(cli, ["sync"], env=env, catch_exceptions=False)
    assert synced.exit_code == 0 and "outbox 0; 2 entries refused by the cloud" in synced.stdout
    status = runner.invoke(cli, ["sync", "--status"], env=env, catch_exceptions=False)
    lines = [line for line in status.stdout.splitlines() if line.startswith("set aside: fact ")]
    assert status.exit_code == 0 and len(lines) == 2 and "64-bit range" in lines[0]
    both = runner.invoke(cli, ["sync", "--status", "--verify"], env=env)
    assert both.exit_code == 2 and "not both" in both.stderr


def test_a_sync_that_pulls_nothing_commits_once_on_the_device(tmp_path):
    """The acknowledgement, the moved pull cursors and the sync's own metrics share one
    commit (one fsync): they were three (ack, cursors, metrics) on every sync."""
    with Memory.open("sam", home=tmp_path) as mem:
        fill(mem, 3)
        mem.sync()
        mem.remember("the hallway bulb is an E27, warm white", category="home")
        before = mem.metrics()["counters"]["syncs"]
        commits = []
        mem.store.conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
        report = mem.sync()
        mem.store.conn.set_trace_callback(None)
        assert report.pushed_facts == 1 and report.pulled_facts == 0
        assert commits == ["COMMIT"]
        assert mem.metrics()["counters"]["syncs"] == before + 1
        assert mem.metrics()["timestamps"]["last_sync"] > 0
