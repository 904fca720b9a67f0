"""Issue 13, part 1: distillation keeps what was said, by whom, and when (SPEC §4)."""

from __future__ import annotations

import datetime as dt

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.distill.rules import distill_conversation, distill_facts
from evoclaw_memory.errors import ValidationError
from evoclaw_memory.limits import DISTILLED_FACT_MAX_CHARS

from llm_fakes import FakeLLM

# Monday 8 May 2023, 13:56 local time (noon-ish, so no time zone moves the day).
AT = dt.datetime(2023, 5, 8, 13, 56)
EPOCH = AT.timestamp()


def texts(messages, at=EPOCH):
    return [f.text for f in distill_facts(messages, [], at=at)]


def test_facts_name_the_speaker_from_name_and_resolve_yesterday():
    facts = distill_facts([
        {"role": "user", "name": "Caroline", "content": "Hey Mel! Good to see you! How have you been?"},
        {"role": "assistant", "name": "Melanie", "content": "I'm swamped with the kids & work."},
        {"role": "user", "name": "Caroline",
         "content": "I went to an LGBTQ support group yesterday and it was so powerful."},
    ], [], at=EPOCH)
    assert [f.text for f in facts] == [
        "Melanie is swamped with the kids & work.",
        "Caroline went to an LGBTQ support group on 7 May 2023 and it was so powerful.",
    ]
    assert all(f.created_at == EPOCH for f in facts)


def test_assistant_commitments_are_kept_and_named():
    found = texts([{"role": "user", "content": "Can you sort out the vet for Biscuit?"},
                   {"role": "assistant", "content": "I booked the vet for Friday 3pm."}])
    assert found == ["Assistant booked the vet for Friday 12 May 2023 3pm."]
    named = texts([{"role": "assistant", "name": "Evo", "content": "I booked the vet for Friday 3pm."}])
    assert named == ["Evo booked the vet for Friday 12 May 2023 3pm."]


def test_you_is_the_other_speaker_and_verbs_agree():
    found = texts([{"role": "user", "name": "Caroline", "content": "My kids love painting with me."},
                   {"role": "assistant", "name": "Melanie",
                    "content": "You should enter your painting in the county fair."}])
    assert found == ["Caroline's kids love painting with Caroline.",
                     "Caroline should enter their painting in the county fair."]


@pytest.mark.parametrize("said, resolved", [
    ("We went camping last week.", "in the week before 8 May 2023"),
    ("I ran a charity race last Friday.", "on Friday 5 May 2023"),
    ("The dentist is next Friday at 9.", "Friday 12 May 2023"),
    ("I fly to Lisbon tomorrow.", "on 9 May 2023"),
    ("My knee started hurting two days ago.", "on 6 May 2023"),
    ("This weekend we will paint the fence.", "the weekend of 8 May 2023"),
])
def test_english_relative_dates_become_absolute(said, resolved):
    [text] = texts([{"role": "user", "content": said}])
    assert resolved in text
    for word in ("yesterday", "tomorrow", "last week", "next Friday", "ago", "This weekend"):
        assert word not in text


@pytest.mark.parametrize("said, resolved", [
    ("我昨天去了医院检查身体。", "2023年5月7日"),
    ("我们上周去爬山了，风景很好。", "2023年5月1日那周"),
    ("明天下午我要去机场接我妈妈。", "2023年5月9日"),
    ("下周五我要交季度报告。", "2023年5月19日（周五）"),
])
def test_chinese_relative_dates_become_absolute(said, resolved):
    [text] = texts([{"role": "user", "content": said}])
    assert resolved in text
    assert not any(word in text for word in ("昨天", "上周", "明天", "下周五"))


def test_a_message_timestamp_wins_over_the_conversation_time():
    earlier = dt.datetime(2023, 4, 2, 10, 0)
    facts = distill_facts([
        {"role": "user", "content": "I adopted a kitten yesterday.", "timestamp": earlier.timestamp()},
        {"role": "user", "content": "I repainted the kitchen yesterday.", "time": "2023-05-01T12:00:00"},
        {"role": "user", "content": "I fixed the bike yesterday."},
    ], [], at=EPOCH)
    assert [f.text for f in facts] == ["I adopted a kitten on 1 April 2023.",
                                       "I repainted the kitchen on 30 April 2023.",
                                       "I fixed the bike on 7 May 2023."]
    assert facts[0].created_at == earlier.timestamp()
    assert facts[2].created_at == EPOCH


