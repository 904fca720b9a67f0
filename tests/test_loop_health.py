"""Issue 25: the memory stays clean in the loop an agent runs, closed loop, for weeks.

A small simulation of its own (not the dev persona of ../shared/eval/longrun-dev, which the
bench's `health` area runs): a different owner, different wordings, an assistant that
restates what context() handed it and sometimes pastes it, makes promises and otherwise talks
about the weather. Real Memory, real SQLite, one Memory.open() per conversation, rule mode.
"""

from __future__ import annotations

import random
import re

from evoclaw_memory import Memory
from evoclaw_memory.distill.rendered import holds_rendered

# (key, [ways the owner says it]) — each says one thing; KEY marks it in a stored text.
FACTS = {
    "peanut": ["My son Oscar is allergic to peanuts.", "Oscar can't have peanuts, he's allergic.",
               "Peanuts give Oscar hives, he's allergic."],
    "teacher": ["I work as a teacher at Hillside Primary.", "I'm a teacher at Hillside Primary.",
                "Teaching at Hillside Primary keeps me busy; I'm a teacher there."],
    "york": ["I live in York.", "Home for us is York.", "We've lived in York for ten years."],
    "pin": ["The garage door code is 7731.", "Our garage door code is 7731."],
    "violin": ["I play the violin in a string quartet.", "I play violin with my string quartet."],
    "tea": ["I drink green tea every afternoon.", "Green tea is my afternoon drink."],
}
CHANGES = {"york": "We moved to Norwich last month.", "teacher": "I'm a headteacher now, at Oak Lane."}
KEYS = {"peanut": "peanut", "teacher": "teacher", "york": "york", "pin": "7731",
        "violin": "violin", "tea": "green tea", "norwich": "norwich", "headteacher": "headteacher"}
SMALL_TALK = ["Long day today.", "It's raining again.", "I'm knackered.", "What's for dinner?"]
WEATHER = "Expect showers this afternoon, clearing later with a light breeze."
FACT_LINE = re.compile(r"^- (?:\[pinned\] )?(?:\[private\] )?\[[^\]]+\] (.*)$", re.M)


def _assistant(rng: random.Random, ctx: str) -> str:
    recalled = FACT_LINE.findall(ctx)
    r = rng.random()
    if recalled and r < 0.35:
        said = rng.choice(recalled).rstrip(".")
        said = said.replace("My ", "your ").replace("I ", "you ").replace("I'm ", "you're ")
        return rng.choice(["As I recall, {}.", "You mentioned that {}.", "Noted before: {}."]).format(said)
    if r < 0.45:
        section = ctx.split("## Retrieved memories", 1)[-1]
        return "From my notes: ## Retrieved memories" + section       # a weak model's paste
    if r < 0.6:
        return f"I'll remind you on Thursday at {rng.choice(['9am', '5pm'])} to water the garden."
    return WEATHER


def _conversations(rng: random.Random):
    facts = {**FACTS, **{f"{key}-now": [text] for key, text in CHANGES.items()}}
    order = list(FACTS)
    for day in range(24):
        said = []
        if day < len(order):
            said.append(FACTS[order[day]][0])
        known = order[:min(day, len(order))]
        if day > 14:                     # the owner restates what holds now, not the old
            known = [k for k in known if k not in CHANGES]
            known += [f"{key}-now" for key in CHANGES]
        if day > 18:
            known = [k for k in known if k != "pin"]
        for _ in range(3):
            r = rng.random()
            if known and r < 0.5:
                said.append(rng.choice(facts[rng.choice(known)]))
            elif len(known) > 1 and r < 0.6:
                a, b = rng.sample(known, 2)
                said.append(f"{facts[a][-1]} Oh and {facts[b][0][0].lower()}{facts[b][0][1:]}")
            else:
                said.append(rng.choice(SMALL_TALK))
        if day == 14:
            said += [CHANGES["york"], CHANGES["teacher"]]
        if day == 18:
            said.append("Please forget the garage door code.")
        yield day, said


def _copies(texts, key):
    return sum(1 for t in texts if key in t.lower())


def test_weeks_of_the_loop_leave_one_fact_per_thing_and_no_echo(home, clock):
    rng = random.Random(7)
    start = clock.now
    for day, said in _conversations(rng):
        clock.now = start + day * 86_400 + 9 * 3600
        with Memory.open("loop", home=home, clock=clock) as mem:
            ctx = mem.context(said[0])
            messages = []
            for line in said:
                messages += [{"role": "user", "content": line},
                             {"role": "assistant", "content": _assistant(rng, ctx)}]
            mem.end_conversation(messages, sync=False)
    with Memory.open("loop", home=home, clock=clock) as mem:
        live = [f.text for f in mem.facts()]
        assert not [t for t in live if holds_rendered(t)], live
        assert not [t for t in live if t.startswith("Assistant") or "you mentioned" in t.lower()
                    or "as i recall" in t.lower()], live
        assert _copies(live, "7731") == 0                          # the forget acted
        for key in ("peanut", "violin", "green tea", "norwich", "headteacher"):
            assert _copies(live, key) == 1, (key, live)
        assert _copies(live, "york") == 0 and _copies(live, "hillside") == 0   # superseded
        assert len(live) <= 2 * 6 + len(SMALL_TALK), live       # growth stays small
        history = [f.text for f in mem.facts(include_superseded=True) if f.superseded_by]
        assert any("York" in t for t in history)                 # the old value is history
        assert mem.retrieve("Which city do we live in now?")[0].fact.text.startswith(
            "We moved to Norwich")
        assert "water the garden" in " ".join(t.text for t in mem.hot.active_context.tasks)
