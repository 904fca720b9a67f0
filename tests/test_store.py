import sqlite3
import stat
import subprocess
import sys

import pytest

from evoclaw_memory import Memory, StoreError, ValidationError
from evoclaw_memory.store import migrate
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.text import key_digest, normalized_key


def test_database_is_private_and_wal(mem, home):
    db = home / "agents" / "test-agent" / "memory.db"
    assert db.exists()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    assert mem.store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migrations_rerun_is_noop(tmp_path):
    store = LocalStore.open(tmp_path / "m.db")
    version = store.conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
    assert version == migrate.latest_version("local") >= 1
    store.close()
    store = LocalStore.open(tmp_path / "m.db")
    rows = store.conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0]
    assert rows == len(migrate.migrations("local"))     # numbers may skip (parallel branches)
    store.close()


def test_newer_database_is_refused(tmp_path):
    LocalStore.open(tmp_path / "m.db").close()
    conn = sqlite3.connect(tmp_path / "m.db")
    conn.execute("INSERT INTO schema_version VALUES (999, '0999_future.sql', 0)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        LocalStore.open(tmp_path / "m.db")


def test_corrupted_database_is_a_clear_error_and_kept(home, clock):
    with Memory.open("a", home=home, clock=clock) as m:
        m.remember("keep me", category="x")
    db = home / "agents" / "a" / "memory.db"
    for extra in ("-wal", "-shm"):
        (db.parent / (db.name + extra)).unlink(missing_ok=True)
    db.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not a usable evoclaw database"):
        Memory.open("a", home=home, clock=clock)
    assert db.read_bytes().startswith(b"this is not sqlite")   # nothing deleted
    # Another agent's memory is untouched by the broken one.
    with Memory.open("b", home=home, clock=clock) as other:
        other.remember("fine", category="x")


def test_outbox_written_in_same_transaction(mem):
    fact = mem.remember("The wifi password is on the fridge", category="home")
    kinds = [(k, r) for _, k, r in mem.store.outbox()]
    assert ("fact", fact.id) in kinds
    assert ("state", "state") in kinds          # the new tree node "home"
    # The state entry is coalesced: one row, however many changes.
    second = mem.remember("Second fact", category="home")
    mem.update_hot("identity", {"agent_name": "Claw"})
    assert sum(1 for _, k, _ in mem.store.outbox() if k == "state") == 1
    assert mem.store.outbox()[-1][1] == "state"
    # A fact filed under an existing node queues only itself: the engine pushes the state
    # (its tree counts) with every batch of facts.
    mem.store.ack_outbox([seq for seq, _, _ in mem.store.outbox()])
    third = mem.remember("Third fact", category="home")
    assert [(k, r) for _, k, r in mem.store.outbox()] == [("fact", third.id)]
    assert second.id != third.id


def _warm_sum(store):
    return store.conn.execute(
        "SELECT COALESCE(SUM(size), 0) FROM facts WHERE tier = 'warm'").fetchone()[0]


def test_warm_total_kept_between_calls_is_always_the_true_sum(home, clock):
    with Memory.open("w", home=home, clock=clock, warm_max_bytes=2_000) as mem:
        for i in range(60):                       # well past the cap: eviction rounds too
            mem.remember(f"note {i} about the {i % 7} greenhouse shelf", category="garden")
            assert mem.store.warm_bytes() == _warm_sum(mem.store) <= 2_000
        # Another connection (another process, say) changes the warm tier: the kept total
        # must not be trusted after that.
        with Memory.open("w", home=home, clock=clock, warm_max_bytes=2_000) as other:
            other.store.conn.execute("UPDATE facts SET tier = 'cold' WHERE tier = 'warm' "
                                     "AND rowid % 2 = 0")
        assert mem.store.warm_bytes() == _warm_sum(mem.store)
        mem.remember("one more note about the shelf", category="garden")
        assert mem.store.warm_bytes() == _warm_sum(mem.store) <= 2_000


def test_warm_total_is_dropped_with_a_rolled_back_remember(mem, monkeypatch):
    mem.remember("first note", category="garden")
    before = mem.store.warm_bytes()

    note = mem.store.note_warm_bytes

    def note_then_fail(total):      # the last step of remember(), then the commit fails
        note(total)
        raise RuntimeError("disk trouble")
    monkeypatch.setattr(mem.store, "note_warm_bytes", note_then_fail)
    with pytest.raises(RuntimeError):
        mem.remember("second note, never stored", category="garden")
    monkeypatch.undo()
    assert mem.store.count_facts() == 1
    assert mem.store.warm_bytes() == _warm_sum(mem.store) == before


def _fulltext_rows(store):
    indexed = store.conn.execute("SELECT count(*) FROM facts_fts").fetchone()[0]
    waiting = store.conn.execute("SELECT count(*) FROM fts_pending").fetchone()[0]
    return indexed, waiting


def test_new_facts_wait_for_the_full_text_index_and_are_still_found(mem):
    from evoclaw_memory.store.local import FULLTEXT_BATCH
    fact = mem.remember("Biscuit hides the tennis ball under the sofa", category="pets")
    assert _fulltext_rows(mem.store) == (0, 1)
    assert [r.fact.id for r in mem.retrieve("tennis ball")][:1] == [fact.id]
    assert _fulltext_rows(mem.store) == (1, 0)          # a search indexes what waits first
    for i in range(FULLTEXT_BATCH):
        mem.remember(f"greenhouse sensor {i} reads humidity", category="garden")
    indexed, waiting = _fulltext_rows(mem.store)
    assert indexed + waiting == FULLTEXT_BATCH + 1 and waiting < FULLTEXT_BATCH


def test_waiting_full_text_entries_survive_a_restart(home, clock):
    with Memory.open("r", home=home, clock=clock) as mem:
        fact = mem.remember("The spare key is in the blue flowerpot", category="home")
    with Memory.open("r", home=home, clock=clock) as mem:
        assert _fulltext_rows(mem.store) == (0, 1)
        assert [r.fact.id for r in mem.retrieve("spare key flowerpot")][:1] == [fact.id]


def test_reindexing_or_deleting_a_waiting_fact_keeps_one_entry_per_fact(mem):
    kept = mem.remember("Tomatoes need shade in July", category="garden")
    gone = mem.remember("Mint spreads everywhere", category="garden")
    mem.store.reindex_fact(kept.id, "tomato need shade july allotment")
    mem.store.delete_facts([gone.id])
    assert _fulltext_rows(mem.store) == (0, 1)
    assert [f.id for f, _ in mem.store.search('"allotment"')] == [kept.id]
    assert mem.store.search('"mint"') == []
    assert _fulltext_rows(mem.store) == (1, 0)
    # Once indexed, a reindex replaces the entry in the index itself.
    mem.store.reindex_fact(kept.id, "tomato need shade july greenhouse")
    assert [f.id for f, _ in mem.store.search('"greenhouse"')] == [kept.id]
    assert mem.store.search('"allotment"') == []
    assert _fulltext_rows(mem.store) == (1, 0)


def test_release_two_database_is_migrated(tmp_path):
    """A database written by the previous release: full-text duplicate keys, the three
    indexes remember() no longer keeps, and a bulk load that died with them dropped."""
    path = tmp_path / "home" / "agents" / "old" / "memory.db"
    path.parent.mkdir(parents=True, mode=0o700)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at REAL NOT NULL)")
    for version, name, sql in migrate.migrations("local")[:2]:
        conn.executescript(sql)
        conn.execute("INSERT INTO schema_version VALUES (?, ?, 0)", (version, name))
    old_key = normalized_key("The wifi password is on the fridge")   # as release 2 stored it
    conn.execute("INSERT INTO facts (id, text, category, importance, created_at, last_access, "
                 "norm_key, size) VALUES ('old-1', 'The wifi password is on the fridge', 'home', "
                 "0.5, 0, 0, ?, 34)", (old_key,))
    conn.execute("INSERT INTO facts_fts (rowid, body) VALUES (1, 'the wifi password fridg home')")
    conn.execute("INSERT INTO kv VALUES ('store.deferred_indexes', json_object("
                 "'facts_created', 'CREATE INDEX facts_created ON facts (created_at)', "
                 "'facts_norm_key', 'CREATE INDEX facts_norm_key ON facts (norm_key)'))")
    conn.execute("DROP INDEX facts_norm_key")
    conn.close()
    store = LocalStore.open(path)
    names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "facts_norm_key" in names                  # the killed load's index is back
    assert not names & {"facts_created", "facts_tier_size", "audit_ts"}
    assert store.get_setting("store.deferred_indexes") is None
    assert store.conn.execute("SELECT norm_key FROM facts").fetchone()[0] == \
        key_digest(old_key)
    store.close()
    with Memory.open("old", home=tmp_path / "home") as mem:
        twin = mem.remember("the WiFi password is on the fridge!", category="home")
        assert twin.id == "old-1" and mem.store.count_facts() == 1


