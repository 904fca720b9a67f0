"""Daily notes: finding them, facts from them, and the completeness checks."""

from __future__ import annotations

import re
from datetime import date

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from evoclaw_memory.limits import DISTILLED_FACT_MAX_CHARS
from evoclaw_memory.distill.notes import (
    NoteWarning,
    extract_note_facts,
    find_daily_notes,
    product_names,
    validate_note,
)

TODAY = date(2025, 11, 30)
KNOWN = [
    "home/pets/biscuit",
    "technical/home-server",
    "owner/family/partner",
    "travel/trips",
    "health/medical",
]


# --- finding notes --------------------------------------------------------------------------


def _touch(folder, name: str) -> None:
    (folder / name).write_text("- note\n", encoding="utf-8")


def test_find_daily_notes_of_the_last_days_sorted_by_date(tmp_path):
    memory = tmp_path / "memory"
    memory.mkdir()
    for name in (
        "2025-11-30.md",
        "2025-11-29-standup.md",
        "2025-11-29.md",
        "2025-11-28.md",  # three days ago
        "2025-12-01.md",  # tomorrow
        "2025-02-30.md",  # no such day
        "2025-11-30.txt",
        "notes.md",
    ):
        _touch(memory, name)
    (memory / "2025-11-30-folder.md").mkdir()

    found = find_daily_notes(tmp_path, days=2, today=TODAY)
    assert [p.name for p in found] == ["2025-11-29-standup.md", "2025-11-29.md", "2025-11-30.md"]
    assert [p.name for p in find_daily_notes(tmp_path, days=1, today=TODAY)] == ["2025-11-30.md"]
    assert len(find_daily_notes(tmp_path, days=3, today=TODAY)) == 4
    assert find_daily_notes(tmp_path, days=0, today=TODAY) == []


def test_find_daily_notes_without_a_memory_folder(tmp_path):
    assert find_daily_notes(tmp_path, today=TODAY) == []
    assert find_daily_notes(tmp_path / "missing", today=TODAY) == []


def test_find_daily_notes_defaults_to_today(tmp_path):
    memory = tmp_path / "memory"
    memory.mkdir()
    _touch(memory, f"{date.today().isoformat()}.md")
    assert len(find_daily_notes(tmp_path)) == 1


# --- facts from a note ----------------------------------------------------------------------

NOTE = """---
title: daily
---
# 2025-11-30

## Home server
- Upgraded Proxmox to 8.3 on atlas:
```bash
apt update && apt full-upgrade
pveversion
```
- Uptime Kuma now monitors the blog
  https://status.samwhit.dev
- ok

## Biscuit
- Booster jab done today, next one due in March 2026.

## 家人
- 陈莉的生日是3月14号，记得订蛋糕。

Some paragraph about the weather, nothing much.
Remember: the spare key is with the neighbours at number 7.
"""


def test_note_facts_use_headings_and_keep_fenced_commands():
    facts = extract_note_facts(NOTE, KNOWN)
    by_text = {fact.text: fact for fact in facts}
    assert list(by_text) == [
        "Upgraded Proxmox to 8.3 on atlas:",
        "Uptime Kuma now monitors the blog https://status.samwhit.dev",
        "Booster jab done today, next one due in March 2026.",
        "陈莉的生日是3月14号，记得订蛋糕。",
        "Remember: the spare key is with the neighbours at number 7.",
    ]
    assert all(fact.source == "daily-note" for fact in facts)
    upgrade = by_text["Upgraded Proxmox to 8.3 on atlas:"]
    assert upgrade.category == "technical/home-server"
    assert upgrade.metadata.commands == ["apt update && apt full-upgrade"]
    assert by_text["Uptime Kuma now monitors the blog https://status.samwhit.dev"].metadata.urls == [
        "https://status.samwhit.dev"
    ]
    assert by_text["Booster jab done today, next one due in March 2026."].category == "home/pets/biscuit"
    assert by_text["陈莉的生日是3月14号，记得订蛋糕。"].category == "owner/family/partner"
    assert by_text["Remember: the spare key is with the neighbours at number 7."].importance >= 0.7


def test_a_fence_under_a_heading_alone_still_becomes_a_fact():
    facts = extract_note_facts("## Backups\n```\nrestic -r b2:whit-backup snapshots\n```\n", [])
    assert len(facts) == 1
    assert facts[0].metadata.commands == ["restic -r b2:whit-backup snapshots"]
    assert facts[0].text


def test_long_bullets_are_split_and_shortened():
    bullet = "- " + " ".join(f"Sentence {i} says the router at 192.168.1.{i} was rebooted." for i in range(8))
    facts = extract_note_facts(bullet, [])
    assert len(facts) == 8
    assert all(len(fact.text) <= DISTILLED_FACT_MAX_CHARS for fact in facts)


