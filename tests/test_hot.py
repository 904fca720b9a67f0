
import pytest

from evoclaw_memory import ValidationError
from evoclaw_memory.tiers import hot
from evoclaw_memory.limits import (HOT_MAX_BYTES, HOT_MAX_EVENTS, HOT_MAX_LESSONS,
                                   HOT_MAX_PENDING_TASKS, HOT_MAX_PROJECTS)
from evoclaw_memory.models import HotState

_counter = iter(range(10**9))


def ids():
    return f"id{next(_counter)}"


def test_identity_and_profile_merge_key_by_key():
    s = hot.apply_update(HotState(), "identity", {"agent_name": "Claw", "owner_name": "Sam"}, 1, ids)
    s = hot.apply_update(s, "identity", {"owner_preferred_name": "Sammy"}, 2, ids)
    assert (s.identity.agent_name, s.identity.owner_name, s.identity.owner_preferred_name) == \
        ("Claw", "Sam", "Sammy")
    s = hot.apply_update(s, "owner_profile", {"timezone": "Europe/London", "family": ["Lily"]}, 3, ids)
    s = hot.apply_update(s, "owner_profile", {"timezone": "Asia/Shanghai", "family": None}, 4, ids)
    assert s.owner_profile == {"timezone": "Asia/Shanghai"}
    assert s.clock["identity.owner_name"] == 1 and s.clock["owner_profile.timezone"] == 4


@pytest.mark.parametrize("key,value,msg", [
    ("identity", {"agent_nam": "x"}, "unknown identity key"),
    ("nonsense", {}, "unknown hot memory key"),
    ("lesson", {"text": "x", "colour": "red"}, "unknown lesson key"),
    ("lesson", {"text": ""}, "non-empty"),
    ("lesson", {"text": "x", "importance": 7}, "importance"),
    ("task", ["not", "an", "object"], "JSON object"),
    ("project", {"description": "no name"}, "non-empty 'name'"),
])
def test_bad_updates_are_refused(key, value, msg):
    with pytest.raises(ValidationError, match=msg):
        hot.apply_update(HotState(), key, value, 1, ids)


def test_lessons_drop_least_important_first():
    s = HotState()
    for i in range(HOT_MAX_LESSONS):
        s = hot.apply_update(s, "lesson", {"text": f"lesson {i}", "importance": 0.5 + i / 100}, i, ids)
    s = hot.apply_update(s, "lesson", {"text": "the vital one", "importance": 0.99}, 100, ids)
    texts = [l.text for l in s.critical_lessons]
    assert len(texts) == HOT_MAX_LESSONS
    assert "lesson 0" not in texts           # least important went
    assert "the vital one" in texts and "lesson 19" in texts


def test_event_task_project_limits():
    s = HotState()
    for i in range(15):
        s = hot.apply_update(s, "event", {"text": f"event {i}"}, i, ids)
        s = hot.apply_update(s, "task", {"text": f"task {i}"}, i, ids)
        s = hot.apply_update(s, "project", {"name": f"proj {i}"}, i, ids)
    ctx = s.active_context
    assert len(ctx.events) == HOT_MAX_EVENTS and ctx.events[0].text == "event 5"
    assert len(ctx.tasks) == HOT_MAX_PENDING_TASKS
    assert len(ctx.projects) == HOT_MAX_PROJECTS


def test_project_upsert_by_name_and_task_completion():
    s = hot.apply_update(HotState(), "project", {"name": "EvoClaw", "status": "active"}, 1, ids)
    s = hot.apply_update(s, "project", {"name": "evoclaw", "status": "paused"}, 2, ids)
    assert len(s.active_context.projects) == 1 and s.active_context.projects[0].status == "paused"
    s = hot.apply_update(s, "task", {"text": "Renew passport"}, 3, ids)
    task_id = s.active_context.tasks[0].id
    s = hot.apply_update(s, "complete_task", task_id, 4, ids)
    assert s.active_context.tasks == [] and s.clock[f"removed:{task_id}"] == 4
    with pytest.raises(ValidationError, match="no pending task"):
        hot.apply_update(s, "complete_task", "missing", 5, ids)


