"""Agents are isolated by key in the cloud (issue 26, cloud schema 12): a fact's id is unique
within its agent only, so an agent importing another's export (the same ids) really pushes
its copies, `sync --verify` says verified only when the cloud holds them, and a restore of
either agent gets its own. A cloud from before the change is rebuilt in place, every row and
rowid kept, so devices' pull cursors go on where they were."""

from __future__ import annotations

import json

from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote, migrations_after, split_statements


def _open(tmp_path, agent, name, url, token):
    return Memory.open(agent, home=tmp_path / name, cloud_url=url, cloud_token=token,
                       encryption="off")


def _raw(url, token):
    return SqlRemote(HranaClient(url, token, timeout=5, retries=1), label="raw")


def test_an_agent_importing_anothers_export_keeps_its_own_copies(fresh_db, tmp_path):
    url, token = fresh_db
    with _open(tmp_path, "ada", "a", url, token) as ada:
        ids = [ada.remember(f"Ada's note {i}: the shed key hangs by the door", category="home").id
               for i in range(4)]
        ada.sync()
        ada.export(tmp_path / "ada.jsonl")
    with _open(tmp_path, "bob", "b", url, token) as bob:
        bob.import_jsonl(tmp_path / "ada.jsonl")
        bob.edit(ids[0], text="Bob's own version of the shed key note")
        assert bob.sync().pushed_facts == 4
    with _raw(url, token) as raw:
        rows = raw.sql.execute("SELECT agent_id, COUNT(*) FROM cold_memories WHERE agent_id "
                               "IN ('ada', 'bob') GROUP BY agent_id ORDER BY agent_id").rows
        assert [tuple(r) for r in rows] == [("ada", 4), ("bob", 4)]
        texts = dict(raw.sql.execute("SELECT agent_id, text FROM cold_memories WHERE id = ?",
                                     (ids[0],)).rows)
    assert texts == {"ada": "Ada's note 0: the shed key hangs by the door",
                     "bob": "Bob's own version of the shed key note"}
    verified = CliRunner().invoke(cli, ["--json", "sync", "--verify"], catch_exceptions=False,
                                  env={"EVOCLAW_HOME": str(tmp_path / "b"),
                                       "EVOCLAW_AGENT_ID": "bob", "TURSO_DATABASE_URL": url,
                                       "TURSO_AUTH_TOKEN": token, "EVOCLAW_ENCRYPTION": "off"})
    data = json.loads(verified.stdout)
    assert verified.exit_code == 0 and data["verified"] and data["missing"] == 0, data
    for agent, text in texts.items():
        with _open(tmp_path, agent, f"restored-{agent}", url, token) as restored:
            restored.restore(full=True)
            assert restored.store.count_facts() == 4
            assert restored.get(ids[0]).text == text


def test_verify_is_not_verified_while_the_cloud_still_lacks_rows(fresh_db, tmp_path):
    """A cloud that takes the re-push and still lacks the rows (here: a trigger that deletes
    every row this agent writes) is reported as not verified, with what it still lacks."""
    url, token = fresh_db
    env = {"EVOCLAW_HOME": str(tmp_path / "a"), "EVOCLAW_AGENT_ID": "ada",
           "TURSO_DATABASE_URL": url, "TURSO_AUTH_TOKEN": token, "EVOCLAW_ENCRYPTION": "off"}
    with _open(tmp_path, "ada", "a", url, token) as ada:
        for i in range(3):
            ada.remember(f"Ada's note {i} about the allotment", category="garden")
        ada.sync()
    with _raw(url, token) as raw:
        raw.sql.execute("DELETE FROM cold_memories WHERE agent_id = 'ada'")
        raw.sql.execute("CREATE TRIGGER swallow AFTER INSERT ON cold_memories WHEN "
                        "new.agent_id = 'ada' BEGIN DELETE FROM cold_memories WHERE rowid = "
                        "new.rowid; END")
    result = CliRunner().invoke(cli, ["--json", "sync", "--verify"], catch_exceptions=False,
                                env=env)
    data = json.loads(result.stdout)
    assert data["missing"] == 3 and data["requeued"] == 3
    assert data["verified"] is False and data["still_missing"] == 3, data


def _schema_11_cloud(url, token) -> None:
    """A cloud as the release before agent-scoped ids left it (schema 1-11)."""
    with _raw(url, token) as raw:
        raw.sql.execute("CREATE TABLE IF NOT EXISTS evoclaw_schema_version (version INTEGER "
                        "PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
        for version, name, sql in migrations_after(0):
            if version > 11:
                break
            for stmt in split_statements(sql):
                raw.sql.execute(stmt)
            raw.sql.execute("INSERT INTO evoclaw_schema_version VALUES (?, ?, 0)", (version, name))


def test_an_older_cloud_is_rebuilt_with_every_row_and_rowid(fresh_db, tmp_path):
    url, token = fresh_db
    _schema_11_cloud(url, token)
    with _raw(url, token) as raw:
        for rowid, fid, agent in ((3, "f1", "ada"), (7, "f2", "ada"), (9, "f3", "bob")):
            raw.sql.execute("INSERT INTO cold_memories (rowid, id, agent_id, text, category, "
                            "created_at, changed_at, content_changed_at, flags_changed_at, "
                            "flags) VALUES (?, ?, ?, ?, 'home', 1700000000, 5, 5, 5, 1)",
                            (rowid, fid, agent, f"{agent}'s fact {fid}"))
        before = raw.sql.execute("SELECT rowid, * FROM cold_memories ORDER BY rowid").rows
    with _open(tmp_path, "ada", "a", url, token) as ada:
        ada.restore(full=True)                        # migrates to 12 on its first request
        assert sorted(f.id for f in ada.store.iter_facts()) == ["f1", "f2"]
        assert ada.get("f1").pinned
    with _raw(url, token) as raw:
        assert raw.sql.execute("SELECT MAX(version) FROM evoclaw_schema_version").rows[0][0] >= 12
        after = raw.sql.execute("SELECT rowid, * FROM cold_memories ORDER BY rowid").rows
        assert after == before                                  # every value, every rowid
        # The key is (agent_id, id) now: another agent may hold the same id.
        raw.sql.execute("INSERT INTO cold_memories (id, agent_id, text, category, created_at) "
                        "VALUES ('f1', 'bob', 'bob has an f1 too', 'home', 1700000000)")
        assert raw.sql.execute("SELECT COUNT(*) FROM cold_memories WHERE id = 'f1'").rows[0][0] == 2
        # ...and the index the trigger and the feeds rely on came back.
        names = {r[0] for r in raw.sql.execute(
            "SELECT name FROM sqlite_master WHERE tbl_name = 'cold_memories'").rows}
        assert {"idx_cold_agent_category", "idx_cold_agent_created",
                "cold_memories_change_clocks"} <= names