def test_empty_note():
    assert extract_note_facts("", KNOWN) == []
    assert validate_note("") == []


# --- validation -----------------------------------------------------------------------------


def _kinds(text: str) -> list[tuple[int, str]]:
    return [(warning.line, warning.kind) for warning in validate_note(text)]


def test_tool_without_a_link():
    assert _kinds("# Today\n- Installed Grafana on atlas for dashboards.\n") == [
        (2, "missing-link"),
        (2, "missing-command"),
    ]
    (warning,) = [w for w in validate_note("- We now use GitHub Actions for CI.") if w.kind == "missing-link"]
    assert warning.line == 1
    assert "GitHub Actions" in warning.message
    assert "GitHub Actions" in warning.suggestion


def test_tool_with_a_link_here_or_on_the_next_line():
    assert _kinds("- Using Tailscale (https://tailscale.com) for remote access.") == []
    assert _kinds("- The Paperless-ngx service files scanned letters\n  http://192.168.1.22:8000\n") == []


def test_product_names_are_generic_not_a_list():
    assert product_names("安装了Home Assistant的Zigbee插件") == ["Home Assistant", "Zigbee"]
    assert product_names("Lunch with Sarah, then ordered via the Deliveroo app") == ["Deliveroo"]
    assert product_names("Met McAllister and Sam today") == []  # no tool word on the line
    assert product_names("Set up the API and the CLI") == []  # generic acronyms are not products


def test_action_without_a_command():
    assert _kinds("- Deployed the new matcher build to staging.") == [(1, "missing-command")]
    assert _kinds("- 部署了新版本到测试环境") == [(1, "missing-command")]


def test_action_with_a_command_nearby():
    assert _kinds("- Upgraded the laptop with `dnf system-upgrade`.") == []
    assert _kinds("- Migrated the database\n  then:\n  $ psql -f migrate.sql\n") == []
    assert _kinds("- Configured the firewall:\n```\nufw allow 22/tcp\n```\n") == []
    assert _kinds("- [ ] install the new boiler thermostat") == []  # not done yet
    # Three lines down is too far.
    assert _kinds("- Installed the update\nline\nline\n`apt upgrade`") == [(1, "missing-command")]


def test_decision_without_a_next_step():
    assert _kinds("- We decided to move backups to Backblaze B2.\n- Lunch was nice.") == [
        (1, "missing-next-step")
    ]
    assert _kinds("- 我们决定换路由器。") == [(1, "missing-next-step")]
    # The decision's own "we will" is not a next step.
    assert _kinds("- We will switch to Postgres.") == [(1, "missing-next-step")]


def test_decision_with_a_next_step():
    assert _kinds("- Decided to switch to OpenWrt.\n- Lunch.\n- [ ] flash the router") == []
    assert _kinds("- Agreed on the new rota; next: announce it by Friday") == []
    assert _kinds("- 决定换路由器，下一步：周六去买") == []
    assert _kinds("- We chose Hetzner.\n\n\n\n- review costs on 2025-12-15") == [(1, "missing-next-step")]


def test_code_and_front_matter_are_not_checked():
    note = "---\nsummary: decided to install Grafana\n---\n```\ndecided to install Grafana using apt\n```\n"
    assert validate_note(note) == []


def test_warnings_serialize_for_the_cli():
    (warning,) = validate_note("- We decided to rename the repo.")
    assert msgspec.json.decode(msgspec.json.encode(warning)) == {
        "line": 1,
        "kind": "missing-next-step",
        "message": warning.message,
        "suggestion": warning.suggestion,
    }
    assert isinstance(warning, NoteWarning)


# --- properties -----------------------------------------------------------------------------

_pieces = st.sampled_from(
    [
        "- ",
        "- [ ] ",
        "# ",
        "## Home\n",
        "```\n",
        "\n",
        "\n\n",
        "Installed ",
        "Grafana ",
        "decided ",
        "决定",
        "安装",
        "https://x.io ",
        "`ls` ",
        "next ",
        "using ",
        "App ",
        "陈莉",
        "---\n",
        "  ",
        "🐶",
    ]
)
_notes = st.lists(st.one_of(_pieces, st.text(max_size=10)), max_size=40).map("".join)


@settings(max_examples=200, deadline=None)
@given(_notes)
def test_notes_never_break_their_contract(text):
    line_count = len(re.split(r"\r\n|\r|\n", text))
    for warning in validate_note(text):
        assert 1 <= warning.line <= line_count
        assert warning.kind in ("missing-link", "missing-command", "missing-next-step")
        assert warning.message and warning.suggestion
    for fact in extract_note_facts(text, KNOWN):
        assert fact.text and len(fact.text) <= DISTILLED_FACT_MAX_CHARS
        assert fact.source == "daily-note"
        assert 0.0 <= fact.importance <= 1.0
