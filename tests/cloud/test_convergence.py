"""Randomized multi-device merges (issue 26): seeded schedules of store/edit/pin/unpin/
privacy/supersede/forget/rename/task/complete on three devices of one agent whose clocks are
off by up to a year, synced in random orders, against a cloud file and a real sqld; then
every device syncs twice and a fourth restores. The properties (convergence.py): nothing
acknowledged lost, causality wins per part, sticky stays sticky, everyone converges. A
failure prints the seed and the whole schedule to replay."""

from __future__ import annotations

import pytest

from convergence import World, failure_report, run_schedule
from evoclaw_memory.store import intake

FILE_SEEDS = range(40)
SQLD_SEEDS = range(100, 112)


@pytest.mark.parametrize("seed", FILE_SEEDS)
def test_schedules_on_a_cloud_file_keep_every_promise(tmp_path, seed):
    broken, schedule = run_schedule(tmp_path, seed, str(tmp_path / "cloud.db"))
    assert not broken, failure_report(seed, broken, schedule, "file")


@pytest.mark.parametrize("seed", SQLD_SEEDS)
def test_schedules_on_a_real_sqld_keep_every_promise(fresh_db, tmp_path, seed):
    url, token = fresh_db
    broken, schedule = run_schedule(tmp_path, seed, url, token)
    assert not broken, failure_report(seed, broken, schedule, "sqld")


def test_the_checks_catch_a_merge_that_keeps_the_local_version(tmp_path, monkeypatch):
    """The harness is not vacuous: with a merge that ignores other devices' newer versions
    (what a device that never takes a pulled change would do), schedules break."""
    monkeypatch.setattr(intake, "merge_versions", lambda known, pulled: known)
    broken_seeds = [seed for seed in range(12)
                    if run_schedule(tmp_path / str(seed), seed, str(tmp_path / f"{seed}.db"))[0]]
    assert len(broken_seeds) >= 3, broken_seeds


def test_a_schedule_replays_the_same_way(tmp_path):
    one = run_schedule(tmp_path / "one", 7, str(tmp_path / "one.db"))[1]
    two = run_schedule(tmp_path / "two", 7, str(tmp_path / "two.db"))[1]
    strip = [line.split(" ", 2)[:2] for line in one.splitlines()]
    assert strip == [line.split(" ", 2)[:2] for line in two.splitlines()]


def test_clocks_cover_the_skews_the_issue_names(tmp_path):
    skews = set()
    for seed in range(30):
        world = World(tmp_path / str(seed), seed, str(tmp_path / f"{seed}.db"))
        skews |= {dev.skew for dev in world.devices.values()}
        world.close()
    assert {0.0, 300.0, -300.0, 86_400.0, -86_400.0, 365 * 86_400.0} <= skews
