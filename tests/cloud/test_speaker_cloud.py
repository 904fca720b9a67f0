"""Who said a fact travels with it (issue 13), against a real sqld: after end_conversation and
one push, a restored device (warm and --full) and a device that pulls the facts link each
fact to its speaker again, so "What ... Caroline ...?" still ranks her own words first; with
end-to-end encryption the cloud holds the speaker sealed, never the name in clear."""

from __future__ import annotations

import httpx

from evoclaw_memory import Memory
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote

PASS = "correct horse battery staple"
FAST = 2 ** 12
# Melanie's turn is *about* Caroline and repeats the query's words; only the speaker link
# tells that Caroline's own turn answers "What ... does Caroline go to?" (measured: without
# the stored speaker the relinked device ranks Melanie's fact first).
CONVERSATION = [
    {"role": "user", "name": "Caroline", "content": "I joined an LGBTQ support group at the community centre."},
    {"role": "assistant", "name": "Melanie", "content":
     "Caroline told me the LGBTQ support group was welcoming. Caroline says the support group meets weekly."},
    {"role": "user", "name": "Caroline", "content": "I signed up for a pottery class too."},
]
HERS = "Caroline joined an LGBTQ support group at the community centre."
QUERY = "What support group does Caroline go to?"


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


def spoken(mem: Memory, name: str) -> set[str]:
    """Texts of the facts linked to `name` with the role "speaker"."""
    return {text for (text,) in mem.store.conn.execute(
        "SELECT f.text FROM entity_facts l JOIN facts f ON f.rowid = l.fact_rowid "
        "JOIN entity_aliases a ON a.entity_id = l.entity_id WHERE a.alias = ? AND l.role = 'speaker'",
        (name.lower(),))}


def assert_speakers_back(mem: Memory) -> None:
    caroline = mem.entity("Caroline")
    texts = {f.text for f in mem.store.facts_by_ids(caroline.facts)}
    assert HERS in texts
    assert spoken(mem, "Caroline") == {HERS, "Caroline signed up for a pottery class too."}
    assert all(t.startswith("Caroline told Melanie") for t in spoken(mem, "Melanie"))
    assert mem.retrieve(QUERY, limit=1)[0].fact.text == HERS
    assert mem.store.conn.execute("SELECT speaker FROM facts WHERE text = ?", (HERS,)).fetchone() == ("Caroline",)


def test_speaker_survives_push_restore_full_restore_and_pull(fresh_db, tmp_path):
    url, token = fresh_db
    wire = CountingTransport()
    remote = SqlRemote(HranaClient(url, token, timeout=5, retries=0, transport=wire), label=url)
    try:
        with Memory.open("sam", home=tmp_path / "b") as b:
            b.sync(remote=remote)                      # device B knows the cloud before
        with Memory.open("sam", home=tmp_path / "a") as a:
            a.sync(remote=remote)
            before = wire.requests
            report = a.end_conversation(CONVERSATION, remote=remote, sync=True)
            assert wire.requests - before == 1, report          # still ONE request
            assert_speakers_back(a)
        rows = remote.sql.execute("SELECT text, speaker FROM cold_memories").rows
        assert {tuple(r) for r in rows} >= {(HERS, "Caroline")}
        for name, full in (("warm", False), ("full", True)):
            with Memory.open("sam", home=tmp_path / name) as restored:
                restored.restore(remote=remote, full=full)
                assert_speakers_back(restored)
        with Memory.open("sam", home=tmp_path / "b") as b:
            assert b.sync(remote=remote).pulled_facts == 3
            assert_speakers_back(b)
            # The linking catch-up rebuilds links from the stored fact: the speaker stays.
            b.store.conn.execute("DELETE FROM entity_facts")
            b.store.set_setting("entities.linked_rowid", "0")
            b.store.conn.commit()
            b.link_new_facts(None)
            assert_speakers_back(b)
        # A's edit of her fact reaches B through the change feed; the speaker stays.
        with Memory.open("sam", home=tmp_path / "a") as a:
            (mine,) = [f for f in a.store.iter_facts() if f.text == HERS]
            a.edit(mine.id, text=HERS.replace("community centre", "town library"))
            a.sync(remote=remote)
        with Memory.open("sam", home=tmp_path / "b") as b:
            b.sync(remote=remote)
            edited = b.store.get_fact(mine.id)
            assert "town library" in edited.text and edited.speaker == "Caroline"
    finally:
        remote.close()


def test_an_encrypted_agent_keeps_the_speaker_sealed_and_restores_it(make_sqld, tmp_path):
    server = make_sqld()
    url, token = server.url, server.mint_token("rw")
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as a:
        a.init_encryption(PASS, scrypt_n=FAST)
        a.end_conversation(CONVERSATION, sync=True)
        assert a.sync_status()["outbox_depth"] == 0
        remote = a.open_remote()
        try:
            rows = remote.sql.execute("SELECT speaker FROM cold_memories").rows
        finally:
            remote.close()
    speakers = [r[0] for r in rows]
    assert len(speakers) == 3 and all(s.startswith("enc:v2:") for s in speakers), speakers
    assert not any("Caroline" in s or "Melanie" in s for s in speakers)
    with Memory.open("sam", home=tmp_path / "r", cloud_url=url, cloud_token=token) as restored:
        restored.restore(passphrase=PASS)
        assert_speakers_back(restored)
    # The sealed speaker is bound to its row: moved onto another row, it fails to open and
    # that row is reported and skipped (never read as someone else's words).
    with SqlRemote(HranaClient(url, token), "raw") as raw:
        ids = dict(raw.sql.execute("SELECT speaker, id FROM cold_memories").rows)
        theirs, victim = list(ids.items())[0][0], list(ids.items())[1][1]
        raw.sql.execute("UPDATE cold_memories SET speaker = ? WHERE id = ?", (theirs, victim))
    with Memory.open("sam", home=tmp_path / "t", cloud_url=url, cloud_token=token) as tampered:
        report = tampered.restore(passphrase=PASS, full=True)
        assert any(victim in line for line in report.rejected)
        assert tampered.store.get_fact(victim) is None and tampered.store.count_facts() == 2


def test_a_fact_reinforced_by_a_conversation_gains_its_speaker_in_the_cloud(fresh_db, tmp_path):
    url, token = fresh_db
    remote = SqlRemote(HranaClient(url, token, timeout=5, retries=0), label=url)
    try:
        with Memory.open("sam", home=tmp_path / "a") as a:
            old = a.remember(HERS)                         # stored before, by nobody in particular
            a.sync(remote=remote)
            a.end_conversation(CONVERSATION[:1], remote=remote, sync=True)
            assert a.store.get_fact(old.id).speaker == "Caroline"
        assert remote.sql.execute("SELECT speaker FROM cold_memories WHERE id = ?", (old.id,)).rows == [("Caroline",)]
        with Memory.open("sam", home=tmp_path / "r") as restored:
            restored.restore(remote=remote)
            assert spoken(restored, "Caroline") == {HERS}
    finally:
        remote.close()
