"""The reproductions of issue 26, against a real sqld: each a change made after seeing the
previous one, which must survive on every device, in the cloud and in a restore, whatever
the devices' clocks say; and a supersession, a completed task, a forget that stick."""

from __future__ import annotations

import time

from evoclaw_memory import Memory
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote

YEAR, DAY = 365 * 86_400.0, 86_400.0


class Skewed:
    """A device clock off by `skew` seconds from the host's (and the cloud's)."""

    def __init__(self, skew: float = 0.0):
        self.skew = skew

    def __call__(self) -> float:
        return time.time() + self.skew


def _devices(tmp_path, url, token, **skews):
    return {name: Memory.open("sam", home=tmp_path / name, cloud_url=url, cloud_token=token,
                              encryption="off", clock=Skewed(skew))
            for name, skew in skews.items()}


def _restored(tmp_path, url, token):
    mem = Memory.open("sam", home=tmp_path / "restored", cloud_url=url, cloud_token=token,
                      encryption="off")
    mem.restore(full=True)
    return mem


def _cloud_row(url, token, fact_id):
    with SqlRemote(HranaClient(url, token, timeout=5, retries=1), "raw") as raw:
        return raw.sql.execute("SELECT text, superseded_by, flags FROM cold_memories WHERE id = ?",
                               (fact_id,)).rows[0]


def _close(devs):
    for mem in devs.values():
        mem.close()


def _sync_all(devs, rounds=2):
    for _ in range(rounds):
        for mem in devs.values():
            mem.sync()


def test_an_edit_after_a_supersession_reaches_the_device_that_edited_first(fresh_db, tmp_path):
    """1. C supersedes F2 by F1; C, B sync; B edits F2; A (which never saw either) edits F2
    too: A must not keep its own text while the others show B's: one result everywhere, the
    supersession kept."""
    url, token = fresh_db
    devs = _devices(tmp_path, url, token, A=0, B=0, C=0)
    try:
        f1 = devs["A"].remember("The wifi password is swordfish", category="home")
        f2 = devs["A"].remember("The wifi password is hunter2", category="home")
        devs["A"].sync()
        for name in "BC":
            devs[name].restore()
        devs["C"].supersede(f2.id, f1.id)
        devs["C"].sync()
        devs["B"].sync()
        devs["B"].edit(f2.id, text="The old wifi password was hunter2")
        devs["A"].edit(f2.id, text="The wifi password was hunter2 until May")
        _sync_all(devs)
        with _restored(tmp_path, url, token) as restored:
            seen = {name: (m.get(f2.id).text, m.get(f2.id).superseded_by)
                    for name, m in {**devs, "restored": restored}.items()}
        assert len(set(seen.values())) == 1, seen
        assert next(iter(seen.values()))[1] == f1.id
        assert _cloud_row(url, token, f2.id)[:2] == next(iter(seen.values()))
    finally:
        _close(devs)


def test_a_supersession_pushed_after_a_concurrent_edit_is_not_dropped(fresh_db, tmp_path):
    """2. A stores F4, C supersedes it; A's edit reaches the cloud first: the supersession
    must still land (the old password out of search everywhere)."""
    url, token = fresh_db
    devs = _devices(tmp_path, url, token, A=0, C=0)
    try:
        f1 = devs["A"].remember("The wifi password is now swordfish", category="home")
        f4 = devs["A"].remember("The wifi password is hunter2", category="home")
        devs["A"].sync()
        devs["C"].restore()
        devs["C"].supersede(f4.id, f1.id)
        devs["A"].edit(f4.id, text="The wifi password is hunter2 (router in the hall)")
        devs["A"].sync()
        devs["C"].sync()
        _sync_all(devs)
        for name, mem in devs.items():
            assert mem.get(f4.id).superseded_by == f1.id, name
            assert f4.id not in [r.fact.id for r in mem.retrieve("wifi password")], name
        assert _cloud_row(url, token, f4.id)[1] == f1.id
    finally:
        _close(devs)


def test_a_pin_never_carries_stale_text_over_a_synced_edit(fresh_db, tmp_path):
    """3. A edits F2 and syncs; C (which has not pulled the edit) pins F2 and syncs: the
    cloud keeps A's text with C's pin, so the edit survives A's loss."""
    url, token = fresh_db
    devs = _devices(tmp_path, url, token, A=0, C=0)
    try:
        f2 = devs["A"].remember("The boiler service is in March", category="home")
        devs["A"].sync()
        devs["C"].restore()
        devs["A"].edit(f2.id, text="The boiler service is in April")
        devs["A"].sync()
        devs["C"].pin(f2.id)
        devs["C"].sync()
        text, _, flags = _cloud_row(url, token, f2.id)
        assert (text, flags & 1) == ("The boiler service is in April", 1)
        devs["A"].close()                                  # A is lost
        with _restored(tmp_path, url, token) as restored:
            assert restored.get(f2.id).text == "The boiler service is in April"
            assert restored.get(f2.id).pinned
        assert devs["C"].get(f2.id).text == "The boiler service is in April"
    finally:
        _close(devs)


