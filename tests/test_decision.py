"""Issue 25, parts 2-5: the write-time decision (distill/decision.py, lifecycle/novelty.py).

A restatement reinforces, a change supersedes, the richer saying replaces, different values
and different occurrences stay apart, and another speaker's words are kept as said.
"""

from __future__ import annotations

import pytest

from evoclaw_memory.distill.decision import Known, decide
from evoclaw_memory.distill.slots import Slot, asked_kinds, slots_of


def verdict(new, old, own=True):
    return decide(new, [Known("old", old)], own=own)


@pytest.mark.parametrize("new, old", [
    ("Chicken makes Biscuit itch like crazy, he's allergic.", "My dog Biscuit is allergic to chicken."),
    ("Leeds is where I live.", "I live in Leeds."),
    ("Home for me is Leeds, near Roundhay Park.", "I live in Leeds."),
    ("Saturday mornings are for parkrun.", "I do parkrun every Saturday morning."),
    ("I was born on 14 March.", "My birthday is on 14 March."),
    ("The locker code at the gym is 4417.", "My gym locker code is 4417."),
    ("Radiohead is my all-time favourite band.", "My favourite band is Radiohead."),
])
def test_a_restatement_in_other_words_reinforces(new, old):
    assert verdict(new, old) == ("reinforce", "old", (), "restates a live fact")


@pytest.mark.parametrize("new, old", [
    ("We moved to Bristol last weekend.", "I live in Leeds."),
    ("I've gone fully vegan now.", "I don't eat meat, I'm vegetarian."),
    ("I'm a paramedic now, with the ambulance service.", "I work as a nurse at St Mary's hospital."),
    ("The gym locker code is 9120 now.", "My gym locker code is 4417."),
    ("My favourite band is Muse these days.", "Radiohead is my all-time favourite band."),
    ("My phone is a Pixel now.", "My phone is a Fairphone."),
])
def test_a_changed_value_supersedes_the_old_fact(new, old):
    decision = verdict(new, old)
    assert decision.action == "add" and decision.replaces == ("old",)


@pytest.mark.parametrize("new, old", [
    ("Biscuit loves his squeaky ball.", "My dog Biscuit is allergic to chicken."),
    ("I'm knitting a scarf for my mum.", "My mum is called Grace."),
    ("My sister Ada lives in Lagos.", "I live in Leeds."),            # not the owner's home
    ("The greenhouse sensor 2 reads every 4 minutes.", "The greenhouse sensor 1 reads every 2 minutes."),
    ("Caroline: I went camping on 7 May 2023.", "Caroline: I went camping on 2 April 2023."),
    ("My car is in the garage.", "My car is a blue Honda Jazz."),     # no change said: kept apart
    ("Tom is vegan but I eat everything.", "I'm vegetarian."),
])
def test_different_statements_stay_apart(new, old):
    assert verdict(new, old, own=not new.startswith("Caroline")) == ("add", None, (), "new")


def test_the_owner_saying_the_same_on_another_day_keeps_the_newest():
    decision = verdict("Long day on 9 February 2026.", "Long day on 2 February 2026.")
    assert decision.action == "add" and decision.replaces == ("old",)


def test_the_richer_saying_replaces_what_it_holds():
    decision = verdict("My mum Grace lives in Sheffield and knits every evening.", "My mum is Grace.")
    assert decision.action == "add" and decision.replaces == ("old",)


def test_a_piece_of_a_live_fact_restates_it():
    old = "Assistant will remind you on Friday 6 February 2026 at noon to order more printer ink."
    assert verdict("remind you on Friday 6 February 2026 at noon", old).action == "reinforce"


def test_another_speakers_words_merge_only_when_nearly_identical():
    old = "Caroline went to the LGBTQ support group and it was powerful."
    assert verdict("The support group was so inspiring for Caroline.", old, own=False).action == "add"
    assert verdict("Caroline went to the LGBTQ support group, and it was powerful!", old,
                   own=False).action == "reinforce"


def test_what_hot_memory_already_shows_is_not_added_again():
    decision = decide("Call the bank about the mortgage.", [], own=True,
                      rendered=["call the bank about the mortgage"])
    assert decision.action == "skip"


def test_slots_read_the_owners_attributes_only():
    assert slots_of("We moved to New York City last week.") == [Slot("home", "", "new york city")]
    assert slots_of("My sister moved to Lagos.") == []
    assert slots_of("I'm a qualified ICU nurse.") == [Slot("job", "", "nurs")]
    assert slots_of("I'm not vegan.") == []
    assert asked_kinds("Which town is my home these days?") == ["home"]
    assert asked_kinds("What do I do for a living?") == ["job"]
    assert asked_kinds("Where is my sister based?") == []
    assert asked_kinds("What's the name of the newest animal in our home?") == []


def test_end_conversation_reinforces_restatements_and_supersedes_changes(mem, clock):
    mem.end_conversation([{"role": "user", "content": "I live in Leeds."},
                          {"role": "user", "content": "My dog Biscuit is allergic to chicken."}],
                         sync=False)
    clock.advance(3)
    report = mem.end_conversation([
        {"role": "user", "content": "Chicken makes Biscuit itch like crazy, he's allergic."},
        {"role": "assistant", "content": "As I remember, your dog Biscuit is allergic to chicken."},
        {"role": "user", "content": "We moved to Bristol last weekend."},
    ], sync=False)
    live = {f.text: f for f in mem.facts()}
    assert set(live) == {"My dog Biscuit is allergic to chicken.",
                         "We moved to Bristol on the weekend before 3 December 2025."}
    assert report["counts"]["added"] == 1 and report["counts"]["superseded"] == 1
    assert [f.text for f in report["reinforced"]] == ["My dog Biscuit is allergic to chicken."]
    assert live["My dog Biscuit is allergic to chicken."].access_count == 1
    old = next(f for f in mem.facts(include_superseded=True) if f.text == "I live in Leeds.")
    assert old.superseded_by == live["We moved to Bristol on the weekend before 3 December 2025."].id
    top = mem.retrieve("Which town is my home these days?")
    assert top[0].fact.text.startswith("We moved to Bristol") and top[0].method == "attribute"
