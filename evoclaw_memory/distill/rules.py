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

import re
from bisect import bisect_right
from collections import Counter
from typing import NamedTuple, Sequence

from evoclaw_memory.limits import CORE_SUMMARY_MAX_BYTES
from evoclaw_memory.distill.classify import (CONVERSATION_MIN_SCORE, CategoryIndex, category_for, choose_category,
                                             importance_of, is_informative, slug, terms_of_hints)
from evoclaw_memory.distill.lexicon import SUMMARY_DROP
from evoclaw_memory.distill.metadata import locate_metadata, merge_metadata
from evoclaw_memory.distill.sentences import (Messages, add_span, byte_length, clean_sentence, conversation_text,
                                              iter_messages, sentence_spans, shorten, shorten_bytes,
                                              split_sentences, truncate_utf8)
from evoclaw_memory.distill.signals import Sentence, analyse, extend_unique, find_people
from evoclaw_memory.models import Distilled, FactDraft, Metadata

# The public face of rule-mode distillation (tests, notes and the LLM distiller use these).
__all__ = [
    "CONVERSATION_MIN_SCORE", "STRUCTURED_FACT_MAX_BYTES", "Block", "Messages", "choose_category",
    "clean_sentence", "conversation_text", "core_summary", "distill_facts", "distill_structured",
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
    from_assistant: bool = False  # only its links, commands and paths are worth keeping
    whole: bool = False  # one sentence as it is (a short bullet), not split further
    extra: Metadata = Metadata()  # found beside the text (a code fence under a bullet)


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

    def run(self, blocks: Sequence[Block]) -> list[FactDraft]:
        if not blocks:
            return []
        text = self._SEPARATOR.join(block.text for block in blocks)
        block_starts, offset = [], 0
        for block in blocks:
            block_starts.append(offset)
            offset += len(block.text) + len(self._SEPARATOR)
        spans: list[tuple[int, int]] | None = None
        if any(block.whole for block in blocks):
            spans = []
            for block, start in zip(blocks, block_starts):
                if block.whole:
                    add_span(spans, text, start, start + len(block.text))
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
        facts = [(s.start, self._fact(s, blocks[block_of(s.start)])) for s in kept]
        return [fact for _, fact in sorted(facts + extra_facts, key=lambda pair: pair[0])]

    def _keep(self, sentence: Sentence, block: Block) -> bool:
        if block.from_assistant:
            # The assistant mostly repeats the user; what it adds are links, commands, paths.
            return bool(sentence.items)
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

    def _fact(self, sentence: Sentence, block: Block) -> FactDraft:
        hint_terms = self._hint_cache.get(block.hints)
        if hint_terms is None:
            hint_terms = self._hint_cache[block.hints] = terms_of_hints(block.hints)
        return FactDraft(
            text=shorten(clean_sentence(sentence.text)),
            category=category_for(sentence, self.index, hint_terms),
            importance=importance_of(sentence, block.from_assistant),
            metadata=sentence.metadata,
            source=self.source,
        )


def distill_facts(messages: Messages, known_categories: list[str]) -> list[FactDraft]:
    """The facts worth storing from a conversation, mostly from the user's turns."""
    turns = [(role, content) for role, content in iter_messages(messages) if role in ("user", "assistant")]
    # System prompts and tool output are not the owner's memories. Assistant turns count only
    # for their links, commands and paths: find which have any, all in one scan.
    assistant = [content for role, content in turns if role == "assistant"]
    with_items = _blocks_with_metadata(assistant)
    blocks = []
    assistant_index = 0
    for role, content in turns:
        if role == "user":
            blocks.append(Block(content))
        else:
            if assistant_index in with_items:
                blocks.append(Block(content, from_assistant=True))
            assistant_index += 1
    # The same thing said twice is one fact; what each saying links to is kept.
    by_key: dict[str, FactDraft] = {}
    for fact in facts_from_blocks(blocks, known_categories, "distill"):
        key = _dedupe_key(fact.text)
        first = by_key.get(key)
        if first is None:
            by_key[key] = fact
        elif fact.metadata != first.metadata:
            first.metadata = merge_metadata(first.metadata, fact.metadata)
    return list(by_key.values())


def _blocks_with_metadata(texts: list[str]) -> set[int]:
    """Indexes of the texts that hold a link, command or path (one scan over all of them)."""
    if not texts:
        return set()
    starts, offset = [], 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 2
    return {bisect_right(starts, item[0]) - 1 for item in locate_metadata("\n\n".join(texts))}


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