def test_a_device_a_year_fast_neither_wins_nor_splits_the_devices(fresh_db, tmp_path):
    """4. A's clock runs a year fast: A edits F1 and syncs; C syncs; B pins F1; C edits F1
    after seeing A's edit: C's text and B's pin everywhere, and one version on all devices."""
    url, token = fresh_db
    devs = _devices(tmp_path, url, token, A=YEAR, B=0, C=0)
    try:
        f1 = devs["B"].remember("The dentist is Dr Patel", category="owner/health")
        devs["B"].sync()
        devs["A"].restore()
        devs["C"].restore()
        devs["A"].edit(f1.id, text="The dentist is Dr Moreau")
        devs["A"].sync()
        devs["C"].sync()
        devs["B"].pin(f1.id)
        devs["C"].edit(f1.id, text="The dentist is Dr Moreau, in Leith")
        _sync_all(devs)
        with _restored(tmp_path, url, token) as restored:
            seen = {name: (m.get(f1.id).text, m.get(f1.id).pinned)
                    for name, m in {**devs, "restored": restored}.items()}
        assert set(seen.values()) == {("The dentist is Dr Moreau, in Leith", True)}, seen
    finally:
        _close(devs)


def test_a_fast_clock_neither_undoes_a_rename_nor_reopens_a_task(fresh_db, tmp_path):
    """5. B's clock runs a day fast. A renames the agent and completes a task after seeing
    B's values: A's rename and the completion hold on every device and in a restore."""
    url, token = fresh_db
    devs = _devices(tmp_path, url, token, A=0, B=DAY)
    try:
        devs["B"].update_hot("identity", {"agent_name": "Bolt"})
        state = devs["B"].update_hot("task", {"text": "book the boiler service"})
        task = state.active_context.tasks[0].id
        devs["B"].sync()
        devs["A"].restore()
        devs["A"].update_hot("identity", {"agent_name": "Claw"})
        devs["A"].update_hot("complete_task", task)
        devs["A"].sync()
        devs["B"].update_hot("identity", {"owner_name": "Sam"})   # B changes something else
        _sync_all(devs)
        with _restored(tmp_path, url, token) as restored:
            for name, mem in {**devs, "restored": restored}.items():
                hot = mem.hot
                assert hot.identity.agent_name == "Claw", name
                assert task not in [t.id for t in hot.active_context.tasks], name
                assert hot.identity.owner_name == "Sam", name
    finally:
        _close(devs)


def test_an_edit_made_later_wins_over_one_from_a_clock_a_day_fast(fresh_db, tmp_path):
    """Clocks: B's clock +1 day edits, then A edits later in real time, having seen B's edit
    or not: A's later edit wins everywhere (B's stays only in history)."""
    url, token = fresh_db
    devs = _devices(tmp_path, url, token, A=0, B=DAY)
    try:
        fact = devs["A"].remember("The car insurance renews in June", category="home")
        devs["A"].sync()
        devs["B"].restore()
        devs["B"].sync()                            # B learns how far off its clock is
        devs["B"].edit(fact.id, text="The car insurance renews in July")
        time.sleep(0.01)
        devs["A"].edit(fact.id, text="The car insurance renews in August")
        devs["B"].sync()
        _sync_all(devs)
        for name, mem in devs.items():
            assert mem.get(fact.id).text == "The car insurance renews in August", name
    finally:
        _close(devs)


def test_a_device_a_year_fast_restores_every_fact_and_ages_them_as_others_do(fresh_db, tmp_path):
    """A new device whose clock is a year fast restores all of warm (not 1 of 3), and a fact
    it stamped in the future before it ever synced ages from the cloud's now."""
    url, token = fresh_db
    devs = _devices(tmp_path, url, token, A=0, F=YEAR)
    try:
        for i in range(3):
            devs["A"].remember(f"Sam's locker number {i} is {100 + i}", category="owner")
        early = devs["F"].remember("The garden tap leaks", category="home")
        assert early.created_at > time.time() + YEAR / 2          # its own clock, no sync yet
        devs["A"].sync()
        devs["F"].sync()
        assert abs(devs["F"].get(early.id).created_at - time.time()) < 60
        with Memory.open("sam", home=tmp_path / "new", cloud_url=url, cloud_token=token,
                         encryption="off", clock=Skewed(YEAR)) as new:
            new.restore()
            assert new.store.count_facts("warm") == 4
            assert abs(new.clock() - time.time()) < 60          # it goes by the cloud's time
            assert abs(new.get(early.id).created_at - time.time()) < 60
    finally:
        _close(devs)


def test_a_fact_stored_under_a_1970_clock_is_restored_as_a_fact_of_today(fresh_db, tmp_path):
    """A Raspberry Pi without a clock boots in 1970: what it stored before its first sync
    counts as stored now (its clock is set right by the cloud's), so a plain restore brings
    it into warm instead of leaving it in the archive as 56 years old."""
    url, token = fresh_db
    devs = _devices(tmp_path, url, token, Pi=-(time.time() - 86_400.0))
    try:
        fact = devs["Pi"].remember("The garden shed key is under the blue pot", category="home")
        assert fact.created_at < 200_000
        devs["Pi"].sync()
        assert abs(devs["Pi"].get(fact.id).created_at - time.time()) < 60
        assert abs(devs["Pi"].clock() - time.time()) < 60
        with Memory.open("sam", home=tmp_path / "new", cloud_url=url, cloud_token=token,
                         encryption="off") as new:
            new.restore()
            assert new.get(fact.id) is not None and new.get(fact.id).tier == "warm"
            assert abs(new.get(fact.id).created_at - time.time()) < 60
    finally:
        _close(devs)
