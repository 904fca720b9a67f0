"""Rule-mode distillation (SPEC §4): conversations into a structured record and into facts.

No LLM, no I/O: keyword lists in English and Simplified Chinese (data/, see lexicon.py), a
few regexes, arithmetic.
The three stages:
  1. raw conversation            `conversation_text(messages)`
  2. structured record (~100 B)  `distill_structured(messages) -> Distilled`
  3. core summary (<= 30 B)      `core_summary(distilled)`
and the facts worth storing      `distill_facts(messages, known_categories)`.

Speed: all messages are joined and analysed together, not sentence by sentence. The text
is split into sentence spans; then each scanner (English keywords, Chinese keywords, names,
links) runs once over the whole text and drops what it finds into the sentence whose span
holds it, and the few per-sentence counts are single regex calls. Every step is linear:
a 1 MB conversation takes about 0.6-0.8 s of CPU for `distill_facts` and 0.4 s for
`distill_structured` on a small shared 2-core machine (a loop of regexes per sentence, and
one analysis per message, were both several times slower).

Modules: lexicon (the word lists), sentences (messages, spans, shaping), signals (the
scanners), classify (keep, importance, category), and this one: the pipeline.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from bisect import bisect_right
from collections import Counter
from typing import Iterable, NamedTuple, Optional, Sequence

from evoclaw_memory.limits import CORE_SUMMARY_MAX_BYTES, DISTILLED_FACT_MAX_CHARS
from evoclaw_memory.distill.classify import (CONVERSATION_MIN_SCORE, CategoryIndex, category_for, choose_category,
                                             importance_of, is_informative, is_minor_statement,
                                             is_worth_keeping, slug,
                                             terms_of_hints)
from evoclaw_memory.distill.agent_turns import commitment_tasks, is_commitment, is_done_for_owner
from evoclaw_memory.distill.dates import resolve_dates
from evoclaw_memory.distill.packing import continues
from evoclaw_memory.distill.speakers import attribute
from evoclaw_memory.distill.lexicon import SUMMARY_DROP
from evoclaw_memory.distill.metadata import merge_metadata
from evoclaw_memory.distill.sentences import (Messages, add_span, byte_length, clause_spans, clean_sentence,
                                              conversation_text,
                                              iter_messages, sentence_spans, shorten, shorten_bytes,
                                              split_sentences, strip_prefixes, truncate_utf8)
from evoclaw_memory.distill.signals import Sentence, analyse, extend_unique, find_people
from evoclaw_memory.distill.turns import Turn, conversation_turns, local_time
from evoclaw_memory.models import Distilled, FactDraft, Metadata

# The public face of rule-mode distillation (tests, notes and the LLM distiller use these).
__all__ = [
    "CONVERSATION_MIN_SCORE", "STRUCTURED_FACT_MAX_BYTES", "Block", "Messages", "choose_category",
    "clean_sentence", "conversation_text", "core_summary", "distill_conversation", "distill_facts",
    "distill_structured",
    "facts_from_blocks", "find_people", "shorten", "slug", "split_sentences", "truncate_utf8",
]

# Stage 2's `fact` aims at ~80-100 bytes (SPEC §4).
STRUCTURED_FACT_MAX_BYTES = 100
_OUTCOME_MAX_BYTES = 80
_MAX_PEOPLE = 5
_MAX_TOPICS = 3
_MAX_ACTIONS = 3

# Outcome phrases, strongest first: a firm decision beats a plan, a plan beats a result.
_OUTCOME_PATTERNS = (
    (
        "firm_decision",
        re.compile(
            r"\b(?:decided|decide to|agreed|chose|chosen|settled on|going with)\b|决定|同意|选了|定了", re.I
        ),
    ),
    (
        "plan",
        re.compile(
            r"\b(?:will|going to|gonna|plan(?:ning|s)? to|booked|scheduled)\b|'ll\b|打算|计划|准备|约好|安排",
            re.I,
        ),
    ),
    (
        "result",
        re.compile(
            r"\b(?:ended up|turned out|finally|fixed|solved|resolved)\b|结果|最后|终于|搞定|解决了", re.I
        ),
    ),
)
_CLAUSE_END_RE = re.compile(r"[,.;!?。！？；，\n]")


# ---------------------------------------------------------------------------------------
# Facts
# ---------------------------------------------------------------------------------------


class Block(NamedTuple):
    """A piece of text to take facts from: a message, or a paragraph or bullet of a note."""

    text: str
    hints: tuple[str, ...] = ()  # words that hint at the category (a note's heading)
    from_assistant: bool = False  # weighs a little less (it often repeats the owner)
    whole: bool = False  # one sentence as it is (a short bullet), not split further
    extra: Metadata = Metadata()  # found beside the text (a code fence under a bullet)
    turn: Optional[Turn] = None  # a conversation turn: inclusive, named, dated (issue 13)


def facts_from_blocks(
    blocks: Sequence[Block],
    known_categories: Sequence[str],
    source: str,
    *,
    min_score: int = CONVERSATION_MIN_SCORE,
) -> list[FactDraft]:
    """The facts of some blocks, in order; every link, command and path in a block reaches a fact."""
    return _FactBuilder(CategoryIndex(known_categories), source, min_score).run(blocks)


class _FactBuilder:
    """Turns blocks into FactDrafts.

    All blocks are joined and analysed in one go: analysing thousands of short messages one
    by one spent most of its time in per-call overhead. Blocks are joined by a blank line,
    which every scanner treats as a boundary, so nothing found spans two blocks.
    """

    _SEPARATOR = "\n\n"

    def __init__(self, index: CategoryIndex, source: str, min_score: int) -> None:
        self.index, self.source, self.min_score = index, source, min_score
        self._hint_cache: dict[tuple[str, ...], set[str]] = {}
        self.plans: list[tuple[str, str, dt.date]] = []  # (text, "event"|"task", day)
        self._pieces: dict[int, tuple[str, Optional[tuple[str, dt.date]]]] = {}

    def run(self, blocks: Sequence[Block]) -> list[FactDraft]:
        if not blocks:
            return []
        text = self._SEPARATOR.join(block.text for block in blocks)
        block_starts, offset = [], 0
        for block in blocks:
            block_starts.append(offset)
            offset += len(block.text) + len(self._SEPARATOR)
        spans: list[tuple[int, int]] | None = None
        if any(block.whole or block.turn is not None for block in blocks):
            spans = []
            for block, start in zip(blocks, block_starts):
                if block.whole:
                    add_span(spans, text, start, start + len(block.text))
                elif block.turn is not None:
                    # A long sentence becomes several facts at its clause breaks, so that no
                    # fact has to be cut mid-phrase to fit the limit.
                    spans.extend((start + a, start + b) for a, b in clause_spans(block.text, _TURN_PIECE))
                else:
                    spans.extend((start + a, start + b) for a, b in sentence_spans(block.text))
        sentences, stray_items = analyse(text, spans)

        def block_of(offset: int) -> int:
            return bisect_right(block_starts, offset) - 1

        kept = [s for s in sentences if self._keep(s, blocks[block_of(s.start)])]
        carried = {(kind, value) for s in kept for _, kind, value in s.items}
        kept_ids = {id(s) for s in kept}
        dropped = [item for s in sentences if id(s) not in kept_ids for item in s.items]
        # A block's extra metadata goes with its last fact: placed at the block's end.
        extra = [
            (start + max(0, len(block.text) - 1), kind, value)
            for block, start in zip(blocks, block_starts)
            for kind in ("urls", "commands", "paths")
            for value in getattr(block.extra, kind)
        ]
        leftovers = [
            item for item in sorted(dropped + stray_items + extra) if (item[1], item[2]) not in carried
        ]
        extra_facts = self._place_leftovers(leftovers, kept, blocks, block_starts, block_of)
        minor = self._minor(sentences, kept_ids, blocks, block_of)
        packed = sorted(kept + minor, key=lambda s: s.start) if minor else kept
        minor_ids = {id(s) for s in minor}
        facts = [(group[0].start, self._fact_of(group, blocks[index]))
                 for index, group in self._groups(packed, blocks, block_of)
                 if not all(id(s) in minor_ids for s in group)]
        return [fact for _, fact in sorted(facts + extra_facts, key=lambda pair: pair[0])]

    def _keep(self, sentence: Sentence, block: Block) -> bool:
        if block.turn is not None and block.turn.agent:
            # The agent's own words: only what it did for the owner and the links, commands
            # and paths it gives are facts (its undertakings become tasks: agent_turns.py);
            # the rest restates the memory or is general knowledge.
            return bool(sentence.items) or is_done_for_owner(sentence.text)
        if block.turn is not None:
            # Storage is cheap and a later question may need any plain statement: keep all
            # but what carries nothing (greetings, thanks, reactions, bare questions).
            return is_worth_keeping(sentence)
        return is_informative(sentence, self.min_score)

    def _place_leftovers(
        self, leftovers, kept, blocks, block_starts, block_of
    ) -> list[tuple[int, FactDraft]]:
        """Give each leftover item to the nearest kept sentence of its block (the one before it
        if any); a block with leftovers but no kept sentence becomes a fact of its own."""
        if not leftovers:
            return []
        starts = [s.start for s in kept]
        orphans: dict[int, list[tuple[int, str, str]]] = {}
        for item in leftovers:
            block_index = block_of(item[0])
            before = bisect_right(starts, item[0]) - 1
            if before >= 0 and block_of(kept[before].start) == block_index:
                kept[before].items.append(item)
            elif before + 1 < len(kept) and block_of(kept[before + 1].start) == block_index:
                kept[before + 1].items.append(item)
            else:
                orphans.setdefault(block_index, []).append(item)
        extra = []
        for block_index, items in orphans.items():
            block = blocks[block_index]
            # (A block of nothing but a code fence is described by what it holds.)
            text = block.text if block.text.strip() else " ".join(value for _, _, value in items)
            whole = analyse(text, [(0, len(text))]).sentences[0]
            whole.items = items
            extra.append((block_starts[block_index], self._fact(whole, block)))
        return extra

    @staticmethod
    def _minor(sentences: list[Sentence], kept_ids: set[int], blocks: Sequence[Block],
               block_of) -> list[Sentence]:
        """Short statements of a turn ("We made pizza!", "I won't quit.") that go with the
        kept sentence next to them: alone they say too little to be a fact, beside it they
        are often the very detail a question asks for."""
        out = []
        for i, sentence in enumerate(sentences):
            index = block_of(sentence.start)
            turn = blocks[index].turn
            if id(sentence) in kept_ids or turn is None or turn.agent or not is_minor_statement(sentence):
                continue
            near = [sentences[j] for j in (i - 1, i + 1) if 0 <= j < len(sentences)]
            if any(id(n) in kept_ids and block_of(n.start) == index for n in near):
                out.append(sentence)
        return out

    def _groups(self, kept: list[Sentence], blocks: Sequence[Block],
                block_of) -> list[tuple[int, list[Sentence]]]:
        """The kept sentences as (block index, sentences of one fact), in order.

        A turn's kept sentences are packed into as few facts as the fact limit allows: a
        sentence alone often loses what it is about ("It was so cool" after "I loved reading
        Charlotte's Web"), and a turn said as one thing is found as one thing (issue 13).
        What must stand out (a credential, a contact) stays a fact of its own,
        so its weight is not lent to the chit-chat beside it. Other blocks (notes) keep one
        fact per sentence."""
        out: list[tuple[int, list[Sentence]]] = []
        for sentence in kept:
            index = block_of(sentence.start)
            turn = blocks[index].turn
            if (turn is not None and out and out[-1][0] == index
                    and not any(_STANDS_ALONE & s.flags for s in (out[-1][1][-1], sentence))
                    and continues([s.text for s in out[-1][1]], sentence.text)):
                if len(_said(turn, [self._piece(s, turn)[0] for s in [*out[-1][1], sentence]])) \
                        <= DISTILLED_FACT_MAX_CHARS:
                    out[-1][1].append(sentence)
                    continue
            out.append((index, [sentence]))
        return out

    def _piece(self, sentence: Sentence, turn: Turn) -> tuple[str, Optional[tuple[str, dt.date]]]:
        """A turn's sentence as a fact says it (no filler or "Remember that", dates made
        absolute, the speaker named) and its plan (kind, day) if it is a dated one; computed
        once per sentence (packing asks again for each sentence it tries to add)."""
        key = id(sentence)
        found = self._pieces.get(key)
        if found is None:
            resolved = resolve_dates(strip_prefixes(clean_sentence(sentence.text)), local_time(turn.when))
            text = attribute(resolved.text, turn.speaker, turn.addressee)
            plan = None
            if resolved.future and resolved.dates:
                plan = (_plan_kind(sentence.text),
                        min(d for d in resolved.dates if d > local_time(turn.when).date()))
            found = self._pieces[key] = (text, plan)
        return found

    def _fact_of(self, group: list[Sentence], block: Block) -> FactDraft:
        """One fact of a group of sentences (one, unless they are a turn's packed sentences)."""
        turn = block.turn
        if turn is None:
            return self._fact(group[0], block, clean_sentence(group[0].text))
        pieces = [self._piece(s, turn) for s in group]
        for text, plan in pieces:
            if plan is not None and not (turn.agent and is_commitment(text)):  # agent_turns
                self.plans.append((shorten(text), *plan))
        best = max(group, key=lambda s: s.score) if len(group) > 1 else group[0]   # first on ties
        draft = self._fact(best, block, _said(turn, [text for text, _ in pieces]))
        if len(group) > 1:
            metadata = group[0].metadata
            for sentence in group[1:]:
                metadata = merge_metadata(metadata, sentence.metadata)
            draft.metadata = metadata
            draft.importance = max(importance_of(s, block.from_assistant) for s in group)
        return draft

    def _fact(self, sentence: Sentence, block: Block, text: Optional[str] = None) -> FactDraft:
        """The fact of `sentence` (its category, importance and links), saying `text`."""
        hint_terms = self._hint_cache.get(block.hints)
        if hint_terms is None:
            hint_terms = self._hint_cache[block.hints] = terms_of_hints(block.hints)
        turn = block.turn
        if text is None:                     # a block's leftovers, described by the block
            text = clean_sentence(sentence.text)
            if turn is not None:
                text, plan = self._piece(sentence, turn)
                if plan is not None and not (turn.agent and is_commitment(text)):
                    self.plans.append((shorten(text), *plan))
        return FactDraft(
            text=shorten(text),
            category=category_for(sentence, self.index, hint_terms),
            importance=importance_of(sentence, block.from_assistant),
            metadata=sentence.metadata,
            source=self.source,
            created_at=turn.when if turn is not None and turn.dated else None,
            speaker=turn.speaker if turn is not None else None,
        )


def distill_facts(messages: Messages, known_categories: list[str],
                  at: Optional[float] = None) -> list[FactDraft]:
    """The facts worth storing from a conversation (both sides; see `distill_conversation`)."""
    return distill_conversation(messages, known_categories, at)[0]


def distill_conversation(messages: Messages, known_categories: list[str],
                         at: Optional[float] = None,
                         agent_names: Sequence[str] = ()) -> tuple[list[FactDraft], list[dict]]:
    """(facts, hot updates): what each speaker said, naming them, dates made absolute against
    the message's time (else `at`, else now), each fact created at its message's time; the
    dated plans among them as hot events or tasks dated on their day; the agent's own turns
    (`agent_names`: see turns.conversation_turns) only for their commitments, as tasks, and
    the links they give."""
    turns = conversation_turns(messages, time.time() if at is None else at, dated=at is not None,
                               agent_names=agent_names)
    blocks = [Block(turn.text, from_assistant=turn.role == "assistant", turn=turn) for turn in turns]
    builder = _FactBuilder(CategoryIndex(known_categories), "distill", CONVERSATION_MIN_SCORE)
    # The same thing said twice is one fact; what each saying links to is kept.
    by_key: dict[str, FactDraft] = {}
    for fact in builder.run(blocks):
        key = _dedupe_key(fact.text)
        first = by_key.get(key)
        if first is None:
            by_key[key] = fact
        elif fact.metadata != first.metadata:
            first.metadata = merge_metadata(first.metadata, fact.metadata)
    return list(by_key.values()), _plan_updates(builder.plans) + commitment_tasks(turns)


_TASK_RE = re.compile(r"\b(?:need to|have to|must|remind me|don't forget|to-?do)\b|记得|提醒|要交|得去", re.I)
_PLAN_RE = re.compile(r"\b(?:will|shall|going to|gonna|plan(?:s|ning)? to|booked|scheduled|appointment"
                      r"|due|need to|have to|must|remind me|meeting|visit)\b|'ll\b|要|打算|计划|准备|约|安排|开会",
                      re.I)
# Flags of a sentence that is a fact of its own, never packed with its neighbours.
_STANDS_ALONE = frozenset({"credential", "contact"})
# A piece of a turn aims below the fact limit: the speaker's name and absolute dates add some.
_TURN_PIECE = 120


def _said(turn: Turn, sentences: list[str]) -> str:
    """Sentences of one turn, each already naming the speaker (attributed on its own: "their
    dog" would not say whose across sentences), as one fact; a "Name: " in front of a later
    one goes (the fact already says who)."""
    pieces = []
    for i, piece in enumerate(sentences):
        if i and turn.speaker and piece.startswith((f"{turn.speaker}: ", f"{turn.speaker}：")):
            piece = piece[len(turn.speaker) + 1:].lstrip()
        pieces.append(piece)
    return _join(pieces)


def _join(pieces: Iterable[str]) -> str:
    """Sentences as one text: a space after Latin text, none after Chinese (as each is written)."""
    out = ""
    for piece in pieces:
        out += piece if not out or _CJK_END_RE.search(out) else " " + piece
    return out


_CJK_END_RE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]$")


