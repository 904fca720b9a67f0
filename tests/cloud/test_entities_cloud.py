"""Entities sync and restore with the critical state, against a real sqld; the push after a
conversation stays one HTTP request (counted on the wire, not by the engine's own report)."""

from __future__ import annotations

import time

import httpx

from evoclaw_memory import Memory
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote


class CountingTransport(httpx.BaseTransport):
    """The real HTTP transport, counting the requests it sends to sqld."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.requests = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_entities_sync_and_restore_with_one_request_per_push(fresh_db, tmp_path):
    url, token = fresh_db
    wire = CountingTransport()
    remote = SqlRemote(HranaClient(url, token, timeout=5, retries=0, transport=wire), label=url)
    try:
        with Memory.open("sam", home=tmp_path / "a") as a:
            a.sync(remote=remote)                      # registers the device first
            a.add_entity("Evoclaw", "projects", {"lang": "python"})
            before = wire.requests
            report = a.end_conversation([
                {"role": "user", "content": "My wife Sarah is flying to Lisbon on Friday for work."},
                {"role": "user", "content": "Chen Li (Lily) will look after the dog while she is away."},
            ], remote=remote, sync=True)
            assert wire.requests - before == 1, report
            a.link("Sarah", "Evoclaw", "tester")
            before = wire.requests
            assert a.sync(remote=remote).requests == 1 and wire.requests - before == 1
            sarah_facts = len(a.entity("Sarah").facts)
        with Memory.open("sam", home=tmp_path / "b") as b:
            b.restore(remote=remote)
            sarah = b.entity("Sarah")
            assert sarah.kind == "people" and len(sarah.facts) == sarah_facts > 0
            assert {(r.relation, r.other) for r in sarah.relations} >= {("wife", "owner"),
                                                                       ("tester", "Evoclaw")}
            assert b.entity("Lily").name == "Chen Li"
            assert b.entity("Evoclaw").attributes == {"lang": "python"}
    finally:
        remote.close()


def test_restore_over_a_memory_keeps_none_of_its_old_entities(fresh_db, tmp_path):
    """restore --force replaces the old memory, its entity graph included: an old name must
    not linger, nor an old link point at a restored fact that reuses its rowid."""
    url, token = fresh_db
    remote = SqlRemote(HranaClient(url, token, timeout=5, retries=0), label=url)
    try:
        with Memory.open("sam", home=tmp_path / "a") as a:
            kept = a.remember("Sarah Connor is flying to Lisbon on Friday", category="people")
            a.sync(remote=remote)
            names = {e.name for e in a.entities()}
        assert "Sarah Connor" in names
        with Memory.open("sam", home=tmp_path / "b") as b:
            b.remember("Kyle Reese fixed the old truck", category="people")
            b.restore(remote=remote, force=True, discard_unsynced=True)
            assert {e.name for e in b.entities()} == names
            assert b.entity("Sarah Connor").facts == [kept.id]
            assert {e.name for e in b.critical_state().entities} == names
    finally:
        remote.close()


def test_another_devices_edit_moves_the_links_here_too(fresh_db, tmp_path):
    """A correction made on one device reaches the other through the change feed, and the
    other's entity graph follows the new text as the editing device's does."""
    url, token = fresh_db
    remote = SqlRemote(HranaClient(url, token, timeout=5, retries=0), label=url)
    try:
        with Memory.open("sam", home=tmp_path / "a") as a, \
                Memory.open("sam", home=tmp_path / "b") as b:
            fact = a.remember("Zebulon Quagmire (Zeb) fixed the bike on Sunday",
                              category="people")
            a.sync(remote=remote)
            b.sync(remote=remote)
            assert b.entity("Zebulon Quagmire").facts == [fact.id]
            assert b.store.aliases_of(["zeb"])              # "(Zeb)": a stated alias
            a.edit(fact.id, text="Ignatius Blackwood fixed the bike on Sunday")
            a.sync(remote=remote)
            b.sync(remote=remote)
            assert b.get(fact.id).text.startswith("Ignatius Blackwood")
            assert b.entity("Ignatius Blackwood").facts == [fact.id]
            assert "Zebulon Quagmire" not in {e.name for e in b.entities()}
            assert b.store.aliases_of(["zeb"]) == {}        # the new text states none
    finally:
        remote.close()


def test_a_removed_entity_is_removed_everywhere_and_not_brought_back(fresh_db, tmp_path):
    """The owner removes a name on one device: the other device removes it at its next
    sync, its own pushes do not bring it back, a restore does not link it again from the
    old facts, and a fact said later names it again everywhere."""
    url, token = fresh_db
    remote = SqlRemote(HranaClient(url, token, timeout=5, retries=0), label=url)
    try:
        with Memory.open("sam", home=tmp_path / "a") as a, \
                Memory.open("sam", home=tmp_path / "b") as b:
            a.remember("Zebulon Quagmire fixed the bike on Sunday", category="people")
            a.sync(remote=remote)
            b.sync(remote=remote)
            assert "Zebulon Quagmire" in {e.name for e in b.entities()}
            assert a.remove_entity("Zebulon Quagmire")
            a.sync(remote=remote)
            b.sync(remote=remote)
            assert "Zebulon Quagmire" not in {e.name for e in b.entities()}
            for i in range(2):          # b's own pushes, each current with the cloud
                b.remember(f"Tea on Saturday number {i}", category="social")
                assert b.sync(remote=remote).state_pushed
                a.sync(remote=remote)
            assert "Zebulon Quagmire" not in {e.name for e in a.entities()}
        with Memory.open("sam", home=tmp_path / "c") as c:
            c.restore(remote=remote)
            assert "Zebulon Quagmire" not in {e.name for e in c.entities()}
            # The cloud keeps a fact's time in whole seconds: said in the removal's second,
            # it would count as said before it.
            time.sleep(1.1)
            later = c.remember("Zebulon Quagmire is back from Lisbon", category="people")
            c.sync(remote=remote)
        with Memory.open("sam", home=tmp_path / "a") as a:
            a.sync(remote=remote)
            assert a.entity("Zebulon Quagmire").facts == [later.id]
    finally:
        remote.close()
