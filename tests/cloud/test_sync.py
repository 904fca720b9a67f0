"""Sync, merge, restore and devices: the same suite against a real sqld and a local file."""

from __future__ import annotations


import sys

import pytest

from evoclaw_memory import Memory, ValidationError
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote
from evoclaw_memory.cloud.sql import FileExecutor
from evoclaw_memory.errors import DeviceRevoked, Unavailable


@pytest.fixture(params=["sqld", "file"])
def cloud(request, tmp_path):
    """A factory of Remotes on one fresh cloud database (a sqld namespace, or a file)."""
    opened = []
    if request.param == "sqld":
        url, token = request.getfixturevalue("fresh_db")

        def make():
            opened.append(SqlRemote(HranaClient(url, token, timeout=5, retries=2), label=url))
            return opened[-1]
    else:
        path = tmp_path / "cloud.db"

        def make():
            opened.append(SqlRemote(FileExecutor(path), label=str(path)))
            return opened[-1]
    make.kind = request.param
    yield make
    for remote in opened:
        remote.close()


def device(tmp_path, name, agent="sam"):
    return Memory.open(agent, home=tmp_path / name)


def fill(mem, n, prefix="fact"):
    return [mem.remember(f"{prefix} {i}: the greenhouse sensor {i} reads humidity", category="projects/garden",
                         importance=0.6) for i in range(n)]


def cloud_ids(remote, agent="sam"):
    rows = remote.sql.execute("SELECT id FROM cold_memories WHERE agent_id = ?", (agent,)).rows
    return [r[0] for r in rows]


def test_push_is_one_request_and_idempotent(cloud, tmp_path):
    remote = cloud()
    with device(tmp_path, "a") as a:
        facts = fill(a, 10)
        a.update_hot("identity", {"agent_name": "Claw"})
        report = a.sync(remote=remote)
        assert report.pushed_facts == 10 and report.state_pushed and report.requests == 1
        a.remember("one more", category="projects/garden")
        if cloud.kind == "sqld":
            before = remote.sql.pipeline_count
            a.sync(remote=remote)
            assert remote.sql.pipeline_count - before == 1      # state + fact: ONE request
        else:
            a.sync(remote=remote)
        # Replaying the same push (a crash after commit, before ack) changes nothing.
        state = a.critical_state()
        version = report.remote_version
        for _ in range(2):
            again = remote.push("sam", a.sync_status()["device_id"], "x", facts, None, version, 0)
            assert again.facts == 10
        ids = cloud_ids(remote)
        assert sorted(ids) == sorted(set(ids)) and len(ids) == 11
        assert a.store.outbox_depth() == 0 and state.hot.identity.agent_name == "Claw"


def test_a_new_fact_alone_still_pushes_the_tree_counts(cloud, tmp_path):
    """remember() queues only its fact (no state entry); the push carries the state with it,
    so the cloud's tree counts follow."""
    remote = cloud()
    with device(tmp_path, "a") as a:
        fill(a, 3)
        a.sync(remote=remote)
        assert a.store.outbox_depth() == 0
        fact = a.remember("the greenhouse door sticks in winter", category="projects/garden")
        assert [(kind, ref) for _, kind, ref in a.store.outbox()] == [("fact", fact.id)]
        report = a.sync(remote=remote)
        assert report.pushed_facts == 1 and report.state_pushed and a.store.outbox_depth() == 0
        pushed = {n.path: n.warm_count for n in remote.pull_state("sam").state.tree}
        assert pushed["projects/garden"] == 4


def test_restore_on_fresh_device(cloud, tmp_path):
    with device(tmp_path, "old") as old:
        fill(old, 25)
        old.remember("Biscuit is allergic to chicken", category="home/pets", importance=0.9)
        old.update_hot("identity", {"agent_name": "Claw", "owner_name": "Sam"})
        old.update_hot("lesson", {"text": "Never reboot during backups", "importance": 0.9})
        old.update_hot("task", {"text": "Renew passport"})
        old.sync(remote=cloud())
    with device(tmp_path, "new") as new:
        report = new.restore(remote=cloud())
        assert report.archive_facts == 26 and report.warm_facts == 26
        assert new.hot.identity.owner_name == "Sam"
        assert [t.text for t in new.hot.active_context.tasks] == ["Renew passport"]
        assert "Never reboot during backups" in new.config.memory_md_path.read_text()
        assert {"home/pets", "projects/garden"} <= {n.path for n in new.tree}
        assert new.retrieve("what is Biscuit allergic to")[0].fact.text.startswith("Biscuit")
        with pytest.raises(ValidationError, match="--force"):
            new.restore(remote=cloud())
        new.sync(remote=cloud())                                      # nothing echoed back
        assert len(cloud_ids(cloud())) == 26