def test_a_digest_collision_does_not_merge_two_facts(mem, monkeypatch):
    import evoclaw_memory.store.local as store_module
    first = mem.remember("Feed the cat at seven", category="home")
    monkeypatch.setattr(store_module, "key_digest", lambda key: "same-for-every-key")
    mem.store.conn.execute("UPDATE facts SET norm_key = 'same-for-every-key'")
    second = mem.remember("Water the ferns on Sunday", category="home")
    assert second.id != first.id and mem.store.count_facts() == 2
    again = mem.remember("water the ferns on sunday", category="home")
    assert again.id == second.id


def test_failed_change_leaves_no_outbox_or_fact(mem):
    before = mem.store.outbox_depth()
    with pytest.raises(ValidationError):
        mem.remember("x" * 3000, category="home")
    with pytest.raises(ValidationError):
        mem.remember("ok text", category="../etc")
    assert mem.store.outbox_depth() == before
    assert mem.store.count_facts() == 0


def test_audit_log_records_mutations(mem):
    fact = mem.remember("Audit me", category="misc")
    mem.update_hot("lesson", {"text": "Check twice", "importance": 0.9})
    ops = [row[1] for row in mem.store.audit_log()]
    assert "remember" in ops and "hot.lesson" in ops and "tree.add" in ops
    targets = [row[2] for row in mem.store.audit_log()]
    assert fact.id in targets


