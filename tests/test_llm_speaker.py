"""The LLM distiller sets the speaker of a fact that comes from one turn (issue 13), as the
rules do: the turn's name, "Assistant" for an unnamed assistant, none for the unnamed owner;
the stored fact keeps it and links to that person as its speaker."""

from __future__ import annotations

from evoclaw_memory import Memory
from llm_fakes import FakeLLM
from test_speaker_persist import speakers

# -- the LLM distiller ----------------------------------------------------------------------
# FakeLLM is an HTTP fake of an OpenAI-compatible server (tests/llm_fakes.py), not a mock
# of our code: the answer goes through the client, the parser and every check.

TURNS = [
    {"role": "user", "name": "Caroline", "content": "I joined an LGBTQ support group at the community centre."},
    {"role": "assistant", "content": "I booked the pottery class for the afternoon."},
    {"role": "user", "content": "My sister Ana loves hiking in the Alps."},
    {"role": "assistant", "name": "Melanie", "content": "The community centre also runs a painting club."},
]


def _answer(*texts: str) -> dict:
    return {"summary": "support group and classes", "facts": [
        {"text": t, "category": "social", "importance": 0.6,
         "metadata": {"urls": [], "commands": [], "paths": []},
         "supersedes": None, "duplicate_of": None} for t in texts]}


def test_the_llm_distiller_sets_the_speaker_of_a_fact_from_one_turn(home, clock):
    fake = FakeLLM(_answer(
        "Caroline joined an LGBTQ support group at the community centre",   # Caroline's turn
        "The assistant booked the pottery class for the afternoon",      # unnamed assistant
        "The owner's sister Ana loves hiking in the Alps",                  # the unnamed owner
        "Caroline's community centre runs an LGBTQ support group and a painting club"))  # two turns
    with Memory.open("llm-agent", home=home, clock=clock, llm=fake.client()) as mem:
        result = mem.distill(TURNS)
        assert result["mode"] == "llm" and fake.calls == 1
        by_text = {d.text: d.speaker for d in result["facts"]}
        assert by_text == {
            "Caroline joined an LGBTQ support group at the community centre": "Caroline",
            "The assistant booked the pottery class for the afternoon": "Assistant",
            "The owner's sister Ana loves hiking in the Alps": None,
            "Caroline's community centre runs an LGBTQ support group and a painting club": None}
        mem.apply_distillation(result)
        assert speakers(mem) == {"Caroline joined an LGBTQ support group at the community centre": "Caroline",
                                 "The assistant booked the pottery class for the afternoon": "Assistant"}
        stored = dict(mem.store.conn.execute("SELECT text, speaker FROM facts").fetchall())
        assert stored["Caroline joined an LGBTQ support group at the community centre"] == "Caroline"
        assert stored["The owner's sister Ana loves hiking in the Alps"] is None


def test_an_llm_fact_the_conversation_does_not_hold_gets_no_speaker():
    from evoclaw_memory.distill.turns import conversation_turns
    from evoclaw_memory.llm.distill import attribute_speakers
    from evoclaw_memory.models import FactDraft
    turns = conversation_turns(TURNS, 1_700_000_000.0)
    drafts = [FactDraft(text="Caroline plans a trip to Japan next spring", category="social"),
              FactDraft(text="Melanie said the community centre runs a painting club", category="social")]
    attribute_speakers(drafts, turns)
    assert [d.speaker for d in drafts] == [None, "Melanie"]
