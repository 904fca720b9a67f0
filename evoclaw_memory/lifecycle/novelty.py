"""The write-time decision, against the store: which live facts a new statement may repeat
or change, and what the rules (distill.decision) say to do with it.

Candidates are found by the statement's rarest words and, for a one-valued attribute
(distill.slots), by the words any statement of that attribute holds; each search walks the
full-text index newest first and stops after a few dozen rows, so the decision costs the same
on a young memory and on an old one (an old fact about something the memory has heard of a
thousand times since can be missed: it is then added, never lost).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional

from evoclaw_memory.distill.decision import Decision, Known, closest, decide
from evoclaw_memory.distill.sameness import statement
from evoclaw_memory.distill.slots import frame_terms, slots_of
from evoclaw_memory.models import Fact, HotState
from evoclaw_memory.text import fts_phrase

if TYPE_CHECKING:
    from evoclaw_memory.store.local import LocalStore

ANCHOR_TERMS = 3            # the statement's rarest words searched
PER_ANCHOR = 6              # newest live facts of the same speaker read per word
PER_SLOT = 20               # ... per one-valued attribute
RELATED_PER_STATEMENT = 3   # the closest candidates of each statement shown to the LLM


def candidates(store: "LocalStore", text: str, speaker: Optional[str], own: bool,
               ignore: Iterable[str] = ()) -> list[Known]:
    """Live facts of the same speaker that `text` may restate or change."""
    weights = statement(text, ignore).weights
    rare = sorted(weights, key=lambda t: (-weights[t], t))[:ANCHOR_TERMS]
    found: dict[str, str] = {}
    for term in rare:
        found.update(store.newest_live_texts(fts_phrase(term), speaker, PER_ANCHOR))
    if own:
        for slot in slots_of(text):
            terms = frame_terms(slot)
            if terms:
                found.update(store.newest_live_texts(" OR ".join(map(fts_phrase, terms)),
                                                     speaker, PER_SLOT))
    return [Known(fact_id, fact_text) for fact_id, fact_text in found.items()]


RELATED_MAX = 12            # facts shown to the LLM for a conversation's statements
STATEMENTS_MAX = 60         # statements whose candidates are looked up (a long log: its first)


def related_to_statements(store: "LocalStore", messages: Any,
                          agent_names: Iterable[str] = ()) -> list[Fact]:
    """The live facts the owner's and other people's statements in `messages` may repeat or
    change (each statement's candidates, best first, in the order the statements came), for
    the LLM's per-fact decision; the agent's own turns are not asked about."""
    from evoclaw_memory.distill.sentences import split_sentences
    from evoclaw_memory.distill.turns import conversation_turns
    ranked: dict[str, None] = {}
    asked = 0
    for turn in conversation_turns(messages, 0.0, agent_names=list(agent_names)):
        if turn.agent:
            continue
        for sentence in split_sentences(turn.text):
            asked += 1
            if asked > STATEMENTS_MAX or len(ranked) >= RELATED_MAX:
                break
            found = candidates(store, sentence, turn.speaker, turn.speaker is None)
            best = closest(sentence, found, own=turn.speaker is None)
            for known in best[:RELATED_PER_STATEMENT]:
                ranked.setdefault(known.id, None)
    ids = list(ranked)[:RELATED_MAX]
    by_id = {fact.id: fact for fact in store.facts_by_ids(ids)}
    return [by_id[i] for i in ids if i in by_id]


def shown_in_hot(hot: HotState) -> list[str]:
    """What MEMORY.md already says besides the facts: tasks, events, lessons."""
    ctx = hot.active_context
    return [t.text for t in ctx.tasks] + [e.text for e in ctx.events] + \
        [lesson.text for lesson in hot.critical_lessons]


def judge(store: "LocalStore", text: str, speaker: Optional[str], hot: HotState,
          ignore: Iterable[str] = (), strict_only: bool = False) -> Decision:
    """The decision for one distilled statement (see distill.decision)."""
    ignore = list(ignore)
    own = speaker is None
    return decide(text, candidates(store, text, speaker, own, ignore), own=own,
                  rendered=shown_in_hot(hot), ignore=ignore, strict_only=strict_only)
