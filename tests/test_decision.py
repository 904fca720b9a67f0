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


def _slots_by_regex_alone(text: str) -> list[Slot]:
    """slots_of as it reads without its shortcuts: every gate a case-blind regex search, the
    diet scan word by word, the occupation stems built on the spot."""
    import re

    from evoclaw_memory.distill import slots as s
    found: list[Slot] = []
    first_person = re.search(r"\b(?:I|I['’](?:m|ve|d|ll)|[Mm]y|[Ww]e|[Ww]e['’](?:re|ve)|[Oo]ur|"
                             r"[Mm]e)\b", text) is not None
    for kind, gated in s._patterns().items():
        for gate, pattern in gated:
            if not gate.search(text):
                continue
            for match in pattern.finditer(text):
                if s._NEGATION.search(text[:match.start(s._group(kind))]):
                    continue
                slot = s._slot(kind, match, first_person)
                if slot is not None and slot not in found:
                    found.append(slot)
    if first_person:
        lowered = text.lower()
        for word in re.findall(r"[a-z]+(?:-[a-z]+)?", lowered):
            if word in s.diets():
                at = lowered.find(word)
                if not (s._NEGATION.search(lowered[:at]) or s._OTHER_SUBJECT.search(text[:at])):
                    found.append(Slot("diet", "", {"pescetarian": "pescatarian",
                                                   "ketogenic": "keto"}.get(word, word)))
                break
    return found


def test_slots_shortcuts_read_what_the_regexes_read():
    """The gates' substring tests (ASCII only), the one diet search and the cached
    occupation stems only skip work: the slots are the ones a regex-only walk finds, in its
    order, in any case, and in text a lower-casing would change ("ſ" is a case-blind "s")."""
    import random

    from evoclaw_memory.distill.slots import _slots_of
    bases = ["I live in Leeds", "We moved to Bristol last weekend", "My job is nursing",
             "I work as a paramedic now", "I'm working as a qualified nurse",
             "I work at Acme Widgets", "I've joined St Mary's Hospital",
             "My gym locker code is 4417", "the wifi password is sunflower88",
             "My favourite band is Radiohead", "My birthday is on 14 March",
             "I was born in May", "14 March is my birthday", "My phone is a Fairphone",
             "I've gone vegan", "I'm not vegetarian any more", "Tom is vegan",
             "My home is Sheffield now", "Home for me is now York", "I became a carpenter",
             "Being a headteacher is tiring", "Our address is 4 Elm Road",
             "I am a firefighter", "The combo for the shed is 1234",
             "Our new flat is in Bath", "Home for us is Bath", "My profession is nursing",
             "My role is a nurse", "My position is a nurse", "My career as a nurse",
             "My PIN is 9931", "The wifi passphrase is kettle-blue",
             "The passkey for the garage is 8812", "The safe combination is 5521",
             "My favorite colour is blue", "I'm happy being a nurse", "I was born in Leeds",
             "Our car is a Volvo", "Working as a paramedic is hard", "I was born on 14 March"]
    rng = random.Random(7)
    texts = list(bases)
    for text in bases:
        texts += [text.upper(), text.lower(), text.replace("s", "ſ"), text + " café",
                  "".join(ch.upper() if rng.random() < 0.3 else ch for ch in text)]
    for text in texts:
        _slots_of.cache_clear()
        assert slots_of(text) == _slots_by_regex_alone(text), text
    assert any(slots_of(t) for t in texts if "ſ" in t)      # the non-ASCII path reads too


def test_a_statements_dates_are_found_with_or_without_the_year_shortcut():
    """statement() looks for date phrases only where a year (or 年) is: the dates it finds
    are the ones the full phrase search finds."""
    from evoclaw_memory.distill import sameness
    from evoclaw_memory.text import tokens
    texts = ["Traffic was terrible on 7 January 2026", "Friday 9 January 2026 was long",
             "in the week before 8 May 2023 I moved", "We met in March 2026", "in 2022 I ran",
             "since 1999 I have lived here", "2026年3月5日に引っ越した", "sensor 2 failed",
             "My birthday is on 14 March", "Room 2026 is booked", "I paid 1,850 pounds",
             "from 2019 until 2021 I was a nurse", "in 1850 the house was built"]
    for text in texts:
        full = frozenset(" ".join(tokens(m.group()))
                         for m in sameness._DATE_PHRASE.finditer(text))
        assert sameness.statement(text).dates == full, text
    assert sum(bool(sameness.statement(t).dates) for t in texts) >= 7