def test_invalid_agent_ids_rejected(home):
    for bad in ("../../etc", "a/b", "", ".hidden", "x" * 65, "a b"):
        with pytest.raises(ValidationError, match="invalid agent id"):
            Memory.open(bad, home=home)
    assert not (home / "etc").exists()


def _bulk_rows(mem, texts, tier_by_score=False):
    from evoclaw_memory.models import Fact
    now = mem.clock()
    facts = [Fact(id=f"bulk-{i}", text=t, category="home/garden", importance=0.5,
                  created_at=now - 400 * 86_400, last_access=now - 400 * 86_400)
             for i, t in texts]
    return mem.prepare_bulk(facts, tier_by_score)


def test_bulk_insert_skips_known_ids_and_indexes_only_new_rows(mem):
    first = _bulk_rows(mem, [(0, "tomatoes need shade"), (1, "basil likes sun")])
    assert mem.insert_prepared(first) == 2
    again = _bulk_rows(mem, [(1, "basil likes sun"), (2, "mint spreads everywhere")])
    assert mem.insert_prepared(again) == 1
    conn = mem.store.conn
    assert conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0] == 3
    # every full-text row belongs to a stored fact: the skipped one left nothing behind
    assert conn.execute("SELECT COUNT(*) FROM facts_fts").fetchone()[0] == 3
    assert conn.execute("SELECT COUNT(*) FROM facts_fts WHERE rowid NOT IN "
                        "(SELECT rowid FROM facts)").fetchone()[0] == 0
    assert [r.fact.id for r in mem.retrieve("mint spreads")][:1] == ["bulk-2"]
    assert [r.fact.id for r in mem.retrieve("garden basil")][:1] == ["bulk-1"]