def _plan_kind(sentence: str) -> str:
    return "task" if _TASK_RE.search(sentence) else "event" if _PLAN_RE.search(sentence) else ""


def _plan_updates(plans: list[tuple[str, str, dt.date]]) -> list[dict]:
    """Hot updates for the dated plans: an event or a task with its day as its timestamp."""
    updates, seen = [], set()
    for text, kind, day in plans:
        if not kind or text in seen:
            continue
        seen.add(text)
        stamp = dt.datetime(day.year, day.month, day.day, 12).timestamp()
        updates.append({"key": kind, "value": {"text": text, "timestamp": stamp}})
    return updates


def _dedupe_key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


# ---------------------------------------------------------------------------------------
# Stage 2 and 3
# ---------------------------------------------------------------------------------------


def distill_structured(messages: Messages) -> Distilled:
    """Stage 2: the conversation as {fact, emotion, people, topics, actions, outcome}."""
    turns = list(iter_messages(messages))
    # The owner's words describe the owner; fall back to everything for a one-sided log.
    chosen = [content for role, content in turns if role == "user"] or [content for _, content in turns]
    sentences = analyse("\n\n".join(chosen)).sentences  # one pass: see _FactBuilder
    if not sentences:
        return Distilled(fact="")
    people: list[str] = []
    topics: list[str] = []
    actions: list[str] = []
    emotions: list[str] = []
    for sentence in sentences:
        extend_unique(people, sentence.names)
        extend_unique(topics, sentence.topics)
        extend_unique(actions, sentence.actions)
        emotions.extend(sentence.emotions)
    outcome = _outcome(sentences)
    return Distilled(
        fact=_structured_fact(sentences, outcome),
        emotion=_dominant(emotions),
        people=people[:_MAX_PEOPLE],
        topics=topics[:_MAX_TOPICS],
        actions=actions[:_MAX_ACTIONS],
        outcome=outcome,
    )


