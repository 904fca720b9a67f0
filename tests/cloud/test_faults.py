"""The sync engine under faults, through a fault-injecting proxy in front of a real sqld,
and a crash test that SIGKILLs a pushing process at random points."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote
from evoclaw_memory.errors import AuthError, Unavailable


def remote_for(url, token, timeout=2.0, retries=3):
    return SqlRemote(HranaClient(url, token, timeout=timeout, retries=retries, backoff=0.05,
                                 max_backoff=0.2), label=url)


def fact_ids(url, token, agent="sam"):
    remote = remote_for(url, token)
    try:
        return [r[0] for r in remote.sql.execute(
            "SELECT id FROM cold_memories WHERE agent_id = ?", (agent,)).rows]
    finally:
        remote.close()


def remember_some(mem, n, tag):
    return [mem.remember(f"{tag} fact {i}: the server rack fan {i} is noisy", category="technical")
            for i in range(n)]


@pytest.mark.parametrize("mode", ["http500", "http429", "drop", "drop_response"])
def test_transient_faults_are_retried_without_duplicates(mode, fresh_db, fault_proxy, tmp_path):
    url, token = fresh_db
    with Memory.open("sam", home=tmp_path) as mem:
        facts = remember_some(mem, 10, mode)
        mem.update_hot("identity", {"agent_name": "Claw"})
        remote = remote_for(fault_proxy.url_for(url), token)
        remote.ensure_schema()
        fault_proxy.set_mode(mode, count=2)
        report = mem.sync(remote=remote)
        remote.close()
        assert report.pushed_facts == 10 and report.state_pushed
        assert fault_proxy.counts[mode] == 2
        ids = fact_ids(url, token)
        assert sorted(ids) == sorted(f.id for f in facts)          # each exactly once
        assert mem.store.outbox_depth() == 0
        # The lost answer (drop_response) committed the state once; a new sync agrees.
        assert mem.sync(remote=remote_for(url, token)).merged is False


@pytest.mark.parametrize("mode", ["delay", "down"])
def test_outage_keeps_work_queued_then_drains(mode, fresh_db, fault_proxy, tmp_path):
    url, token = fresh_db
    fault_proxy.delay = 1.5
    with Memory.open("sam", home=tmp_path) as mem:
        remember_some(mem, 5, "before")
        remote = remote_for(fault_proxy.url_for(url), token, timeout=0.5, retries=1)
        fault_proxy.set_mode(mode)
        with pytest.raises(Unavailable, match="unreachable|timed out|Unavailable|cloud"):
            mem.sync(remote=remote)
        depth = mem.store.outbox_depth()
        assert depth == 6
        remember_some(mem, 5, "during")                         # the agent keeps working
        fault_proxy.set_mode("pass")
        time.sleep(1.6 if mode == "delay" else 0)               # let a delayed request land
        mem.sync(remote=remote)
        remote.close()
        assert mem.store.outbox_depth() == 0
        ids = fact_ids(url, token)
        assert len(ids) == len(set(ids)) == 10


def test_server_killed_and_restarted(make_sqld, tmp_path):
    server = make_sqld()
    url, token = server.url, server.mint_token("rw")
    with Memory.open("sam", home=tmp_path) as mem:
        remember_some(mem, 3, "first")
        mem.sync(remote=remote_for(url, token))
        server.kill()
        remember_some(mem, 3, "second")
        with pytest.raises(Unavailable):
            mem.sync(remote=remote_for(url, token, timeout=0.5, retries=1))
        server.restart()
        token = server.mint_token("rw")
        mem.sync(remote=remote_for(url, token))
        assert mem.store.outbox_depth() == 0
        assert len(set(fact_ids(url, token))) == 6


def test_auth_errors_are_clear(make_sqld, tmp_path, sqld):
    url = sqld.url
    cases = {"missing": None, "invalid": "not.a.jwt", "expired": sqld.mint_token("rw", expires_in=-3600),
             "read-only": sqld.mint_token("ro")}
    with Memory.open("sam", home=tmp_path) as mem:
        mem.remember("a fact", category="misc")
        for word, token in cases.items():
            remote = remote_for(url, token)
            with pytest.raises(AuthError, match=word) as info:
                mem.sync(remote=remote)
            remote.close()
            if token:
                assert token not in str(info.value)
            assert mem.store.outbox_depth() == 2                 # nothing acknowledged


CRASH_WORKER = textwrap.dedent("""
    import sys, itertools
    from evoclaw_memory import Memory
    from evoclaw_memory.cloud.hrana import HranaClient
    from evoclaw_memory.cloud.remote import SqlRemote
    home, url, token, tag = sys.argv[1:5]
    with Memory.open("sam", home=home) as mem:
        remote = SqlRemote(HranaClient(url, token, timeout=5, retries=2), label=url)
        for i in itertools.count():
            mem.remember(f"crash {tag} fact {i}: ran the backup job", category="technical/backup")
            if i % 3 == 0:
                mem.update_hot("event", {"text": f"event {tag} {i}"})
            mem.sync(remote=remote)
""")


def test_sigkill_at_random_points_loses_and_duplicates_nothing(fresh_db, tmp_path):
    url, token = fresh_db
    script = tmp_path / "worker.py"
    script.write_text(CRASH_WORKER)
    home = tmp_path / "home"
    rng = random.Random(7)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for round_ in range(8):
        proc = subprocess.Popen([sys.executable, str(script), str(home), url, token, str(round_)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.4, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        # A new process picks up where the dead one stopped.
        with Memory.open("sam", home=home) as mem:
            mem.sync(remote=remote_for(url, token))
            assert mem.store.outbox_depth() == 0
    with Memory.open("sam", home=home) as mem:
        local = {f.id for f in mem.store.iter_facts()}
        hot_events = len(mem.hot.active_context.events)
        remote = remote_for(url, token)
        state = remote.pull_state("sam")
        remote.close()
    ids = fact_ids(url, token)
    assert len(ids) == len(set(ids))                     # nothing duplicated
    assert set(ids) == local and len(local) > 8          # nothing lost
    assert len(state.state.hot.active_context.events) == hot_events
