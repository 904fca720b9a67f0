"""The pull cursors against a real sqld: they move past the device's own rows (a push reads
what was written since the last sync, not the whole archive after a cursor that never
moved), and a forget of the newest rows never lets a later row take a rowid a cursor has
already passed."""

from __future__ import annotations

from evoclaw_memory import Memory
from evoclaw_memory.cloud.engine import KV_PULL_CURSOR
from evoclaw_memory.cloud.hrana import HranaClient


def _open(tmp_path, name, url, token):
    return Memory.open("sam", home=tmp_path / name, cloud_url=url, cloud_token=token,
                       encryption="off")


def _cloud(url, token, sql, args=()):
    with HranaClient(url, token, timeout=5, retries=1) as client:
        return client.execute(sql, args).rows


def _cursor(mem) -> int:
    return int(mem.store.get_setting(KV_PULL_CURSOR) or 0)


def test_a_one_device_agent_moves_its_cursor_past_its_own_rows(fresh_db, tmp_path):
    url, token = fresh_db
    with _open(tmp_path, "a", url, token) as a:
        for i in range(30):
            a.remember(f"Bench note {i}: the greenhouse sensor {i} reads humidity",
                       category="projects/garden")
        a.sync()
        top = _cloud(url, token, "SELECT MAX(rowid) FROM cold_memories")[0][0]
        # Before, the cursor of a device that pulled nothing stayed at 0 and every push read
        # every row of the archive after it.
        assert _cursor(a) == top
        a.remember("One more note about the greenhouse", category="projects/garden")
        a.sync()
        assert _cursor(a) == top + 1
        with _open(tmp_path, "b", url, token) as b:
            b.remember("Device B saw the heron at the pond", category="home/garden")
            b.sync()
        report = a.sync()
        assert report.pulled_facts == 1
        assert any("heron" in r.fact.text for r in a.retrieve("heron at the pond"))


def test_a_forget_of_the_newest_row_never_gives_its_rowid_to_a_later_row(fresh_db, tmp_path):
    url, token = fresh_db
    with _open(tmp_path, "a", url, token) as a, _open(tmp_path, "b", url, token) as b:
        b.sync()                                   # B is a device of the agent already
        a.remember("Kept: the boiler was serviced in March", category="home")
        a.sync()
        gone = a.remember("Scratch this: the gate code is 4411", category="home")
        a.sync()
        gone_rowid = _cloud(url, token, "SELECT rowid FROM cold_memories WHERE id = ?",
                            (gone.id,))[0][0]
        assert _cursor(a) == gone_rowid == _cloud(url, token, "SELECT MAX(rowid) FROM cold_memories")[0][0]
        a.forget(gone.id)
        a.sync()                                   # the newest row of the table is deleted
        later = b.remember("Device B: the new gate code is on the fridge", category="home")
        b.sync()
        later_rowid = _cloud(url, token, "SELECT rowid FROM cold_memories WHERE id = ?",
                             (later.id,))[0][0]
        # SQLite would give the next row the largest rowid + 1, i.e. the forgotten row's
        # rowid again, which A's cursor has passed: the mark row keeps the top where it was.
        assert later_rowid > gone_rowid
        assert a.sync().pulled_facts == 1
        assert a.get(later.id).text.startswith("Device B")
        # The mark holds nothing and belongs to no agent.
        marks = _cloud(url, token, "SELECT agent_id, text FROM cold_memories WHERE agent_id = ''")
        assert marks == [("", "")]
