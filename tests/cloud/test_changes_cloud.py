"""A fact changed on one device reaches the owner's other devices (issue 18), against a real
sqld: pin, unpin, the privacy mark, edit, supersede/unsupersede and forget made on device A
are seen by device B at its next sync (one request each way), and by a device restored
afterwards. Conflicts follow the documented rule: the later change wins part by part
(content, flags), whichever device pushes first; a forget wins over any edit."""

from __future__ import annotations

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote

PASS = "correct horse battery staple"
FAST = 2 ** 12


class Clock:
    """A device's clock the test moves by hand (conflicts are decided by change times)."""

    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def _open(tmp_path, name, url, token, encrypted=False, clock=None):
    extra = {"clock": clock} if clock is not None else {}
    return Memory.open("sam", home=tmp_path / name, cloud_url=url, cloud_token=token,
                       encryption="on" if encrypted else "off", **extra)


def _raw(url, token):
    return SqlRemote(HranaClient(url, token, timeout=5, retries=1), label="raw")


def _ids(mem, query, audience="owner"):
    return [r.fact.id for r in mem.retrieve(query, audience=audience)]


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "sealed"])
def test_each_change_on_a_reaches_b_and_a_restore(fresh_db, tmp_path, encrypted):
    url, token = fresh_db
    with _open(tmp_path, "a", url, token, encrypted) as a, \
            _open(tmp_path, "b", url, token, encrypted) as b:
        if encrypted:
            a.init_encryption(PASS, scrypt_n=FAST)
        vent = a.remember("The greenhouse vent opens at 24 degrees", category="projects/garden")
        vet = a.remember("Luna's vet is Dr Hargreve", category="home/pets", importance=0.6)
        key = a.remember("The spare key is under the blue flowerpot", category="home")
        code = a.remember("The shed padlock code is 7781", category="home")
        old = a.remember("Sam runs 5 km on Sundays", category="owner/health")
        new = a.remember("Sam runs 10 km on Sundays", category="owner/health")
        a.sync()
        b.restore(passphrase=PASS if encrypted else None)
        assert b.sync().requests == 1
        assert b.get(vent.id).text == vent.text and not b.get(key.id).pinned

        def a_then_b():
            assert a.sync().requests == 1            # the change goes in ONE request
            report = b.sync()
            # and comes back in one, also when it moves B's tree (a category B lacked, a
            # pulled forget): A's state in the same answer already holds that tree
            assert report.requests == 1
            return report

        a.pin(key.id)
        assert a_then_b().changed == 1
        assert b.get(key.id).pinned and b.get(key.id).tier == "warm"

        a.unpin(key.id)
        a_then_b()
        assert not b.get(key.id).pinned

        a.mark_private(code.id)
        a_then_b()
        assert b.get(code.id).private
        assert code.id in _ids(b, "shed padlock code")
        assert code.id not in _ids(b, "shed padlock code", audience="shared")

        a.edit(vet.id, text="Luna's vet is Dr Hargreaves at Spire Vets", category="home/vets",
               importance=0.9)
        a_then_b()
        got = b.get(vet.id)
        assert (got.text, got.category, got.importance) == (
            "Luna's vet is Dr Hargreaves at Spire Vets", "home/vets", 0.9)
        assert vet.id in _ids(b, "Spire Vets")                     # the full-text entry follows
        assert [v.text for v in b.history(vet.id).versions] == ["Luna's vet is Dr Hargreve"]
        counts = {n.path: n.warm_count for n in b.store.tree_nodes()}
        assert counts.get("home/vets") == 1 and counts.get("home/pets", 0) == 0

        a.supersede(old.id, new.id)
        a_then_b()
        assert b.get(old.id).superseded_by == new.id
        assert old.id not in _ids(b, "Sam runs km Sundays")
        a.unsupersede(old.id)
        a_then_b()
        assert b.get(old.id).superseded_by is None
        assert old.id in _ids(b, "Sam runs km Sundays")

        a.forget(vent.id)
        assert a_then_b().forgotten == 1
        assert b.store.get_fact(vent.id) is None

        # Nothing comes back the other way: B's pulls queued nothing for the cloud.
        assert b.store.outbox_depth() == 0 or b.sync().requests == 1

        # A device restored now holds the latest version of everything.
        with _open(tmp_path, "c", url, token, encrypted) as c:
            c.restore(passphrase=PASS if encrypted else None)
            assert c.store.get_fact(vent.id) is None
            assert not c.get(key.id).pinned and c.get(code.id).private
            assert c.get(vet.id).text == "Luna's vet is Dr Hargreaves at Spire Vets"
            assert c.get(old.id).superseded_by is None
            # Its change cursor starts at the feed's end: its first sync pulls no old change.
            assert c.sync().changed == 0
            a.edit(key.id, text="The spare key is in the garage")
            a.sync()
            assert c.sync().changed == 1 and c.get(key.id).text == "The spare key is in the garage"


