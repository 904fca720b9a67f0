"""Stored conversation turns (LoCoMo's turns-as-facts, issue 18 multi-hop): a turn that only
asks ranks below the statements, and one speaker's turn never counts as an update of another's.

Real SQLite stores; no LLM.
"""

import pytest

from evoclaw_memory.retrieval.wording import only_asks

DAY = 86_400


@pytest.mark.parametrize("text, asks", [
    ("Melanie: Cool! What type of music do you play?", True),
    ("你喜欢什么运动？", True),
    ("Caroline: I went to the parade last week. How about you?", False),
    ("我去了公园。你呢？", False),
    ("Biscuit is allergic to chicken", False),
    ("Joanna: Awesome! I'm going to make it this weekend - can't wait!", False),
])
def test_only_asks_reads_every_sentence_that_says_something(text, asks):
    assert only_asks(text) is asks


def test_a_turn_that_only_asks_ranks_below_the_answer(mem, clock):
    question = mem.remember("Cool! Do you play the clarinet?", created_at=clock.now - 2 * DAY)
    answer = mem.remember("I play the clarinet in the town band on Thursdays",
                          created_at=clock.now - 30 * DAY)
    mem.remember("I paint on Sundays", created_at=clock.now - DAY)
    ids = [h.fact.id for h in mem.retrieve("who plays the clarinet")]
    # On words the question wins (the same words, shorter, newer); it stays a result.
    assert ids == [answer.id, question.id]


def test_one_speakers_turn_is_not_an_update_of_anothers(mem, clock):
    # Two turns sharing most of their own words: the newer one, by someone else, must not
    # push the older evidence below it (the update rule did: LoCoMo conversation 42).
    for i, text in enumerate(["I paint on Sundays", "The town band meets on Thursdays",
                              "The car is due its MOT"]):
        mem.remember(text, created_at=clock.now - i * DAY)
    evidence = mem.remember("Joanna: Awesome! I'm going to bake the cake for my family this weekend",
                            created_at=clock.now - 60 * DAY)
    other = mem.remember("Nate: Awesome! I'm going to teach people to bake vegan cake this weekend",
                         created_at=clock.now - 5 * DAY)
    ids = [h.fact.id for h in mem.retrieve("Who will bake the cake for the family?")]
    assert ids == [evidence.id, other.id]
    # The same speaker saying it again is an update, as before.
    again = mem.remember("Joanna: Awesome! I'm going to bake the cake for the family next weekend",
                         created_at=clock.now - DAY)
    ids = [h.fact.id for h in mem.retrieve("Who will bake the cake for the family?")]
    assert ids.index(again.id) < ids.index(evidence.id)
