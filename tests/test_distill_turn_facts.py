"""Issue 13: a conversation turn becomes as few whole facts as the limit allows (SPEC §4).

A sentence cut out of its turn loses what it is about ("It was so cool ..." after "I loved
reading Charlotte's Web"), and a turn said as one thing should be found as one thing.
"""

from __future__ import annotations

import datetime as dt

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.distill.rules import distill_facts
from evoclaw_memory.limits import DISTILLED_FACT_MAX_CHARS

AT = dt.datetime(2023, 5, 8, 13, 56)
EPOCH = AT.timestamp()


def texts(messages, at=EPOCH):
    return [f.text for f in distill_facts(messages, [], at=at)]


def test_the_sentences_of_a_turn_stay_together_in_one_fact():
    assert texts([{"role": "assistant", "name": "Melanie", "content":
                   'Wow! I loved reading "Charlotte\'s Web" as a kid. It was so cool seeing how '
                   "friendship and compassion can make a difference. What about you?"}]) == [
        'Melanie loved reading "Charlotte\'s Web" as a kid. It was so cool seeing how friendship '
        "and compassion can make a difference."]


def test_a_long_turn_is_packed_into_whole_sentences_within_the_limit():
    turn = ("I went hiking last week and got into a bad spot with some people. It really bugged me, "
            "so I tried to apologize to them. They asked about my dog and my new job. We talked for an hour "
            "about the trail and the lake. Next time I will pick a quieter path through the forest.")
    facts = texts([{"role": "user", "name": "Caroline", "content": turn}])
    assert 1 < len(facts) < 5                          # packed, not one fact per sentence
    assert all(len(f) <= DISTILLED_FACT_MAX_CHARS and not f.endswith("…") for f in facts)
    joined = " ".join(facts)
    for piece in ("in the week before 8 May 2023", "tried to apologize", "dog and their new job",
                  "the trail and the lake", "quieter path through the forest"):
        assert joined.count(piece) == 1                # every sentence, once, never cut
    assert all("Caroline" in f for f in facts)         # each piece still says who


def test_turns_are_never_packed_together():
    facts = texts([{"role": "user", "name": "Jon", "content": "I'm starting a dance studio."},
                   {"role": "assistant", "name": "Gina", "content": "I opened my clothing store."}])
    assert facts == ["Jon is starting a dance studio.", "Gina opened their clothing store."]


def test_a_credential_stays_a_fact_of_its_own_with_its_own_weight():
    facts = distill_facts([{"role": "user", "content": "The wifi password is in Bitwarden. I had a long day "
                            "at work and went to the shops for bread."}], [], at=EPOCH)
    assert [f.text for f in facts] == ["The wifi password is in Bitwarden.",
                                       "I had a long day at work and went to the shops for bread."]
    assert facts[0].importance > facts[1].importance


def test_chinese_sentences_of_a_turn_join_without_a_space():
    assert texts([{"role": "user", "name": "陈莉", "content": "我昨天去了医院。医生说没事，下周再去复查。你呢？"}]) == [
        "陈莉：我2023年5月7日去了医院。医生说没事，2023年5月15日那周再去复查。"]


def test_a_packed_turn_is_found_by_words_of_both_sentences(tmp_path):
    mem = Memory.open(agent_id="t", home=tmp_path)
    try:
        mem.end_conversation([{"role": "assistant", "name": "Melanie", "content":
                               "I loved reading Charlotte's Web as a kid. It showed how friendship "
                               "and compassion make a difference."}], at=EPOCH, sync=False)
        (hit,) = mem.retrieve("Which book did Melanie read about friendship?", limit=1)
        assert "Charlotte's Web" in hit.fact.text and "friendship" in hit.fact.text
    finally:
        mem.close()


def _speaker_roles(mem, name):
    keeper = mem.entity_keeper
    entity_id = keeper.find(name)
    rows = {rowid: text for rowid, text in mem.store.conn.execute("SELECT rowid, text FROM facts")}
    return {rows[r]: role for r, role in keeper.roles([entity_id], list(rows)).items()}


def test_a_distilled_fact_is_linked_to_who_said_it_as_its_speaker(tmp_path):
    mem = Memory.open(agent_id="t", home=tmp_path)
    try:
        mem.end_conversation([
            {"role": "user", "name": "Caroline", "content": "I went to an LGBTQ support group yesterday."},
            {"role": "assistant", "name": "Melanie", "content": "Caroline is so brave. I painted a lake."},
            {"role": "user", "name": "陈莉", "content": "我昨天去了医院，医生说没事。"},
        ], at=EPOCH, sync=False)
        caroline = _speaker_roles(mem, "Caroline")
        assert caroline["Caroline went to an LGBTQ support group on 7 May 2023."] == "speaker"
        # Melanie said it: it is about Caroline, not Caroline's words.
        assert caroline["Melanie: Caroline is so brave. Melanie painted a lake."] != "speaker"
        assert _speaker_roles(mem, "Melanie")["Melanie: Caroline is so brave. Melanie painted a lake."] == "speaker"
        assert set(_speaker_roles(mem, "陈莉").values()) == {"speaker"}
    finally:
        mem.close()


def test_what_a_person_said_in_their_own_words_is_not_outranked_by_their_chit_chat(tmp_path):
    # Without the speaker link, only facts with no first person ("Caroline: The group ...")
    # kept the speaker's label and its boost, and buried the answer under them.
    mem = Memory.open(agent_id="t", home=tmp_path)
    try:
        mem.end_conversation([
            {"role": "user", "name": "Caroline", "content": "I went to an LGBTQ support group yesterday."},
            {"role": "assistant", "name": "Melanie", "content": "How was it?"},
            {"role": "user", "name": "Caroline", "content": "The support group was so great!"},
        ], at=EPOCH, sync=False)
        top = mem.retrieve("When did Caroline go to the LGBTQ support group?", limit=1)
        assert top[0].fact.text == "Caroline went to an LGBTQ support group on 7 May 2023."
    finally:
        mem.close()


