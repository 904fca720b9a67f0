"""The LoCoMo scoring rules of bench/locomo.py (pure functions; no data set, no store)."""

from bench.locomo import (Conversation, Question, Turn, _evidence, answer_in, credited_turns,
                          score_question)

SPEAKERS = ("Caroline", "Melanie")


def _turns(*texts: str) -> list[Turn]:
    return [Turn(f"D1:{i + 1}", SPEAKERS[i % 2], t, 1) for i, t in enumerate(texts)]


def test_a_rewritten_fact_is_credited_to_its_turn_only():
    turns = _turns("I went to a LGBTQ support group yesterday and it was so powerful.",
                   "Wow, that sounds powerful! What happened at the group?",
                   "Painting landscapes keeps me calm after work.")
    fact = "Caroline went to an LGBTQ support group on 7 May 2023"
    assert credited_turns(fact, turns, SPEAKERS) == {"D1:1"}
    assert credited_turns("Melanie paints landscapes", turns, SPEAKERS) == {"D1:3"}
    assert credited_turns("Caroline on 7 May 2023", turns, SPEAKERS) == set()   # names and dates only


def test_answers_are_normalised_phrases():
    assert answer_in("7 May 2023", ["Caroline went to the group on 7 May, 2023."])
    assert not answer_in("May 2023", ["in May 20234"])
    assert not answer_in("", ["anything"])


def test_evidence_ids_are_repaired_or_skipped():
    conv = Conversation("t", SPEAKERS, [], [])
    ids = {"D8:6", "D9:17", "D11:26", "D30:5"}
    assert _evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D10:19"], ids, conv) == [
        "D8:6", "D9:17", "D11:26", "D30:5"]
    assert conv.skipped == ["D", "D10:19"]


def test_scores_count_a_turn_once_and_rank_the_first_hit():
    q = Question("?", "peanuts", ["D1:1", "D1:2"], 4)
    ranked = [(set(), "x"), ({"D1:2"}, "allergic to peanuts"), ({"D1:2"}, "y")]
    s = score_question(q, ranked)
    assert s == {"recall5": 0.5, "hit5": 1.0, "mrr10": 0.5, "answer5": 1.0}