def test_bulk_insert_in_many_statements_keeps_every_value(mem, monkeypatch):
    """A bulk load sends its rows as statements of many rows each, as many as the store's
    limit on ? allows: with a limit of 45, two facts a statement. Every value reads back as
    given (times to the bit), a known id is skipped in whichever statement it falls, and
    the full-text and alias rows follow the facts that landed."""
    monkeypatch.setattr(type(mem.store), "_variable_limit", lambda self: 45)
    texts = [(i, f"fact {i} about Chen Li (Lily) and the garden") for i in range(7)]
    first = _bulk_rows(mem, texts[:3])
    assert mem.insert_prepared(first) == 3
    rows = _bulk_rows(mem, texts)
    stamped = [(values[:4] + (values[4] + i / 7,) + values[5:], body)      # distinct times
               for i, (values, body) in enumerate(rows)]
    assert mem.insert_prepared(stamped) == 4
    got = {f.id: f for f in mem.store.iter_facts()}
    assert sorted(got) == [f"bulk-{i}" for i in range(7)]
    for values, _ in stamped[3:]:
        assert got[values[0]].created_at == values[4]          # exact: no text round trip
    conn = mem.store.conn
    assert conn.execute("SELECT COUNT(*) FROM facts_fts").fetchone()[0] == 7
    assert conn.execute("SELECT COUNT(DISTINCT fact_rowid) FROM aliases").fetchone()[0] == 7
    assert [r.fact.id for r in mem.retrieve("fact 5 garden")][:1] == ["bulk-5"]


def test_bulk_insert_still_fails_loudly_on_other_constraints(mem):
    rows = _bulk_rows(mem, [(0, "a fact")])
    values, body = rows[0]
    broken = [(values[:1] + (None,) + values[2:], body)]        # text NOT NULL
    with pytest.raises(sqlite3.IntegrityError):
        mem.insert_prepared(broken)
    assert mem.store.count_facts() == 0


def _facts_indexes(store):
    return {r[0] for r in store.conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'facts' "
        "AND sql IS NOT NULL")}


def test_deferred_indexes_are_rebuilt_after_the_load(tmp_path):
    store = LocalStore.open(tmp_path / "m.db")
    before = _facts_indexes(store)
    assert {"facts_norm_key", "facts_tier_category"} <= before
    with store.indexes_deferred():
        assert _facts_indexes(store) == set()
    assert _facts_indexes(store) == before
    assert store.get_setting("store.deferred_indexes") is None
    store.close()


def test_deferred_indexes_come_back_after_a_killed_load(tmp_path):
    store = LocalStore.open(tmp_path / "m.db")
    before = _facts_indexes(store)
    store.close()
    # Another process starts a bulk load and dies in the middle of it.
    script = ("import os, sys\nfrom evoclaw_memory.store.local import LocalStore\n"
              "store = LocalStore.open(sys.argv[1])\n"
              "load = store.indexes_deferred()\n"
              "load.__enter__()\n"
              "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.db")], check=True)
    raw = sqlite3.connect(tmp_path / "m.db")
    assert raw.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' "
                       "AND name = 'facts_norm_key'").fetchone()[0] == 0
    raw.close()
    reopened = LocalStore.open(tmp_path / "m.db")
    assert _facts_indexes(reopened) == before
    assert reopened.get_setting("store.deferred_indexes") is None
    reopened.close()


def _said_by(mem, fact, speaker):
    mem.store.conn.execute("UPDATE facts SET speaker = ? WHERE id = ?", (speaker, fact.id))


