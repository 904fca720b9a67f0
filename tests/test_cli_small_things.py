"""Issue 27, item 10: the small things that confused a first-day user, each fixed.

- `hot --update lesson 'Never deploy on Fridays'`: plain text is the lesson (the project's
  name for `project`); a malformed JSON object names the key and shows the right form;
  click's path and the click-free fast path (the console script) read it alike.
- `validate` says what it checked when the note is complete.
- `get` shows pinned and private.
- `distill` prints hot updates as words with ISO 8601 dates, not a Python dict.
- `forget --matching Q` without --yes lists the facts it would erase (ids), and erases none.
- `end_conversation` pushes where `sync` pushes and says so (the local archive by default).
- `RetrievalResult.relevance` follows the ranking; the old figure is `coverage`.

Real SQLite files in a temporary EVOCLAW_HOME; the console script in a subprocess where the
fast path matters.
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from evoclaw_memory import Memory


# `run` (the CLI in-process) and `sh` (the installed console script): tests/conftest.py.
from test_cli import one_error_line as _error_line  # noqa: E402


# -- a. hot --update with plain text -------------------------------------------------------

def test_hot_update_takes_plain_text_for_a_lesson_and_a_project_name(run, sh):
    done = run("hot", "--update", "lesson", "Never deploy on Fridays")
    assert done.exit_code == 0, done.output
    by_script = sh("hot", "--update", "project", "EvoClaw")            # the fast path
    assert by_script.returncode == 0, by_script.stderr
    state = json.loads(run("hot", "--json").stdout)
    assert [x["text"] for x in state["critical_lessons"]] == ["Never deploy on Fridays"]
    assert [p["name"] for p in state["active_context"]["projects"]] == ["EvoClaw"]


@pytest.mark.parametrize("via", ["click", "fast"])
def test_hot_update_with_malformed_json_names_the_key_and_shows_the_form(run, sh, via):
    args = ("hot", "--update", "lesson", "{text: Never deploy on Fridays}")
    if via == "click":
        result = run(*args)
        status, stderr = result.exit_code, result.stderr
    else:
        done = sh(*args)
        status, stderr = done.returncode, done.stderr
    assert status != 0
    line = _error_line(stderr)
    assert line.startswith("error: hot --update lesson takes a JSON object")
    assert """e.g. '{"text": "Never deploy on Fridays", "importance": 0.9}'""" in line
    assert "malformed JSON" in line                   # and still says what was wrong
    assert json.loads(run("hot", "--json").stdout).get("critical_lessons", []) == []


def test_hot_update_identity_needs_an_object_and_says_so(run):
    result = run("hot", "--update", "identity", "Claw")
    assert result.exit_code != 0
    line = _error_line(result.stderr)
    assert "hot --update identity takes a JSON object" in line and '"agent_name"' in line


# -- b. validate on success ----------------------------------------------------------------

def test_validate_says_what_it_checked_when_the_note_is_complete(run, tmp_path):
    note = tmp_path / "memory" / "2025-11-30.md"
    note.parent.mkdir()
    note.write_text("# 2025-11-30\n\n- Deployed the blog with `./deploy.sh prod`.\n"
                    "- Talked with Anna about the garden.\n")
    result = run("validate", str(note))
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        f"{note}: complete (no tool without a link, no action without a command, "
        "no decision without a next step)"]
    assert json.loads(run("validate", str(note), "--json").stdout) == []   # --json unchanged


# -- c. get shows pinned and private -------------------------------------------------------

def test_get_shows_pinned_and_private(run):
    fact_id = run("store", "-t", "The spare key is under the blue pot", "-c", "home",
                  "--pin", "--private").stdout.strip()
    shown = run("get", fact_id).stdout
    assert "pinned yes" in shown and "private yes" in shown
    data = json.loads(run("get", fact_id, "--json").stdout)
    assert data["pinned"] is True and data["private"] is True
    other = run("store", "-t", "The bins go out on Tuesday", "-c", "home",
                "--shared").stdout.strip()
    assert "pinned no  private no" in run("get", other).stdout


# -- d. distill prints words and ISO 8601 dates --------------------------------------------

CONVERSATION = json.dumps([{"role": "user", "content":
                            "I need to renew the TLS certificate by Friday. Tomorrow I have a "
                            "dentist appointment at 3pm."}])


def test_distill_prints_hot_updates_as_words_with_iso_dates(run):
    result = run("distill", "--text", CONVERSATION, "--at", "2026-12-01T09:00:00Z")
    assert result.exit_code == 0, result.output
    hot_lines = [line for line in result.stdout.splitlines() if line.startswith("hot ")]
    assert hot_lines, result.stdout
    for line in hot_lines:
        assert "{" not in line and "'timestamp'" not in line, line
    assert any("(on 2026-12-0" in line and "T12:00:00Z" in line for line in hot_lines), hot_lines
    facts = [line for line in result.stdout.splitlines() if line.startswith("- [")]
    assert facts and all("(importance 0." in line for line in facts)
    data = json.loads(run("distill", "--json", "--text", CONVERSATION).stdout)
    assert all(isinstance(u["value"], dict) for u in data["hot_updates"])   # update_hot's form


# -- e. forget --matching lists what it would erase ----------------------------------------

def test_forget_matching_without_yes_lists_the_facts_and_erases_none(run):
    ids = [run("store", "-t", text, "-c", "home").stdout.strip()
           for text in ("The pump runs at night", "The pump filter is changed in May " * 6)]
    keep = run("store", "-t", "The boiler is serviced in October", "-c", "home").stdout.strip()
    refused = run("forget", "--matching", "pump")
    assert refused.exit_code == 2
    lines = refused.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ids
    assert all("[home]" in line for line in lines)
    assert len(lines[1]) < 140 and lines[1].endswith("\u2026")       # one line, cut short
    assert "add --yes" in _error_line(refused.stderr)
    as_json = run("forget", "--matching", "pump", "--json")
    assert as_json.exit_code == 2
    doc = json.loads(as_json.stdout)
    assert [m["id"] for m in doc["matching"]] == ids and doc["count"] == 2
    assert doc["code"] == "usage" and doc["matching"][0]["text"] == "The pump runs at night"
    assert json.loads(run("list", "--json").stdout)["count"] == 3      # nothing erased
    gone = json.loads(run("forget", "--matching", "pump", "--yes", "--json").stdout)
    assert sorted(gone["forgotten"]) == sorted(ids)
    assert [f["id"] for f in json.loads(run("list", "--json").stdout)["facts"]] == [keep]


# -- f. end_conversation says where it pushed ----------------------------------------------

def test_end_conversation_pushes_where_sync_does_and_says_so(home, run):
    with Memory.open("default", home=home) as mem:
        report = mem.end_conversation("Remember that my dentist is Dr Okafor on Otley Road.")
        sync = report["sync"]
        assert sync["status"] == "pushed" and sync["target"] == "local archive"
        assert sync["where"] == str(home / "cloud.db") and (home / "cloud.db").exists()
        assert "local archive" in sync["detail"] and mem.store.outbox_depth() == 0
        off = mem.end_conversation("The bins go out on Tuesday.", sync=False)["sync"]
        assert off["status"] == "off" and mem.store.outbox_depth() > 0
    # The CLI's end of a conversation (distill --store) says it too.
    shown = run("distill", "--store", "--text", "My sister Emma lives in Leeds.")
    assert shown.exit_code == 0, shown.output
    assert f"the local archive {home / 'cloud.db'}" in shown.stdout.splitlines()[-1]
    # ... and `sync` agrees: nothing was left for it to push.
    assert "pushed 0 fact(s)" in run("sync").stdout


def test_end_conversation_names_a_cloud_file_and_an_unreachable_cloud(home, tmp_path):
    shared = tmp_path / "shared.db"
    with Memory.open("default", home=home, cloud_url=f"file:{shared}") as mem:
        sync = mem.end_conversation("Remember that the bins go out on Tuesday.")["sync"]
    assert (sync["status"], sync["target"], sync["where"]) == ("pushed", "cloud file",
                                                                str(shared))
    assert f"to the cloud file {shared}," in sync["detail"]
    with socket.socket() as probe:              # a port nothing listens on: offline
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://user:secret@127.0.0.1:{port}/?authToken=secret"
    with Memory.open("default", home=home, cloud_url=url, encryption="off") as mem:
        sync = mem.end_conversation("Remember that the recycling goes out on Friday.")["sync"]
        assert sync["status"] == "queued" and sync["target"] == "cloud"
        assert sync["where"] == f"http://127.0.0.1:{port}"           # no credentials
        assert "secret" not in sync["detail"] and sync["detail"].startswith("queued offline")
        assert sync["outbox_depth"] == mem.store.outbox_depth() > 0


# -- g. relevance follows the ranking ------------------------------------------------------

def _pets(mem: Memory) -> None:
    now = time.time()
    mem.remember("Biscuit the dog eats salmon kibble twice a day", category="home/pets",
                 importance=0.9)
    mem.remember("The vet said Biscuit should eat less kibble", category="home/pets",
                 importance=0.2, created_at=now - 200 * 86400)
    mem.remember("Biscuit likes the salmon treats from the market", category="home/pets",
                 importance=0.9)
    mem.remember("Salmon kibble for Biscuit comes from the pet shop on Otley Road",
                 category="shopping", importance=0.1, created_at=now - 300 * 86400)
    mem.remember("Biscuit walks with Hannah on Mondays", category="home/pets", importance=0.9)


def test_relevance_never_rises_down_the_ranking(home):
    with Memory.open("default", home=home) as mem:
        _pets(mem)
        hits = mem.retrieve("what salmon kibble does Biscuit eat", limit=5)
    assert len(hits) >= 4
    relevance = [h.relevance for h in hits]
    coverage = [h.coverage for h in hits]
    # The query is one where the facts' own share of it does not follow the ranking ...
    assert coverage != sorted(coverage, reverse=True)
    # ... yet relevance does: sorting or thresholding on it keeps the ranking's order.
    assert relevance == sorted(relevance, reverse=True)
    assert all(0 < r <= c <= 1 for r, c in zip(relevance, coverage))
    assert relevance[0] == coverage[0]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_retrieve_json_carries_relevance_and_coverage(home, run):
    with Memory.open("default", home=home) as mem:
        _pets(mem)
    data = json.loads(run("retrieve", "what salmon kibble does Biscuit eat", "--json").stdout)
    assert [d["relevance"] for d in data] == sorted((d["relevance"] for d in data),
                                                    reverse=True)
    assert all(d["relevance"] <= d["coverage"] for d in data)