def test_two_devices_merge_without_losing_lessons_or_tasks(cloud, tmp_path):
    with device(tmp_path, "a") as a:
        a.update_hot("identity", {"agent_name": "Claw"})
        a.sync(remote=cloud())
        with device(tmp_path, "b") as b:
            b.restore(remote=cloud())
            a.update_hot("lesson", {"text": "Lesson from A", "importance": 0.8})
            a.update_hot("task", {"text": "Task from A"})
            b.update_hot("lesson", {"text": "Lesson from B", "importance": 0.8})
            b.update_hot("task", {"text": "Task from B"})
            b.update_hot("owner_profile", {"timezone": "Asia/Shanghai"})
            fa = a.remember("Fact written on A", category="misc")
            fb = b.remember("Fact written on B", category="misc")
            a.sync(remote=cloud())
            report = b.sync(remote=cloud())
            assert report.merged and report.pulled_facts == 1
            a.sync(remote=cloud())
            for m in (a, b):
                lessons = {l.text for l in m.hot.critical_lessons}
                tasks = {t.text for t in m.hot.active_context.tasks}
                assert {"Lesson from A", "Lesson from B"} <= lessons
                assert tasks == {"Task from A", "Task from B"}
                assert m.hot.owner_profile["timezone"] == "Asia/Shanghai"
                assert m.store.get_fact(fa.id) and m.store.get_fact(fb.id)
            # A task done on one device stays done everywhere.
            done = next(t for t in a.hot.active_context.tasks if t.text == "Task from B")
            a.update_hot("complete_task", done.id)
            a.sync(remote=cloud())
            b.sync(remote=cloud())
            assert {t.text for t in b.hot.active_context.tasks} == {"Task from A"}
    assert sorted(cloud_ids(cloud())) == sorted({fa.id, fb.id})


def test_revoked_device_wipes_itself(cloud, tmp_path):
    with device(tmp_path, "phone") as phone, device(tmp_path, "pi") as pi:
        phone.remember("secret plan", category="misc")
        phone.sync(remote=cloud())
        pi.restore(remote=cloud())
        stolen = phone.sync_status()["device_id"]
        assert stolen in {d.device_id for d in pi.devices(remote=cloud())}
        assert pi.revoke_device(stolen, remote=cloud())
        phone.remember("written after theft", category="misc")
        with pytest.raises(DeviceRevoked, match="wiped"):
            phone.sync(remote=cloud())
        assert phone.store.count_facts() == 0 and phone.store.is_empty()
        assert "written after theft" not in [f.text for f in pi.cold_query(remote=cloud())]


def test_full_mirror_is_paged_and_resumable(cloud, tmp_path, monkeypatch):
    from evoclaw_memory.cloud import restore as restore_mod
    monkeypatch.setattr(restore_mod, "PAGE_SIZE", 7)
    with device(tmp_path, "a") as a:
        for i in range(40):
            a.remember(f"old fact {i} about the allotment", category="home/garden",
                       created_at=a.clock() - (200 + i) * 86_400)
        a.sync(remote=cloud())
    seen = []

    def interrupt(stage, done, total):
        seen.append((stage, done))
        if stage == "mirror" and done >= 14:
            raise KeyboardInterrupt

    switch_interval = sys.getswitchinterval()
    with device(tmp_path, "b") as b:
        with pytest.raises(KeyboardInterrupt):
            b.restore(full=True, remote=cloud(), progress=interrupt)
        # the mirror's quicker GIL hand-over (cloud.restore) ends with it, interrupted or not
        assert sys.getswitchinterval() == switch_interval
        partial = b.store.count_facts()
        assert 14 <= partial < 40
        # the secondary indexes dropped for the load are back although it was interrupted
        assert b.store.conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' "
                                    "AND name = 'facts_norm_key'").fetchone()[0] == 1
        report = b.restore(full=True, remote=cloud())                 # resumes, no --force
        assert b.store.count_facts() == 40 and report.mirrored_facts == 40 - partial
        assert sys.getswitchinterval() == switch_interval
        assert b.retrieve("allotment old fact 33")
        counts = b.store.category_counts()
        assert {n.path: (n.warm_count, n.cold_count) for n in b.tree if n.path in counts} == counts