def test_inclusive_keeps_plain_statements_drops_greetings_thanks_and_questions():
    found = texts([
        {"role": "user", "content": "Hi! Thanks so much."},
        {"role": "user", "content": "What time is it?"},
        {"role": "user", "content": "Wow, that's awesome!"},
        {"role": "user", "content": "The kids went swimming at the lake."},
        {"role": "user", "content": "Yes, I finished the pottery class."},
        {"role": "user", "content": "Remember that the spare key is under the blue pot."},
    ])
    assert found == ["The kids went swimming at the lake.", "I finished the pottery class.",
                     "The spare key is under the blue pot."]


def test_no_fact_is_cut_mid_phrase():
    long_turn = ("I spent the whole afternoon sorting the garage with my brother, we found the old "
                 "camping stove and two bikes, and we finally decided to give the bikes to the "
                 "neighbours' kids because they have been asking about them all summer long.")
    facts = texts([{"role": "user", "name": "Sam", "content": long_turn}])
    assert len(facts) >= 2
    assert all(len(f) <= DISTILLED_FACT_MAX_CHARS and "…" not in f for f in facts)
    joined = " ".join(facts)
    for phrase in ("camping stove", "two bikes", "neighbours' kids", "all summer long"):
        assert phrase in joined


def test_dated_plans_become_hot_events_and_tasks_with_their_day():
    _, updates = distill_conversation([
        {"role": "assistant", "content": "I booked the vet for Friday 3pm."},
        {"role": "user", "content": "I need to renew my passport tomorrow."},
        {"role": "user", "content": "I went to the market yesterday."},
    ], [], EPOCH)
    kinds = {u["key"]: u["value"] for u in updates}
    assert set(kinds) == {"event", "task"}
    assert kinds["event"]["text"] == "Assistant booked the vet for Friday 12 May 2023 3pm."
    assert dt.datetime.fromtimestamp(kinds["event"]["timestamp"]).date() == dt.date(2023, 5, 12)
    assert "9 May 2023" in kinds["task"]["text"]


def test_end_conversation_at_stores_facts_at_that_time_and_the_plan_in_hot(mem):
    report = mem.end_conversation([
        {"role": "user", "name": "Caroline", "content": "I went to an LGBTQ support group yesterday."},
        {"role": "assistant", "content": "I booked the vet for Friday 3pm."},
    ], at=AT, sync=False, consolidate=False)
    stored = {f.text: f for f in report["added"]}
    fact = stored["Caroline went to an LGBTQ support group on 7 May 2023."]
    assert fact.created_at == EPOCH
    assert [e.text for e in mem.hot.active_context.events] == [
        "Assistant booked the vet for Friday 12 May 2023 3pm."]
    hits = mem.retrieve("When did Caroline go to the support group?", limit=3)
    assert hits and hits[0].fact.id == fact.id


def test_at_accepts_iso_and_refuses_nonsense(mem):
    result = mem.distill([{"role": "user", "content": "I moved house yesterday."}], at="2023-05-08T12:00:00")
    assert [f.text for f in result["facts"]] == ["I moved house on 7 May 2023."]
    with pytest.raises(ValidationError):
        mem.distill("I moved house yesterday.", at="next tuesday-ish")
    with pytest.raises(ValidationError):
        mem.distill([{"role": "user", "content": "hi there you", "timestamp": "soon"}])


def test_cli_distill_at(home):
    conversation = '[{"role": "user", "name": "Caroline", "content": "I went to a support group yesterday."}]'
    result = CliRunner().invoke(cli, ["--agent-id", "edge", "--json", "distill", "--at", "2023-05-08T12:00:00",
                                      "--text", conversation],
                                env={"EVOCLAW_HOME": str(home)})
    assert result.exit_code == 0, result.output
    assert "Caroline went to a support group on 7 May 2023." in result.output


def test_llm_prompt_carries_speakers_and_date_and_relative_dates_are_resolved(home, clock):
    # An HTTP fake of an OpenAI-compatible server (tests/llm_fakes.py), not a mock of our code.
    fake = FakeLLM({"summary": "support group", "facts": [
        {"text": "Caroline went to an LGBTQ support group yesterday", "category": "social"}]})
    with Memory.open("llm-agent", home=home, clock=clock, llm=fake.client()) as mem:
        result = mem.distill([{"role": "user", "name": "Caroline",
                               "content": "I went to an LGBTQ support group yesterday."}], at=AT)
    prompt = fake.prompt()
    assert "Conversation date: Monday 8 May 2023" in prompt
    assert "Caroline: I went to an LGBTQ support group yesterday." in prompt
    assert "name the speaker" in prompt
    assert result["mode"] == "llm"
    assert [f.text for f in result["facts"]] == ["Caroline went to an LGBTQ support group on 7 May 2023"]
    assert result["facts"][0].created_at == EPOCH