def test_the_later_change_wins_whoever_pushes_first(fresh_db, tmp_path):
    url, token = fresh_db
    clock_a, clock_b = Clock(1_800_000_000.0), Clock(1_800_000_000.0)
    with _open(tmp_path, "a", url, token, clock=clock_a) as a, \
            _open(tmp_path, "b", url, token, clock=clock_b) as b:
        one = a.remember("The boiler service is in March", category="home")
        two = a.remember("The car insurance renews in June", category="home")
        a.sync()
        b.restore()
        # one: B's edit is later but A pushes last; two: A's edit is later and A pushes last.
        clock_a.now += 10
        a.edit(one.id, text="The boiler service is in April")
        b.edit(two.id, text="The car insurance renews in July")
        clock_b.now += 20
        b.edit(one.id, text="The boiler service is in May")
        clock_a.now += 30
        a.edit(two.id, text="The car insurance renews in August")
        assert b.sync().requests == 1
        report = a.sync()                  # A's older edit of `one` loses: it pulls B's
        assert report.requests == 1 and report.changed == 1
        b.sync()
        for mem in (a, b):
            assert mem.get(one.id).text == "The boiler service is in May"
            assert mem.get(two.id).text == "The car insurance renews in August"
        with _raw(url, token) as raw:
            rows = dict(raw.sql.execute("SELECT id, text FROM cold_memories").rows)
        assert rows[one.id] == "The boiler service is in May"
        assert rows[two.id] == "The car insurance renews in August"
        # A change made after seeing another device's version wins over it even when this
        # device's clock is behind (its change time moves past the version it holds).
        seen = a.get(one.id).changed_at                 # B's edit, at B's clock
        clock_a.now -= 3600
        a.pin(one.id)
        assert a.get(one.id).changed_at > seen
        a.sync()
        b.sync()
        assert b.get(one.id).pinned and b.get(one.id).text == "The boiler service is in May"


@pytest.mark.parametrize("order", ["forget-first", "edit-first"])
def test_a_forget_wins_over_a_concurrent_edit(fresh_db, tmp_path, order):
    url, token = fresh_db
    clock_a, clock_b = Clock(1_800_000_000.0), Clock(1_800_000_000.0)
    with _open(tmp_path, "a", url, token, clock=clock_a) as a, \
            _open(tmp_path, "b", url, token, clock=clock_b) as b:
        fact = a.remember("My old address is 12 Elm Street", category="owner/home")
        a.sync()
        b.restore()
        clock_a.now += 10
        a.forget(fact.id)
        clock_b.now += 100                   # the edit is the later change, and still loses
        b.edit(fact.id, text="My old address is 14 Elm Street")
        b.pin(fact.id)
        first, second = (a, b) if order == "forget-first" else (b, a)
        assert first.sync().requests == 1
        second.sync()
        first.sync()
        for mem in (a, b):
            assert mem.store.get_fact(fact.id) is None
            assert _ids(mem, "Elm Street address") == []
        with _raw(url, token) as raw:
            assert raw.sql.execute("SELECT count(*) FROM cold_memories WHERE id = ?",
                                   (fact.id,)).rows[0][0] == 0
            assert raw.sql.execute("SELECT count(*) FROM cold_changes WHERE id = ?",
                                   (fact.id,)).rows[0][0] == 0
        with _open(tmp_path, "c", url, token) as c:
            c.restore(full=True)
            assert c.store.get_fact(fact.id) is None


