"""Issue 25, parts 4, 6 and 7: one statement one fact, a forget that acts on exactly what it
names, dates resolved once; and questions about the owner's attributes."""

from __future__ import annotations

import datetime as dt

import pytest

from evoclaw_memory.distill.dates import resolve_dates
from evoclaw_memory.distill.packing import continues, shifts_topic
from evoclaw_memory.distill.rules import distill_facts

AT = dt.datetime(2026, 1, 14, 10, 0)


def facts(text):
    return [f.text for f in distill_facts([{"role": "user", "content": text}], [], AT.timestamp())]


@pytest.mark.parametrize("said", [
    "Luna needs her thyroid tablet with breakfast. Oh and the house alarm code is 2580.",
    "Luna needs her thyroid tablet with breakfast. Also, the house alarm code is 2580.",
    "Luna needs her thyroid tablet with breakfast. Plus the house alarm code is 2580.",
    "Luna needs her thyroid tablet with breakfast. The house alarm code is 2580.",
])
def test_unrelated_statements_in_one_message_are_separate_facts(said):
    assert facts(said) == ["Luna needs her thyroid tablet with breakfast.",
                           "The house alarm code is 2580."]


def test_a_sentence_that_goes_on_with_the_one_before_stays_with_it():
    assert facts("We adopted a kitten called Pixel. She sleeps on the radiator all day.") == \
        ["We adopted a kitten called Pixel. She sleeps on the radiator all day."]
    assert continues(["We adopted a kitten called Pixel."], "Pixel sleeps on the radiator.")
    assert not continues(["We adopted a kitten called Pixel."], "The boiler needs a service.")
    assert shifts_topic("By the way, my car needs an MOT.")
    assert not shifts_topic("Pixel is grey.")


def test_a_request_for_the_agent_to_act_now_is_not_a_fact():
    assert facts("Teach me a new word. Put some music on. Play something to cheer me up.") == []
    assert facts("Remind me to call mum on Friday.") == ["Remind me to call mum on Friday 16 January 2026."]


@pytest.mark.parametrize("text", [
    "Assistant will remind you on Wednesday 14 January 2026 at 8pm to call the bank.",
    "The dentist is on Friday, 16 January 2026.",
    "Lunch on Monday 19 January with Ada.",
])
def test_a_date_already_absolute_is_never_resolved_again(text):
    assert resolve_dates(text, AT).text == text


@pytest.mark.parametrize("text", ["I do parkrun every Saturday morning.",
                                  "Saturday mornings are for parkrun.",
                                  "I see Dr Lowe every other Thursday."])
def test_a_weekday_that_names_a_habit_stays_a_habit(text):
    assert resolve_dates(text, AT).text == text


def test_a_forget_removes_every_copy_of_the_thing_and_its_history_and_nothing_else(mem):
    mem.end_conversation("My gym locker code is 4417.", sync=False)
    mem.end_conversation("The gym locker code is 9120 now.", sync=False)    # supersedes
    mem.remember("The gym is open until 10pm on weekdays.", category="health")
    everything = mem.facts(include_superseded=True)
    assert sum("code" in f.text for f in everything) == 2
    report = mem.end_conversation("Please forget my old gym code.", sync=False)
    left = [f.text for f in mem.facts(include_superseded=True)]
    assert not any("code" in t for t in left), left
    assert "The gym is open until 10pm on weekdays." in left
    assert len(report["forgotten"]) == 1 and report["forget_candidates"] == []


def test_an_ambiguous_forget_lists_every_candidate_and_erases_none(mem):
    for i in range(7):
        mem.remember(f"Locker {i} at the pool has the code {1000 + i}.", category="health")
    report = mem.end_conversation("Forget the locker code.", sync=False)
    assert report["forgotten"] == []
    assert len(report["forget_candidates"]) == 7          # all of them, not the first five
    assert len(mem.facts()) == 7


def test_questions_about_the_owners_attributes_get_the_current_value_first(mem, clock):
    mem.end_conversation([{"role": "user", "content": "My birthday is on 14 March."},
                          {"role": "user", "content": "My favourite band is Radiohead."},
                          {"role": "user", "content": "My favourite dish is jollof rice."},
                          {"role": "user", "content": "I work as a nurse at St Mary's."}],
                         sync=False)
    clock.advance(30)
    mem.end_conversation("I'm a paramedic now, with the ambulance service.", sync=False)
    first = {q: mem.retrieve(q)[0] for q in ("When do I celebrate getting a year older?",
                                            "What do I do for a living?",
                                            "Which band do I love most?")}
    assert first["When do I celebrate getting a year older?"].fact.text == "My birthday is on 14 March."
    assert first["What do I do for a living?"].fact.text.startswith("I'm a paramedic now")
    assert first["Which band do I love most?"].fact.text == "My favourite band is Radiohead."
    assert all(r.method == "attribute" for r in first.values())
    assert mem.retrieve("How do I earn my money?")[0].fact.text.startswith("I'm a paramedic now")