def test_size_limit_prunes_lessons_then_events():
    s = HotState()
    for i in range(10):
        s = hot.apply_update(s, "event", {"text": "e" * 290}, i, ids)
    for i in range(20):
        s = hot.apply_update(s, "lesson", {"text": f"{i} " + "l" * 280, "importance": i / 20}, 10 + i, ids)
    assert hot.state_size(s) <= HOT_MAX_BYTES
    # The most important lesson survives pruning.
    assert any(l.text.startswith("19 ") for l in s.critical_lessons)
    assert all(not l.text.startswith("0 ") for l in s.critical_lessons)


def test_profile_too_big_is_refused_not_truncated():
    s = HotState()
    for i in range(12):
        s = hot.apply_update(s, "owner_profile", {f"k{i}": "v" * 400}, i, ids)
    with pytest.raises(ValidationError, match="limit"):
        for i in range(12, 20):
            s = hot.apply_update(s, "owner_profile", {f"k{i}": "v" * 400}, i, ids)
    assert hot.state_size(s) <= HOT_MAX_BYTES


def test_markdown_render_has_sections_and_fits():
    s = hot.apply_update(HotState(), "identity", {"agent_name": "Claw", "owner_name": "Sam"}, 1, ids)
    s = hot.apply_update(s, "owner_profile", {"timezone": "Europe/London"}, 1, ids)
    s = hot.apply_update(s, "project", {"name": "Garden bot", "description": "ESP32 watering"}, 1, ids)
    s = hot.apply_update(s, "task", {"text": "Book dentist"}, 1, ids)
    s = hot.apply_update(s, "event", {"text": "Moved to Leeds"}, 1, ids)
    s = hot.apply_update(s, "lesson", {"text": "Never deploy on Friday", "importance": 0.9}, 1, ids)
    md = hot.render_markdown(s, 1_764_460_800)
    for heading in ("## Agent identity", "## Owner profile", "## Active projects",
                    "## Pending tasks", "## Recent events", "## Critical lessons", "Generated at"):
        assert heading in md
    assert "Never deploy on Friday" in md and "Garden bot" in md
    assert len(hot.render_markdown(s, 0, max_bytes=300).encode()) <= 300


def test_memory_md_written_private(mem):
    mem.update_hot("identity", '{"agent_name": "Claw"}')
    path = mem.config.memory_md_path
    assert "agent name: Claw" in path.read_text()
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_malformed_json_changes_nothing(mem):
    mem.update_hot("identity", {"agent_name": "Claw"})
    before = mem.hot
    with pytest.raises(ValidationError, match="malformed JSON"):
        mem.update_hot("identity", '{"agent_name": ')
    assert mem.hot == before


def test_tombstones_stay_bounded():
    s = HotState()
    for day in range(100):
        for i in range(3):
            s = hot.apply_update(s, "event", {"text": f"day {day} event {i}"}, day * 86_400 + i, ids)
    tombstones = [k for k in s.clock if k.startswith("removed:")]
    assert len(s.active_context.events) == 10
    assert 0 < len(tombstones) <= hot.TOMBSTONE_MAX
    oldest = min(s.clock[k] for k in tombstones)
    assert oldest >= 99 * 86_400 - hot.TOMBSTONE_DAYS * 86_400


def test_a_copied_state_is_equal_and_independent():
    """HotState.copied (used by every update, prune and shared session) is a deep copy:
    the same bytes when stored, and changing it leaves the original as it was."""
    import msgspec
    state = HotState()
    for key, value in (("identity", {"owner_name": "Ada", "trust_level": 0.5}),
                       ("owner_profile", {"pets": ["Biscuit", {"age": 3}], "n": 1, "x": 1.5}),
                       ("lesson", {"text": "Never store the PIN in a note"}),
                       ("task", {"text": "Book the dentist"}),
                       ("event", {"text": "Dentist", "timestamp": 1_700_000_000.0})):
        state = hot.apply_update(state, key, value, 1_700_000_000.0, ids)
    before = msgspec.json.encode(state)
    copy = state.copied()
    assert copy == state and msgspec.json.encode(copy) == before
    copy.owner_profile["pets"][1]["age"] = 4
    copy.active_context.tasks[0].text = "changed"
    copy.critical_lessons.clear()
    copy.clock["x"] = 1.0
    assert msgspec.json.encode(state) == before