def test_a_supersession_sticks_against_a_device_that_had_not_seen_it(fresh_db, tmp_path):
    url, token = fresh_db
    clock_a, clock_b = Clock(1_800_000_000.0), Clock(1_800_000_000.0)
    with _open(tmp_path, "a", url, token, clock=clock_a) as a, \
            _open(tmp_path, "b", url, token, clock=clock_b) as b:
        old = a.remember("Sam's dentist is Dr Patel", category="owner/health")
        new = a.remember("Sam's dentist is Dr Moreau", category="owner/health")
        a.sync()
        b.restore()
        clock_a.now += 10
        a.supersede(old.id, new.id)
        a.sync()
        clock_b.now += 100                 # later, but made without seeing the supersession
        b.pin(old.id)
        # The pin and the supersession are different parts (issue 26): B's version is not
        # taken whole; the cloud's comes back, B merges (the supersession sticks, the pin, a
        # change of the flags nobody else changed, stays) and pushes the merge, in this sync.
        assert b.sync().requests == 2
        with _raw(url, token) as raw:
            (superseded, flags), = raw.sql.execute(
                "SELECT superseded_by, flags FROM cold_memories WHERE id = ?", (old.id,)).rows
        assert (superseded, flags & 1) == (new.id, 1)
        assert b.get(old.id).superseded_by == new.id and b.get(old.id).pinned
        assert old.id not in _ids(b, "Sam's dentist")
        a.sync()
        assert a.get(old.id).superseded_by == new.id and a.get(old.id).pinned


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "sealed"])
@pytest.mark.parametrize("order", ["a-first", "b-first"])
def test_concurrent_changes_of_different_parts_both_stay(fresh_db, tmp_path, encrypted, order):
    """A pin (or privacy mark) on one device and an edit on the other, before either saw the
    other's: the content comes from the later content change, the flags from the later flag
    change, whichever device pushes first and whichever change is later overall."""
    url, token = fresh_db
    clock_a, clock_b = Clock(1_800_000_000.0), Clock(1_800_000_000.0)
    with _open(tmp_path, "a", url, token, encrypted, clock=clock_a) as a, \
            _open(tmp_path, "b", url, token, encrypted, clock=clock_b) as b:
        if encrypted:
            a.init_encryption(PASS, scrypt_n=FAST)
        boiler = a.remember("The boiler service is in March", category="home")
        bank = a.remember("Our bank branch is on Elm Street", category="home", private=False)
        a.sync()
        b.restore(passphrase=PASS if encrypted else None)
        clock_a.now += 10
        a.pin(boiler.id)                              # earlier than B's edit of it
        clock_b.now += 20
        b.edit(boiler.id, text="The boiler service is in April")
        b.edit(bank.id, importance=0.9)
        clock_a.now += 30
        a.mark_private(bank.id)                       # later than B's edit of it
        first, second = (a, b) if order == "a-first" else (b, a)
        for mem in (first, second, first, second):
            mem.sync()
        for mem in (a, b):
            got = mem.get(boiler.id)
            assert (got.text, got.pinned) == ("The boiler service is in April", True), mem
            got = mem.get(bank.id)
            assert (got.importance, got.private) == (0.9, True), mem
        with _raw(url, token) as raw:
            flags = dict(raw.sql.execute("SELECT id, flags FROM cold_memories").rows)
            (importance,), = raw.sql.execute("SELECT importance FROM cold_memories WHERE id = ?",
                                             (bank.id,)).rows
        assert flags[boiler.id] & 1 and flags[bank.id] & 2 and importance == 0.9
        with _open(tmp_path, "c", url, token, encrypted) as c:
            c.restore(passphrase=PASS if encrypted else None)
            got = c.get(boiler.id)
            assert (got.text, got.pinned) == ("The boiler service is in April", True)
            assert c.get(bank.id).private and c.get(bank.id).importance == 0.9
        # Settled: nothing more goes either way.
        assert a.sync().changed == 0 and b.sync().changed == 0


def test_a_change_written_by_an_older_release_still_wins_whole(fresh_db, tmp_path):
    """A release from before the parts' clocks moves only changed_at (its upsert names no
    other clock column): the cloud's trigger moves both clocks with it, so its change wins
    whole at the other devices, as it did before."""
    url, token = fresh_db
    clock_b = Clock(1_800_000_000.0)
    with _open(tmp_path, "a", url, token) as a, _open(tmp_path, "b", url, token, clock=clock_b) as b:
        fact = a.remember("The boiler service is in March", category="home")
        a.sync()
        b.restore()
        clock_b.now += 10
        b.mark_private(fact.id)          # earlier than the older release's pin below
        later = clock_b.now + 50
        with _raw(url, token) as raw:
            raw.sql.execute("UPDATE cold_memories SET text = ?, flags = 1, changed_at = ? "
                            "WHERE id = ?", ("The boiler service is in May", later, fact.id))
            raw.sql.execute("INSERT OR REPLACE INTO cold_changes (agent_id, id, device_id) "
                            "VALUES ('sam', ?, 'dev-old')", (fact.id,))
            (content, flags), = raw.sql.execute(
                "SELECT content_changed_at, flags_changed_at FROM cold_memories WHERE id = ?",
                (fact.id,)).rows
        assert content == flags == later
        b.sync()
        got = b.get(fact.id)
        assert (got.text, got.pinned, got.private) == ("The boiler service is in May", True, False)