def _dominant(labels: list[str]) -> str | None:
    """The most frequent label, the first seen on ties."""
    if not labels:
        return None
    counts = Counter(labels)
    return max(counts, key=lambda label: counts[label])  # max keeps the first of equal counts


def _structured_fact(sentences: list[Sentence], outcome: str | None) -> str:
    """The most informative sentence (earliest on ties), with the outcome if there is room."""
    best, best_score = sentences[0], -1
    for sentence in sentences:
        score = -1 if sentence.filler else sentence.score - (2 if sentence.question else 0)
        if score > best_score:
            best, best_score = sentence, score
    fact = shorten_bytes(clean_sentence(best.text).rstrip(".。!！"), STRUCTURED_FACT_MAX_BYTES)
    if outcome and outcome.lower() not in fact.lower():
        joined = f"{fact}; {outcome}"
        if byte_length(joined) <= STRUCTURED_FACT_MAX_BYTES:
            fact = joined
    return fact


def _outcome(sentences: list[Sentence]) -> str | None:
    """The last firm decision, else the last plan, else the last result, as a short clause."""
    for flag, pattern in _OUTCOME_PATTERNS:
        for sentence in reversed(sentences):
            match = pattern.search(sentence.text) if flag in sentence.flags else None
            if match:
                end = _CLAUSE_END_RE.search(sentence.text, match.end())
                clause = sentence.text[match.start() : end.start() if end else len(sentence.text)].strip()
                return shorten_bytes(clause, _OUTCOME_MAX_BYTES) or None
    return None


def core_summary(d: Distilled) -> str:
    """Stage 3: a one-line summary of at most CORE_SUMMARY_MAX_BYTES UTF-8 bytes."""
    source = d.outcome or d.fact or " ".join(d.topics)
    words = [w for w in source.split() if w.lower() not in SUMMARY_DROP]
    summary = ""
    for word in words:
        candidate = f"{summary} {word}" if summary else word
        if byte_length(candidate) > CORE_SUMMARY_MAX_BYTES:
            # A first word longer than the limit (Chinese has no spaces) is cut instead.
            summary = summary or truncate_utf8(word, CORE_SUMMARY_MAX_BYTES)
            break
        summary = candidate
    return truncate_utf8(summary.rstrip(" ,;:-，；：、。."), CORE_SUMMARY_MAX_BYTES)
