"""evoclaw_memory.tzfile: a zone's local dates from its TZif file, as zoneinfo gives them.

Every zone zoneinfo knows on this machine is read from the same file by both; the wall
times must be equal at every transition (and a second either side), across 1900-2100 and
at random instants. The dates MEMORY.md shows (tiers.hot) come from these."""

from __future__ import annotations

import datetime as dt
import os
import random
import zoneinfo

import pytest

from evoclaw_memory import tzfile
from evoclaw_memory.models import HotState
from evoclaw_memory.tiers import hot as hot_rules


def _zone_file(name: str) -> bytes:
    for folder in zoneinfo.TZPATH:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                return f.read()
    raise AssertionError(f"no file for {name}")


def _instants(zone: tzfile._TZif, rng: random.Random) -> list[int]:
    edges = [t + d for t in zone._trans for d in (-1, 0, 1)]
    spread = [int(dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc).timestamp()) + day * 86_400
              + rng.randrange(86_400) for year in range(1900, 2101, 3) for day in (0, 80, 180, 300)]
    # A year's edge in UTC (the footer's rules are taken for the UTC year, as zoneinfo does).
    new_year = [int(dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc).timestamp()) + d
                for year in range(2030, 2100, 7) for d in (-50_400, -1, 0, 50_400)]
    return edges + spread + new_year + [rng.randrange(-2**31, 2**32) for _ in range(100)]


def test_every_zone_reads_as_zoneinfo_reads_it():
    rng = random.Random(29)
    names = sorted(zoneinfo.available_timezones())
    assert len(names) > 300
    for name in names:
        ours = tzfile._TZif(_zone_file(name))
        theirs = zoneinfo.ZoneInfo(name)
        for ts in _instants(ours, rng):
            want = dt.datetime.fromtimestamp(ts, theirs).replace(tzinfo=None, fold=0)
            got = dt.datetime.fromtimestamp(ts, ours).replace(tzinfo=None)
            assert got == want, (name, ts)


def test_a_zone_is_found_in_the_system_folders_and_only_by_its_key(monkeypatch):
    monkeypatch.delenv("PYTHONTZPATH", raising=False)
    found = [name for name in ("Asia/Tokyo", "Europe/Lisbon", "America/Sao_Paulo")
             if tzfile.system_zone(name) is not None]
    assert found == [name for name in ("Asia/Tokyo", "Europe/Lisbon", "America/Sao_Paulo")
                     if any(os.path.isfile(os.path.join(f, name)) for f in tzfile.SEARCH)]
    for bad in ("", "/etc/passwd", "../../etc/passwd", "Asia/../Asia/Tokyo", "Asia//Tokyo",
                "No/Such_Zone", "Asia/Tokyo\x00", "a" * 300):
        assert tzfile.system_zone(bad) is None, bad
    monkeypatch.setenv("PYTHONTZPATH", "/usr/share/zoneinfo")    # zoneinfo's path decides
    assert tzfile.system_zone("Asia/Tokyo") is None


@pytest.mark.parametrize("data", [b"", b"TZif", b"TZif\x00" + bytes(39), b"not a zone" * 10])
def test_what_is_not_a_version_2_tzif_file_is_refused(data):
    with pytest.raises((ValueError, IndexError)):
        tzfile._TZif(data)
    truncated = _zone_file(sorted(zoneinfo.available_timezones())[0])
    with pytest.raises((ValueError, IndexError)):
        tzfile._TZif(truncated[:-3])              # the footer's closing newline cut off


def test_memory_md_shows_the_owners_days_without_zoneinfo(monkeypatch):
    """An owner in another zone than the device's: the days MEMORY.md shows are zoneinfo's,
    and the zone came from its file (the per-turn `context` of such an owner loads no
    zoneinfo: tests/test_cli_fast.py)."""
    monkeypatch.delenv("PYTHONTZPATH", raising=False)
    monkeypatch.delenv("TZ", raising=False)
    state = HotState()
    state.owner_profile["timezone"] = "Pacific/Kiritimati"       # UTC+14: most days differ
    zone = hot_rules.owner_zone(state)
    assert isinstance(zone, tzfile._TZif)
    for ts in (1_764_720_000.0, 1_764_777_599.0, 1_780_000_000.0, 2_000_000_000.0):
        assert hot_rules._when(ts, zone) == dt.datetime.fromtimestamp(
            ts, zoneinfo.ZoneInfo("Pacific/Kiritimati")).strftime("%Y-%m-%d")