def test_a_speakers_newest_facts_on_a_word_are_the_same_by_either_plan(mem, monkeypatch):
    # The write-time decision's candidates (newest_live_texts): for a speaker with few facts
    # the store walks that speaker's facts (schema 0014's index) instead of the word's whole
    # full-text list. Both plans must give the same rows: newest first, live only.
    from evoclaw_memory.store import fulltext
    from evoclaw_memory.text import fts_phrase, tokens
    word = fts_phrase(tokens("greenhouse")[0])          # as the decision asks: a stored token
    mia = []
    for i in range(90):
        fact = mem.remember(f"note {i}: the greenhouse shelf needs fixing ({i})", category="garden")
        if i % 9 == 0:
            _said_by(mem, fact, "Mia")
            mia.append(fact)
    replacement = mem.remember("Mia says the greenhouse shelf is fixed now", category="garden")
    _said_by(mem, replacement, "Mia")
    mem.supersede(mia[-1].id, replacement.id)
    statements: list[str] = []
    mem.store.conn.set_trace_callback(statements.append)
    answers = {}
    for most in (64, 0):                   # 64: Mia's 11 facts are walked; 0: the word's list
        monkeypatch.setattr(fulltext, "SPEAKER_DRIVEN_MAX", most)
        for limit in (3, 6, 50):
            answers[most, limit] = mem.store.newest_live_texts(word, "Mia", limit)
    mem.store.conn.set_trace_callback(None)
    newest_first = [(f.id, f.text) for f in [replacement, *reversed(mia[:-1])]]
    for limit in (3, 6, 50):
        assert answers[64, limit] == answers[0, limit] == newest_first[:limit]
    assert any("CROSS JOIN" in s for s in statements)
    plan = " ".join(str(r) for r in mem.store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT f.id FROM facts f WHERE f.speaker = ? ORDER BY f.rowid DESC",
        ("Mia",)))
    assert "facts_speaker" in plan and "TEMP B-TREE" not in plan


def test_the_warm_total_is_summed_from_the_index_alone(mem):
    plan = " ".join(str(r) for r in mem.store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT COALESCE(SUM(size), 0) FROM facts "
        "WHERE tier = 'warm' AND pinned = 0"))
    assert "COVERING INDEX facts_tier_category" in plan


# Bookkeeping a wiped memory keeps: the schema's version, AUTOINCREMENT's counters, the kv
# settings the caller names, and FTS5's own structure rows (config, the empty index's root).
_WIPE_KEEPS = {"schema_version", "sqlite_sequence", "kv", "facts_fts_config", "facts_fts_data"}


def test_wipe_leaves_nothing_of_the_owner_in_any_table(home, clock):
    """A revoked device wipes itself (and restore --force starts from a wipe): the names,
    relations and links of the entity graph and a sub-agent's proposals go with the facts,
    in every table, including ones added after this test was written."""
    with Memory.open("test-agent", home=home, clock=clock) as mem:
        mem.remember("My wife Sarah Connor works at Cyberdyne in Los Angeles", category="people")
        mem.remember("Sarah Connor likes hiking with John on Sundays", category="people")
        mem.update_hot("task", {"text": "Book the hiking trip"})
        with Memory.open("test-agent", home=home, clock=clock, actor="subagent:planner") as sub:
            sub.remember("Sam prefers tea after 6pm", category="owner/preferences")
        conn = mem.store.conn
        assert conn.execute("SELECT count(*) FROM entities").fetchone()[0] > 0
        assert conn.execute("SELECT count(*) FROM proposals").fetchone()[0] == 1
        mem.wipe_local()
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
            "'CREATE VIRTUAL TABLE%'")]
        left = {t: n for t in tables if t not in _WIPE_KEEPS
                for n in [conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]] if n}
        assert left == {}
        assert mem.entities() == [] and mem.critical_state().entities == []
        # the wiped memory works as a new one: names are learned again, linked to new facts
        fact = mem.remember("Sarah Connor moved to Denver", category="people")
        sarah = next(e for e in mem.entities() if e.name == "Sarah Connor")
        assert mem.entity(sarah.name).facts == [fact.id]
