"""A hot state that an older release poisoned (one NaN lesson stored as null) is read with
everything that still reads - the bad field falls back to its default, the entry and every
other entry are kept - locally and from the cloud, instead of blocking every command or
being adopted as empty (issue 12)."""

import json
import sqlite3

from evoclaw_memory import Memory
from evoclaw_memory.cloud.codec import decode_state


def _poison(db_path, lesson_text):
    conn = sqlite3.connect(db_path)
    data = json.loads(conn.execute("SELECT data FROM hot_state WHERE id = 1").fetchone()[0])
    data["critical_lessons"].append({"id": "bad1", "text": lesson_text, "timestamp": None})
    conn.execute("UPDATE hot_state SET data = ? WHERE id = 1", (json.dumps(data),))
    conn.commit()
    conn.close()


def test_a_poisoned_local_hot_state_keeps_its_good_entries_and_syncs(tmp_path):
    with Memory.open("sam", home=tmp_path) as mem:
        mem.update_hot("lesson", {"text": "Never deploy on Fridays", "importance": 0.9})
        mem.remember("Biscuit is allergic to chicken", category="home/pets")
        db = mem.config.db_path
    _poison(db, "poisoned")
    with Memory.open("sam", home=tmp_path) as mem:
        lessons = {lesson.text: lesson.timestamp for lesson in mem.hot.critical_lessons}
        assert set(lessons) == {"Never deploy on Fridays", "poisoned"}
        assert lessons["poisoned"] == 0.0
        assert "Never deploy on Fridays" in mem.render_memory_md()
        report = mem.sync()
        assert report.state_pushed
        mem.update_hot("lesson", {"text": "Back up before upgrades"})
        assert len(mem.hot.critical_lessons) == 3


def test_a_poisoned_cloud_state_is_not_adopted_as_empty():
    data = json.dumps({"hot": {"critical_lessons": [
        {"id": "a", "text": "Keep the EpiPen in the car", "timestamp": 1.0},
        {"id": "b", "text": "bad", "timestamp": None}]}, "tree": [], "updated_at": 5.0})
    state = decode_state(data)
    assert [(lesson.text, lesson.timestamp) for lesson in state.hot.critical_lessons] == [
        ("Keep the EpiPen in the car", 1.0), ("bad", 0.0)]
    assert state.updated_at == 5.0


def test_an_unreadable_entry_is_dropped_and_the_rest_kept():
    data = json.dumps({"hot": {"critical_lessons": [
        {"id": "a", "text": "Water the basil"}, {"text": None}, "junk"]}})
    state = decode_state(data)
    assert [lesson.text for lesson in state.hot.critical_lessons] == ["Water the basil"]