def test_an_unnamed_assistant_speaks_as_assistant_and_the_owner_links_no_one(tmp_path):
    mem = Memory.open(agent_id="t", home=tmp_path)
    try:
        mem.end_conversation([{"role": "user", "content": "I moved to Lisbon in March."},
                              {"role": "assistant", "content": "I booked the movers for Friday 3pm."}],
                             at=EPOCH, sync=False)
        assert _speaker_roles(mem, "Assistant") == {"Assistant booked the movers for Friday 12 May 2023 3pm.":
                                                     "speaker"}
        spoken = {role for (role,) in mem.store.conn.execute("SELECT role FROM entity_facts ef JOIN facts f "
                                                             "ON f.rowid = ef.fact_rowid WHERE f.text LIKE 'I moved%'")}
        assert "speaker" not in spoken
    finally:
        mem.close()


def test_a_quoted_sentence_ends_after_its_closing_quote_and_initials_do_not_end_one():
    from evoclaw_memory.distill.sentences import split_sentences
    assert split_sentences('A quote by J.K. Rowling I like: "Turn on the light - happiness hides in the '
                           'darkest of times." That is how I keep hope alive.') == [
        'A quote by J.K. Rowling I like: "Turn on the light - happiness hides in the darkest of times."',
        "That is how I keep hope alive."]
    assert split_sentences("我说：“好的。”然后走了。") == ["我说：“好的。”", "然后走了。"]


def test_a_quote_reaches_its_fact_whole():
    facts = texts([{"role": "user", "name": "Tim", "content":
                    'Yeah! There\'s a quote by J.K. Rowling that I really like: "Turn on the light - happiness '
                    'hides in the darkest of times." That\'s how I keep hope alive during tough times.'}])
    assert any('"Turn on the light - happiness hides in the darkest of times."' in f for f in facts)


def test_words_after_the_speaker_that_are_not_verbs_are_left_as_they_are():
    from evoclaw_memory.distill.speakers import attribute
    said = {"I completely encourage it.": "Nate completely encourages it.",
            "I then went home.": "Nate then went home.",
            "I can share it with you if you would like!": "Nate can share it with Joanna if Joanna would like!",
            "I will share more with you soon.": "Nate will share more with Joanna soon.",
            "I reply to emails daily.": "Nate replies to emails daily.",
            "I fly to Rome.": "Nate flies to Rome."}
    assert {s: attribute(s, "Nate", "Joanna") for s in said} == said


def test_a_one_word_statement_goes_with_the_sentence_next_to_it_and_never_alone():
    def said(content):
        return texts([{"role": "user", "name": "John", "content": content}])
    assert said("We made pizza! We had so much fun making them together. Have you made anything lately?") == [
        "John: We made pizza! We had so much fun making them together."]
    assert said("Thanks, Gina! I won't quit. I'm gonna keep going.") == [
        "John won't quit. John is gonna keep going."]
    assert said("We made pizza!") == []                         # alone it says too little
    assert said("Wow, nice band! I saw them live in Berlin.") == ["John saw them live in Berlin."]


def test_a_statement_with_a_question_tag_is_kept_without_the_tag():
    def said(content, name="Caroline"):
        return texts([{"role": "user", "name": name, "content": content}])
    assert said("Sunflowers mean warmth and happiness, right? What do flowers mean to you?") == [
        "Caroline: Sunflowers mean warmth and happiness."]
    assert said("这家店的饺子很好吃，对吧？", name="陈莉") == ["陈莉：这家店的饺子很好吃。"]
    assert said("What a day, right?") == [] and said("Is that right?") == []   # still questions
    assert said("It was fun, huh?") == []                                      # the tag adds nothing


# Sunday 10 July 2022, 14:00 local time.
SUNDAY = dt.datetime(2022, 7, 10, 14, 0).timestamp()


@pytest.mark.parametrize("said, fact", [
    # an irregular past tense puts a bare weekday behind, not ahead
    ("I won my fourth video game tournament on Friday!",
     "Nate won their fourth video game tournament on Friday 8 July 2022!"),
    ("I will play the final on Friday.", "Nate will play the final on Friday 15 July 2022."),
    # the usual short forms of a weekday
    ("I took my kids to a pottery workshop last Fri.",
     "Nate took their kids to a pottery workshop on Friday 8 July 2022."),
    ("I joined a new activist group last Tues.", "Nate joined a new activist group on Tuesday 5 July 2022."),
    # last night, this morning; a date that is the subject stands bare
    ("Last night was amazing, we saw a jazz concert.", "Nate: The night of 9 July 2022 was amazing"),
    ("I baked bread this morning with my son.", "Nate baked bread on the morning of 10 July 2022 with"),
])
def test_more_relative_dates_become_absolute(said, fact):
    [text] = texts([{"role": "user", "name": "Nate", "content": said}], at=SUNDAY)
    assert text.startswith(fact)


def test_a_rough_time_ago_keeps_its_roughness_and_its_anchor_and_set_stays_past():
    at = dt.datetime(2023, 7, 27, 13, 0).timestamp()
    assert texts([{"role": "user", "name": "Maria", "content": "I started volunteering here about a year ago "
                   "after seeing a family on the streets."}], at=at) == [
        "Maria started volunteering here around 2022 after seeing a family on the streets."]
    assert texts([{"role": "user", "name": "John", "content": "I set up a 5K charity run in our neighborhood."}],
                 at=at) == ["John set up a 5K charity run in our neighborhood."]