def test_offline_keeps_working_then_drains(cloud, tmp_path):
    with device(tmp_path, "a") as a:
        fill(a, 3)
        dead = SqlRemote(HranaClient("http://127.0.0.1:9", None, timeout=0.5, retries=1), "dead")
        with pytest.raises(Unavailable):
            a.sync(remote=dead)
        dead.close()
        fill(a, 3, prefix="offline")                                  # the agent keeps working
        assert a.store.outbox_depth() == 7                            # 6 facts + 1 state
        report = a.sync(remote=cloud())
        assert report.pushed_facts == 6 and a.store.outbox_depth() == 0
    assert len(cloud_ids(cloud())) == 6


def test_outbox_bound_keeps_state_and_loses_nothing(cloud, tmp_path, monkeypatch):
    from evoclaw_memory.cloud import engine
    monkeypatch.setattr(engine, "OUTBOX_MAX_FACTS", 5)
    monkeypatch.setattr(engine, "BATCH_SIZE", 4)
    with device(tmp_path, "a") as a:
        fill(a, 12)
        a.update_hot("identity", {"agent_name": "Claw"})
        report = a.sync(remote=cloud())
        assert report.state_pushed and a.store.outbox_depth() == 0
    assert len(cloud_ids(cloud())) == 12


def test_cloud_database_of_the_original_skill_is_readable(cloud, tmp_path):
    remote = cloud()
    remote.sql.execute("CREATE TABLE cold_memories (id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, "
                       "text TEXT NOT NULL, category TEXT NOT NULL, importance REAL DEFAULT 0.5, "
                       "created_at INTEGER NOT NULL, access_count INTEGER DEFAULT 0)")
    remote.sql.execute("CREATE TABLE critical_state (agent_id TEXT PRIMARY KEY, data TEXT NOT NULL, "
                       "updated_at INTEGER NOT NULL)")
    remote.sql.execute("INSERT INTO cold_memories (id, agent_id, text, category, importance, "
                       "created_at) VALUES ('legacy-1', 'sam', 'Old skill fact about tomatoes', "
                       "'projects/garden', 0.7, 1700000000)")
    remote.sql.execute("INSERT INTO critical_state VALUES ('sam', ?, 1700000000)",
                       ('{"identity": {"agent_name": "Legacy"}}',))
    with device(tmp_path, "new") as new:
        report = new.restore(full=True, remote=cloud())
        assert report.archive_facts == 1
        assert new.hot.identity.agent_name == "Legacy"
        assert new.retrieve("tomatoes")[0].fact.id == "legacy-1"


def test_archive_rows_json_cannot_carry_still_restore(cloud, tmp_path):
    """A page normally travels as one JSON value; a BLOB (some other tool's row) cannot."""
    with device(tmp_path, "a") as a:
        a.remember("the hive needs a new queen in spring", category="projects/bees")
        a.sync(remote=cloud())
    remote = cloud()
    remote.sql.execute("UPDATE cold_memories SET metadata = CAST(? AS BLOB)",
                       ('{"urls": ["https://bees.example/queen"]}',))
    with device(tmp_path, "b") as b:
        report = b.restore(full=True, remote=cloud())
        assert report.archive_facts == 1 and b.store.count_facts() == 1
        fact = b.retrieve("queen hive")[0].fact
        assert fact.metadata.urls == ["https://bees.example/queen"]


def test_archive_queries_do_not_read_every_fact_of_the_agent(tmp_path):
    """Without statistics SQLite would pick the (agent_id, ...) index for these and then read
    and sort every fact of the agent: for each page of a mirror, each push, each lookup."""
    from evoclaw_memory.cloud import statements
    with SqlRemote(FileExecutor(tmp_path / "cloud.db"), label="file") as remote:
        remote.ensure_schema()
        plans = {
            "page": statements.PAGE_AS_ROWS,
            "by id": "SELECT id FROM cold_memories WHERE +agent_id = ? AND id IN (?, ?)",
        }
        for name, sql in plans.items():
            plan = " ".join(str(r[-1]) for r in remote.sql.execute(
                "EXPLAIN QUERY PLAN " + sql, ("sam",) + (0,) * (sql.count("?") - 1)).rows)
            assert "idx_cold_agent" not in plan and "TEMP B-TREE" not in plan, (name, plan)
