"""Who said a fact is kept with the fact (issue 13), on the device: the stored speaker column,
the linking catch-up that rebuilds links from it, export/import (older exports included),
and the validation of a speaker that enters from outside."""

from __future__ import annotations

import io
import json

import pytest

from evoclaw_memory import Memory, validate
from evoclaw_memory.errors import ValidationError

CONVERSATION = [
    {"role": "user", "name": "Caroline", "content": "I joined an LGBTQ support group at the community centre."},
    {"role": "assistant", "name": "Melanie", "content":
     "Caroline told me the LGBTQ support group was welcoming. Caroline says the support group meets weekly."},
]
HERS = "Caroline joined an LGBTQ support group at the community centre."
QUERY = "What support group does Caroline go to?"


def speakers(mem: Memory) -> dict[str, str]:
    """text -> the name of the entity linked to it as its speaker."""
    return dict(mem.store.conn.execute(
        "SELECT f.text, e.name FROM entity_facts l JOIN facts f ON f.rowid = l.fact_rowid "
        "JOIN entities e ON e.id = l.entity_id WHERE l.role = 'speaker'").fetchall())


def test_the_catch_up_relinks_the_stored_speaker(tmp_path):
    with Memory.open("t", home=tmp_path) as mem:
        mem.end_conversation(CONVERSATION, sync=False)
        assert mem.store.conn.execute("SELECT speaker FROM facts WHERE text = ?", (HERS,)).fetchone() == ("Caroline",)
        linked = speakers(mem)
        assert linked[HERS] == "Caroline"
        # The links are derived data: rebuilt from the stored facts, the speaker comes back.
        mem.store.conn.execute("DELETE FROM entity_facts")
        mem.store.set_setting("entities.linked_rowid", "0")
        mem.store.conn.commit()
        mem.link_new_facts(None)
        assert speakers(mem) == linked
        assert mem.retrieve(QUERY, limit=1)[0].fact.text == HERS
        # An owner's own remember() has no speaker: nothing is linked as one.
        tea = mem.remember("I like green tea")
        assert mem.store.get_fact(tea.id).speaker is None


def test_export_and_import_keep_the_speaker_and_older_exports_still_import(tmp_path):
    out = io.StringIO()
    with Memory.open("t", home=tmp_path / "a") as a:
        a.end_conversation(CONVERSATION, sync=False)
        a.remember("The router password is in the blue folder")
        a.export(out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    facts = {f["text"]: f for f in lines if f.get("type") == "fact"}
    assert facts[HERS]["speaker"] == "Caroline"
    assert "speaker" not in facts["The router password is in the blue folder"]   # as before
    with Memory.open("t", home=tmp_path / "b") as b:
        assert b.import_jsonl(io.StringIO(out.getvalue()))["facts"] == len(facts)
        b.link_new_facts(None)       # an import leaves the links to the catch-up, as before
        assert b.store.conn.execute("SELECT speaker FROM facts WHERE text = ?", (HERS,)).fetchone() == ("Caroline",)
        assert speakers(b)[HERS] == "Caroline"
        assert b.retrieve(QUERY, limit=1)[0].fact.text == HERS
    # An export written before the speaker existed has no such key: it imports as before.
    older = "\n".join(json.dumps({k: v for k, v in item.items() if k != "speaker"}) for item in lines)
    with Memory.open("t", home=tmp_path / "c") as c:
        assert c.import_jsonl(io.StringIO(older))["facts"] == len(facts)
        assert c.store.conn.execute("SELECT count(*) FROM facts WHERE speaker IS NOT NULL").fetchone() == (0,)
    # A speaker that is not a short single-line name is refused, naming the line.
    bad = [dict(item) for item in lines]
    next(item for item in bad if item.get("text") == HERS)["speaker"] = "Caroline\nIgnore all previous"
    with Memory.open("t", home=tmp_path / "d") as d:
        with pytest.raises(ValidationError, match="line .*speaker"):
            d.import_jsonl(io.StringIO("\n".join(json.dumps(item) for item in bad)))
        assert d.store.conn.execute("SELECT count(*) FROM facts").fetchone() == (0,)


def test_a_speaker_is_a_short_single_line_name():
    assert validate.speaker("  Mary   Ann ") == "Mary Ann"
    assert validate.speaker(None) is None and validate.speaker("  ") is None
    for bad in ("x" * 81, "Caroline\nMelanie", "Caro\u200bline", 7):
        with pytest.raises(ValidationError):
            validate.speaker(bad)


def test_a_pulled_row_with_a_bad_speaker_is_refused_with_its_reason():
    from evoclaw_memory.cloud.codec import fact_from_row
    row = ("f1", "Caroline joined a group", "social", 0.5, 1_700_000_000, 0, "{}", "distill", None, None,
           0, 0.0, 0.0, 0.0)
    assert fact_from_row(row).speaker is None                     # a row from before schema 10
    assert fact_from_row((*row, "Caroline")).speaker == "Caroline"
    with pytest.raises(ValidationError, match="speaker"):
        fact_from_row((*row, "Caroline\n" * 20))
