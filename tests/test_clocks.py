"""The time rules of issue 26 that need no cloud: change stamps (store/change_clock.py), the
memory's clock corrected by the cloud's (store/cloud_time.py), the consolidation schedule
after a clock was set back, and event dates in the owner's time zone."""

from __future__ import annotations

import datetime as dt

from evoclaw_memory import Memory
from evoclaw_memory.agent.service import due_mode
from evoclaw_memory.models import Event, HotState
from evoclaw_memory.store.change_clock import device_tag, micros, next_stamp
from evoclaw_memory.tiers import hot as hot_rules


def test_a_stamp_moves_past_the_version_it_replaces_and_ends_in_the_device():
    tag = device_tag("dev-abc")
    assert 0 <= tag < 1000 and device_tag("dev-abc") == tag
    now = 1_800_000_000.123456
    stamp = next_stamp(now, 0.0, tag)
    assert micros(stamp) % 1000 == tag and abs(stamp - now) < 0.002
    # A version from a clock a day ahead: the change is still later than it, by >= 1 ms.
    ahead = next_stamp(now + 86_400, 0.0, device_tag("dev-other"))
    mine = next_stamp(now, ahead, tag)
    assert mine > ahead and micros(mine) - micros(ahead) >= 1000 - 999
    assert micros(mine) % 1000 == tag
    # Two devices bumping past the same version never stamp alike (unless their tags match).
    tags = {device_tag(f"dev-{i}") for i in range(50)}
    stamps = {next_stamp(now, ahead, t) for t in tags}
    assert len(stamps) == len(tags)


def test_every_stamp_survives_a_trip_through_microseconds():
    for base in (0.0, 1_000_000_000.0, 1_800_000_000.5, 4_000_000_000.0):
        for tag in (0, 1, 499, 999):
            stamp = next_stamp(base, base, tag)
            assert micros(float(repr(stamp))) == micros(stamp)
            assert next_stamp(base, stamp, tag) > stamp


def test_the_memory_goes_by_its_clock_corrected_by_the_cloud(tmp_path):
    device = [1_800_000_000.0]
    with Memory.open("sam", home=tmp_path, clock=lambda: device[0]) as mem:
        assert mem.clock() == device[0]                      # no cloud yet: its own clock
        with mem.store.transaction():
            mem.store.note_clock_offset(-3600.0, device[0] - 3600.0)
        assert mem.clock() == device[0] - 3600.0
        assert mem.remember("The gate code is 4455", category="home").created_at == \
            device[0] - 3600.0
    with Memory.open("sam", home=tmp_path, clock=lambda: device[0]) as again:
        assert again.clock() == device[0] - 3600.0           # kept in the database


def test_a_clock_set_right_brings_future_facts_back_to_now(tmp_path):
    year = 365 * 86_400.0
    device = [1_800_000_000.0 + year]                         # a year fast, never synced
    with Memory.open("sam", home=tmp_path, clock=lambda: device[0]) as mem:
        fact = mem.remember("The garden tap leaks", category="home")
        assert fact.created_at == device[0]
        with mem.store.transaction():                        # its first sync: the cloud's now
            mem.store.note_clock_offset(-year, 1_800_000_000.0)
        assert mem.get(fact.id).created_at == 1_800_000_000.0


def test_a_consolidation_stamped_in_the_future_is_due_now():
    now = dt.datetime(2026, 12, 3, 12).timestamp()
    ahead = now + 365 * 86_400                                # ran while the clock was a year fast
    last = {"quick": ahead, "daily": ahead, "monthly": ahead}
    assert due_mode(now, last, started=now - 60) == "monthly"
    same_month = {"quick": ahead, "daily": ahead, "monthly": now - 60}
    assert due_mode(now, same_month, started=now - 60) == "daily"
    fresh = {"quick": now - 60, "daily": now - 60, "monthly": now - 60}
    assert due_mode(now, fresh, started=now - 60) is None


def test_event_dates_are_the_owners_days():
    # 08:00 in Tokyo on 3 December is 23:00 UTC on 2 December.
    at = dt.datetime(2026, 12, 2, 23, 0, tzinfo=dt.timezone.utc).timestamp()
    state = HotState()
    state.active_context.events = [Event(id="e1", text="breakfast with Aiko", timestamp=at)]
    state.owner_profile["timezone"] = "Asia/Tokyo"
    assert "2026-12-03 breakfast with Aiko" in hot_rules.render_markdown(state, at)
    state.owner_profile["timezone"] = "Not/AZone"               # unknown: this device's zone
    local_day = dt.datetime.fromtimestamp(at).strftime("%Y-%m-%d")
    assert f"{local_day} breakfast with Aiko" in hot_rules.render_markdown(state, at)


def test_an_owner_in_the_device_zone_gets_the_same_days_without_zoneinfo(monkeypatch):
    """tiers.hot_rules.owner_zone skips zoneinfo (start-up time) only when the owner's zone is the
    one /etc/localtime names and no TZ overrides it; the days shown are the same."""
    import os
    from zoneinfo import ZoneInfo

    monkeypatch.delenv("TZ", raising=False)
    monkeypatch.delenv("PYTHONTZPATH", raising=False)
    try:
        device = os.readlink("/etc/localtime").rpartition("/zoneinfo/")[2]
    except OSError:
        device = ""
    other = "Asia/Tokyo" if device != "Asia/Tokyo" else "America/New_York"
    state = HotState()
    for name, expect_zoneinfo in ((device, False), (other, True)):
        if not name:
            continue
        state.owner_profile["timezone"] = name
        zone = hot_rules.owner_zone(state)
        assert (zone is not None) == expect_zoneinfo, name
        for ts in (1_764_720_000.0, 1_764_777_599.0, 1_780_000_000.0):
            assert hot_rules._when(ts, zone) == dt.datetime.fromtimestamp(
                ts, ZoneInfo(name)).strftime("%Y-%m-%d"), (name, ts)
    monkeypatch.setenv("TZ", "UTC")                    # an override: zoneinfo decides
    state.owner_profile["timezone"] = device or "Etc/UTC"
    assert hot_rules.owner_zone(state) is not None
