"""What the agent's own turns add to the memory: its commitments, as tasks (SPEC §4).

The agent's replies mostly restate what `context()` handed it ("As I remember, your dog is
allergic to chicken"), or give general knowledge (a recipe, the weather, why the sky is
blue): neither is the owner's memory, and stored they come back in the next context to be
restated again. What the agent adds that the owner would keep is what it undertook to do ("I'll remind you
on Friday at noon to call the bank"): a task in hot memory, dated when the words give a day,
not a fact; and what it reports having done for the owner ("I booked the vet for Friday
3pm"): a fact, since the appointment now exists (rules.py keeps those sentences).

Pure; no I/O. Which turns are the agent's is decided in turns.py (an assistant without a
person's name, or with the agent's own name).
"""

from __future__ import annotations

import re
from typing import Any

from evoclaw_memory.distill.dates import resolve_dates
from evoclaw_memory.distill.sentences import clean_sentence, shorten, split_sentences
from evoclaw_memory.distill.speakers import attribute
from evoclaw_memory.distill.turns import Turn, local_time

# First-person undertakings: "I'll remind you", "I will check in", "I'm going to book"; not
# "I'll remember that" (an acknowledgement of the memory itself) nor "I'd", "I can" (offers).
# The subject is "I" in the agent's own turn, "(the) Assistant" in a fact an LLM wrote of it.
_AGENT = r"(?:\bI|\b(?:[Tt]he\s+)?[Aa]ssistant)"
_UNDERTAKING = re.compile(
    _AGENT + r"(?:['’]ll|\s+will|\s+shall|['’]m\s+going\s+to|\s+(?:am|is)\s+going\s+to)"
    r"(?!\s+(?:remember|forget|keep\s+(?:that|it|this)\s+in\s+mind|not\b|never\b|try\b|be\s+here"
    r"|always\b|do\s+my\s+best|let\s+you\s+know\s+if))\b", re.I)
# What the agent reports having done for the owner: "I booked the vet for Friday 3pm", "I've
# set up the direct debit". News for the owner (an appointment now exists): kept as a fact.
_DONE = re.compile(
    _AGENT + r"(?:['’]ve|\s+have|\s+has)?\s+(?:just\s+|now\s+|already\s+)?(?:booked|scheduled|set\s+up"
    r"|ordered|reserved|cancel+ed|rescheduled|paid|renewed|registered|signed\s+you\s+up"
    r"|arranged|made\s+(?:a|an|the)\s+(?:booking|reservation|appointment))\b", re.I)
# The agent saying it will do something about the memory itself is not a task.
_ABOUT_MEMORY = re.compile(r"\b(?:memory|remember|forget|forgotten|note\s+(?:that|it))\b", re.I)


# A reminder or a check-in the agent set up is still an undertaking, however it is worded
# ("I've set a reminder for Friday", "Reminder set: Friday 9am", "Let me remind you ...").
_REMINDING = re.compile(
    r"\b(?:remind(?:er)?s?|check(?:ing)?\s+in|follow(?:ing)?\s+up|get\s+back\s+to\s+you"
    r"|ping\s+you|nudge\s+you)\b", re.I)
_REMINDER_SET = re.compile(
    r"^\W*(?:(?:ok|okay|sure|done|great|noted)[,.!:]?\s+)*(?:reminders?\s+(?:is\s+|are\s+)?(?:set|added|"
    r"scheduled)|let\s+me\s+(?:set|add|put|schedule|remind))\b"
    r"|" + _AGENT + r"(?:['’]ve|\s+have|\s+has)?\s+(?:just\s+)?(?:set|added|scheduled|put|created)\b", re.I)


def is_commitment(sentence: str) -> bool:
    """Whether the agent's sentence undertakes to do something for the owner (a task)."""
    if _ABOUT_MEMORY.search(sentence) is not None:
        return False
    if _UNDERTAKING.search(sentence) is not None:
        return True
    return _REMINDER_SET.search(sentence) is not None and _REMINDING.search(sentence) is not None


def is_done_for_owner(sentence: str) -> bool:
    """Whether the agent's sentence reports something it did for the owner (a fact): an
    appointment booked, an order placed; a reminder it set is a task (is_commitment)."""
    return _DONE.search(sentence) is not None and _ABOUT_MEMORY.search(sentence) is None \
        and not is_commitment(sentence)


def commitment_tasks(turns: list[Turn]) -> list[dict[str, Any]]:
    """Hot-memory task updates for the agent's commitments in `turns` (its own turns only):
    the sentence naming the agent ("Assistant will remind you on Friday 6 February 2026 ..."),
    dated on the first day it names after the words were said, else undated."""
    updates: list[dict[str, Any]] = []
    seen: set[str] = set()
    for turn in turns:
        if not turn.agent:
            continue
        when = local_time(turn.when)
        for sentence in split_sentences(turn.text):
            if not is_commitment(sentence):
                continue
            resolved = resolve_dates(clean_sentence(sentence), when)
            text = shorten(attribute(resolved.text, turn.speaker, turn.addressee))
            if text in seen:
                continue
            seen.add(text)
            value: dict[str, Any] = {"text": text}
            ahead = [d for d in resolved.dates if d >= when.date()]
            if ahead:
                day = min(ahead)
                value["timestamp"] = when.replace(year=day.year, month=day.month, day=day.day,
                                                  hour=12, minute=0, second=0,
                                                  microsecond=0).timestamp()
            updates.append({"key": "task", "value": value})
    return updates
