"""LLM distillation (SPEC §4, LLM mode): one call per finished conversation.

Before the call, the few stored facts most related to the conversation are found locally
(full-text search) and shown under short aliases, so the answer can say which fact a new
one supersedes or duplicates. After it, everything the LLM said is checked: fact texts cut
to 150 characters, categories kept within the tree's limits, metadata limited to what the
conversation really contains, and every URL, command and path of the conversation that no
fact carries re-attached (to the fact that talks about it, else a new rule-mode fact).
Storing is the Memory's job (`Memory.apply_distillation`): this module never writes.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, Union

from evoclaw_memory.tiers import tree as tree_rules
from evoclaw_memory.distill.rules import (choose_category, clean_sentence, shorten, slug, split_sentences,
                      truncate_utf8)
from evoclaw_memory import validate
from evoclaw_memory.errors import LLMError, ValidationError
from evoclaw_memory.limits import CORE_SUMMARY_MAX_BYTES, DISTILLED_FACT_MAX_CHARS, TREE_MAX_DEPTH
from evoclaw_memory.llm.client import LLMClient
from evoclaw_memory.llm.prompts import (DistillAnswer, FactOut, HotOut, RelatedFact, distill_messages,
                          distill_schema, parse_distillation)
from evoclaw_memory.distill.dates import format_date, resolve_dates
from evoclaw_memory.distill.metadata import extract_metadata, merge_metadata
from evoclaw_memory.distill.turns import Turn, label, local_time
from evoclaw_memory.distill.turns import conversation_turns as conversation_turns_named
from evoclaw_memory.models import Fact, FactDraft, HotState, Metadata, TreeNode
from evoclaw_memory.text import fts_match_expression, normalized_key, query_terms, tokens

SOURCE = "distill-llm"
RELATED_MAX = 6
RELATED_TERMS = 24          # the rarest conversation words that find related facts
# Share of a fact's (or summary's) words that the conversation must contain: below it the
# text is the model's invention, not the owner's memory. Hot updates must be better grounded.
GROUNDED_FACT = 0.34
GROUNDED_HOT = 0.5
# Share of a fact's words one turn must hold for the fact to be that turn's speaker's.
SPEAKER_GROUNDED = 0.5
# A "duplicate_of" must say mostly the same words as the old fact; a "supersedes" must at
# least share a word with it (a newer value of the same thing).
DUPLICATE_OVERLAP = 0.6
DISTILL_MAX_TOKENS = 1_200
# Resolved dates use these words although the conversation said "yesterday".
_MONTH_WORDS = set(("january february march april may june july august september october november "
                    "december monday tuesday wednesday thursday friday saturday sunday week weekend "
                    "before after").split())  # room for ~12 facts with metadata, the summary and hot updates

Messages = Union[str, Sequence[Any]]


def conversation_turns(messages: Messages) -> list[tuple[str, str]]:
    """(role, text) of the owner's and the assistant's turns (system and tool turns are not
    the owner's memories)."""
    if isinstance(messages, str):
        return [("user", messages)] if messages.strip() else []
    turns = []
    content: Any
    for message in messages or ():
        if isinstance(message, str):
            role, content = "user", message
        elif isinstance(message, dict):
            role, content = str(message.get("role") or "user"), message.get("content")
            if isinstance(content, list):
                content = "\n".join(str(p.get("text", "")) for p in content
                                    if isinstance(p, dict) and p.get("type") == "text")
        else:
            continue
        if role in ("user", "assistant") and isinstance(content, str) and content.strip():
            turns.append((role, content))
    return turns


def conversation_text(turns: list[tuple[str, str]]) -> str:
    return "\n".join(f"{role}: {content}" for role, content in turns)


# -- before the call -------------------------------------------------------------------------

def related_facts(store: Any, text: str, limit: int = RELATED_MAX) -> list[Fact]:
    """The live stored facts most related to `text`, by full-text search over its rarest
    words that the index knows (any tier)."""
    terms = query_terms(text)
    if not terms:
        return []
    frequencies = store.document_frequencies(terms)
    known = sorted((t for t in terms if frequencies.get(t)), key=lambda t: frequencies[t])
    if not known:
        return []
    rows = store.search(fts_match_expression(known[:RELATED_TERMS]), limit=limit)
    return [fact for fact, _rank in rows]


def alias_facts(facts: Iterable[Fact]) -> list[RelatedFact]:
    """Short aliases (F1, F2...) for the prompt: small models copy them better than ids."""
    return [RelatedFact(alias=f"F{i}", id=f.id, text=shorten(f.text, DISTILLED_FACT_MAX_CHARS),
                        category=f.category)
            for i, f in enumerate(facts, 1)]


# -- the call --------------------------------------------------------------------------------

def distill_with_llm(client: LLMClient, turns: list[tuple[str, str]], nodes: list[TreeNode],
                     related: list[Fact], now: float, *, messages: Optional[Messages] = None,
                     at: Optional[float] = None) -> dict[str, Any]:
    """One LLM call: facts, summary, hot updates, supersedes and duplicates (LLMError on
    failure). With `messages`, the model sees who spoke (`name`, else the role) and when
    (the conversation's date `at`, a message's own time), and is asked to name speakers and
    resolve relative dates; a relative date it leaves is resolved here."""
    if not turns:
        raise LLMError("nothing to distill")
    at = now if at is None else at
    named = conversation_turns_named(messages if messages is not None else
                                     [{"role": r, "content": c} for r, c in turns], at)
    text = named_text(named, at) or conversation_text(turns)
    aliased = alias_facts(related)
    value = client.chat_json(distill_messages(text, nodes, aliased, when=_date_line(at),
                                              speakers=_speakers(named)),
                             distill_schema([r.alias for r in aliased]), name="distillation",
                             purpose="distill", max_tokens=DISTILL_MAX_TOKENS)
    answer = parse_distillation(value)
    # Dates the model left relative are made absolute against the conversation's time.
    for item in answer.facts:
        item.text = resolve_dates(item.text, local_time(at)).text
    result = build_result(answer, turns, nodes, aliased, now, extra_vocabulary=text)
    attribute_speakers(result["facts"], named)
    for draft in result["facts"]:
        draft.created_at = at              # said then, not when it was distilled
    return result


def attribute_speakers(drafts: list[FactDraft], turns: list[Turn]) -> None:
    """Set each draft's speaker when it comes from one turn, as the rules do: the turn's
    `name`, "Assistant" for an unnamed assistant, None for the unnamed owner.

    Who said it is read from the conversation, not taken from the model: a fact comes from
    the turn holding the largest share of its words (at least SPEAKER_GROUNDED of them), and
    only when no turn of another speaker holds as many. Speakers' names and date words are
    left out of that share: the fact names its speaker ("Caroline went ...") where her own
    turn says "I", and a resolved date is in no turn."""
    if not turns:
        return
    skip = set(tokens(" ".join(t.speaker for t in turns if t.speaker))) | _MONTH_WORDS
    said = [set(tokens(t.text)) for t in turns]
    for draft in drafts:
        words = {w for w in query_terms(draft.text) if w not in skip and not w.isdigit()}
        if not words:
            continue
        shares = [len(words & turn_words) / len(words) for turn_words in said]
        best = max(shares)
        if best < SPEAKER_GROUNDED:
            continue
        who = {turns[i].speaker or "" for i, share in enumerate(shares) if share == best}
        if len(who) == 1:
            draft.speaker = turns[shares.index(best)].speaker


def named_text(turns: list[Turn], at: float) -> str:
    """The conversation as "Speaker: text" lines; a message said on another day than the
    conversation's carries its date."""
    day = local_time(at).date()
    lines = []
    for turn in turns:
        when = local_time(turn.when).date()
        stamp = f"[{format_date(when)}] " if when != day else ""
        lines.append(f"{stamp}{label(turn)}: {turn.text}")
    return "\n".join(lines)


def _date_line(at: float) -> str:
    moment = local_time(at)
    return f"{moment.strftime('%A')} {format_date(moment.date())}"


def _speakers(turns: list[Turn]) -> list[str]:
    names: list[str] = []
    for turn in turns:
        name = turn.speaker or "the owner (user)"
        if name not in names:
            names.append(name)
    return names


# -- after the call (pure) -------------------------------------------------------------------

def build_result(answer: DistillAnswer, turns: list[tuple[str, str]], nodes: list[TreeNode],
                 related: list[RelatedFact], now: float, extra_vocabulary: str = "") -> dict[str, Any]:
    """Validate an answer into drafts, supersedes/duplicates, hot updates and a summary.

    extra_vocabulary: words the model was given besides the turns (speaker names, dates):
    a fact that names a speaker or an absolute date is still grounded."""
    text = conversation_text(turns)
    vocabulary = set(tokens(text)) | set(tokens(extra_vocabulary)) | _MONTH_WORDS
    ids = {r.alias: r.id for r in related}
    old_texts = {r.id: r.text for r in related}
    sim = list(nodes)
    drafts: list[FactDraft] = []
    supersedes: list[dict[str, Any]] = []
    duplicates: list[dict[str, Any]] = []
    seen_keys: set[str] = set()
    superseded_ids: set[str] = set()
    kept_elsewhere: list[FactOut] = []
    for item in answer.facts:
        if item.nothing or grounding(item.text, vocabulary) < GROUNDED_FACT:
            continue
        draft, sim = _draft(item, text, sim, now)
        if draft is None:
            continue
        key = normalized_key(draft.text)
        if key in seen_keys:
            continue
        seen_keys.add(key)
        duplicate = _resolve_alias(item.duplicate_of, ids)
        if duplicate is not None and overlap(draft.text, old_texts[duplicate]) >= DUPLICATE_OVERLAP:
            duplicates.append({"text": draft.text, "old_id": duplicate})
            kept_elsewhere.append(item)
            continue
        drafts.append(draft)
        old = _resolve_alias(item.supersedes, ids)
        if old is not None and not may_change(draft.text, old_texts[old]):
            old = None
        if old is not None and old not in superseded_ids:
            superseded_ids.add(old)
            supersedes.append({"fact": len(drafts) - 1, "old_id": old})
    # A duplicate's links still count as kept: they live in the old fact.
    drafts = reattach_metadata(drafts, turns, [n.path for n in sim], _meta_of(kept_elsewhere))
    summary = answer.summary if grounding(answer.summary, vocabulary) >= GROUNDED_FACT else ""
    return {"facts": drafts, "summary": short_summary(summary),
            "hot_updates": hot_updates(grounded_hot(answer.hot, vocabulary)),
            "supersedes": supersedes, "duplicates": duplicates,
            "entities": _entities(answer, text),
            # The owner's forget/correct requests as the model read them, on facts it was
            # shown; lifecycle.control decides what acts (never without the owner's words).
            "forget_ops": [ids[a] for a in answer.forget if a in ids],
            "correct_ops": [{"old_id": ids[c.fact], "text": c.text[:DISTILLED_FACT_MAX_CHARS]}
                            for c in answer.correct if c.fact in ids]}


def _entities(answer: DistillAnswer, text: str) -> list[dict[str, Any]]:
    """The LLM's entities that the conversation names, with a kind and relation validate.py
    accepts (an invented name or kind is dropped, not stored)."""
    out = []
    lowered = text.lower()
    for e in answer.entities:
        if not validate.valid(validate.entity_name, e.name) or e.name.lower() not in lowered:
            continue
        kind = e.kind if validate.valid(validate.entity_kind, e.kind) else "other"
        relation = e.relation if e.relation and validate.valid(validate.relation, e.relation) \
            else None
        out.append({"name": validate.entity_name(e.name), "kind": validate.entity_kind(kind),
                    "relation": validate.relation(relation) if relation else None})
    return out


def grounding(text: str, vocabulary: set[str]) -> float:
    """Share of the meaningful words of `text` found in `vocabulary` (0 when it has none)."""
    words = set(query_terms(text))
    return len(words & vocabulary) / len(words) if words else 0.0


def may_change(new: str, old: str) -> bool:
    """Whether `new` can be a newer value of what `old` says: they share a word or a word used
    alike ("vegan" / "vegetarian"), or state the same attribute ("I moved to Bristol" / "I
    live in Leeds"). A supersession naming an unrelated fact is the model's mistake."""
    from evoclaw_memory.distill.sameness import shared_weight, statement
    from evoclaw_memory.distill.slots import slots_of
    if shared_weight(statement(new).weights, statement(old).weights) > 0:
        return True
    return any(a.same_slot(b) for a in slots_of(new) for b in slots_of(old))


def overlap(a: str, b: str) -> float:
    """Share of the meaningful words of the shorter text found in the other."""
    wa, wb = set(query_terms(a)), set(query_terms(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def grounded_hot(hot: HotOut, vocabulary: set[str]) -> HotOut:
    """The hot updates whose words come from the conversation (profile values one by one)."""
    def keep(text: str) -> bool:
        return grounding(text, vocabulary) >= GROUNDED_HOT

    return HotOut(owner_profile={k: v for k, v in hot.owner_profile.items() if keep(v)},
                  lessons=[t for t in hot.lessons if keep(t)],
                  tasks=[t for t in hot.tasks if keep(t)],
                  events=[t for t in hot.events if keep(t)])


def _draft(item: FactOut, conversation: str, sim: list[TreeNode],
           now: float) -> tuple[Optional[FactDraft], list[TreeNode]]:
    text = clean_sentence(item.text)
    if not text:
        return None, sim
    text = shorten(text, DISTILLED_FACT_MAX_CHARS)
    category, sim = resolve_category(item.category, text, sim, now)
    meta = merge_metadata(_grounded(item, conversation), extract_metadata(text))
    return FactDraft(text=text, category=category, importance=item.importance,
                     metadata=meta, source=SOURCE), sim


def _grounded(item: FactOut, conversation: str) -> Metadata:
    """The LLM's metadata, keeping only what the conversation really contains (no invented
    links)."""
    lowered = conversation.lower()

    def real(values: list[str]) -> list[str]:
        return [v.strip() for v in values if v.strip() and v.strip().lower() in lowered]

    return merge_metadata(Metadata(), Metadata(urls=real(item.metadata.urls),
                                               commands=real(item.metadata.commands),
                                               paths=real(item.metadata.paths)))


def _meta_of(items: list[FactOut]) -> Metadata:
    out = Metadata()
    for item in items:
        out = merge_metadata(out, Metadata(urls=item.metadata.urls,
                                           commands=item.metadata.commands,
                                           paths=item.metadata.paths))
    return out


def _resolve_alias(alias: Optional[str], ids: dict[str, str]) -> Optional[str]:
    if not alias:
        return None
    alias = alias.strip().upper()
    if alias.isdigit():
        alias = "F" + alias
    return ids.get(alias)


def resolve_category(raw: str, text: str, sim: list[TreeNode],
                     now: float) -> tuple[str, list[TreeNode]]:
    """(category, simulated tree): the LLM's path if it exists or fits within the limits,
    else its deepest existing ancestor, else the rule-mode choice."""
    known = [n.path for n in sim]
    try:
        path: Optional[str] = tree_rules.validate_path(normalize_category(raw or ""))
    except ValidationError:
        path = None
    for candidate in ([path] if path else []) + [choose_category(text, known)]:
        if candidate in known:
            return candidate, sim
        try:
            return candidate, tree_rules.add(sim, candidate, "", now)
        except ValidationError:                   # LimitError is one too
            ancestor = tree_rules.deepest_existing(sim, candidate)
            if ancestor:
                return ancestor, sim
    return (known[0] if known else "general"), sim


def reattach_metadata(drafts: list[FactDraft], turns: list[tuple[str, str]],
                      known: list[str], elsewhere: Optional[Metadata] = None) -> list[FactDraft]:
    """Give every URL, command and path of the conversation to a fact: to the one that
    talks about the same thing, else to a new fact made from the sentence holding it."""
    wanted = extract_metadata(conversation_text(turns))
    have = elsewhere if elsewhere is not None else Metadata()
    for draft in drafts:
        have = merge_metadata(have, draft.metadata)
    missing = _difference(wanted, have)
    if missing.is_empty():
        return drafts
    drafts = list(drafts)
    sentences = [s for _role, content in turns for s in split_sentences(content)]
    by_sentence: dict[str, Metadata] = {}
    for kind in ("urls", "commands", "paths"):
        for item in getattr(missing, kind):
            home = next((s for s in sentences if item in s), item)
            current = by_sentence.get(home, Metadata())
            by_sentence[home] = merge_metadata(current, Metadata(**{kind: [item]}))
    for sentence, meta in by_sentence.items():
        index = _closest(drafts, sentence)
        if index is not None:
            old = drafts[index]
            drafts[index] = FactDraft(text=old.text, category=old.category,
                                      importance=old.importance,
                                      metadata=merge_metadata(old.metadata, meta),
                                      source=old.source)
            continue
        text = shorten(clean_sentence(sentence), DISTILLED_FACT_MAX_CHARS)
        drafts.append(FactDraft(text=text, category=_existing_or(choose_category(text, known),
                                                                 known),
                                importance=0.5, metadata=meta, source=SOURCE))
    return drafts


def _existing_or(category: str, known: list[str]) -> str:
    """`category` if known, else its deepest known ancestor (no new node past the plan)."""
    if category in known or not known:
        return category
    parts = category.split("/")
    for depth in range(len(parts) - 1, 0, -1):
        if "/".join(parts[:depth]) in known:
            return "/".join(parts[:depth])
    return category


def normalize_category(path: str) -> str:
    """A path of valid segments within the depth limit ('general' when nothing is left)."""
    segments = [s for s in (slug(part) for part in path.replace("\\", "/").split("/")) if s]
    return "/".join(segments[:TREE_MAX_DEPTH]) or "general"


def _difference(a: Metadata, b: Metadata) -> Metadata:
    def norm(v: str) -> str:
        return v.rstrip("/").lower()

    return Metadata(urls=[u for u in a.urls if norm(u) not in {norm(x) for x in b.urls}],
                    commands=[c for c in a.commands
                              if " ".join(c.split()) not in {" ".join(x.split()) for x in b.commands}],
                    paths=[p for p in a.paths if p not in b.paths])


def _closest(drafts: list[FactDraft], sentence: str) -> Optional[int]:
    """The draft sharing the most words with `sentence` (at least two), or None."""
    words = set(query_terms(sentence))
    best, best_overlap = None, 1
    for i, draft in enumerate(drafts):
        overlap = len(words & set(tokens(draft.text)))
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    return best


def short_summary(text: str) -> str:
    """The one-line core summary: whole words within CORE_SUMMARY_MAX_BYTES."""
    summary = ""
    for word in " ".join(text.split()).split(" "):
        candidate = f"{summary} {word}" if summary else word
        if len(candidate.encode("utf-8")) > CORE_SUMMARY_MAX_BYTES:
            summary = summary or truncate_utf8(word, CORE_SUMMARY_MAX_BYTES)
            break
        summary = candidate
    return summary.rstrip(" ,;:-.")


def hot_updates(hot: HotOut) -> list[dict[str, Any]]:
    """Hot-memory updates as {key, value} in `Memory.update_hot`'s terms."""
    updates: list[dict[str, Any]] = []
    if hot.owner_profile:
        updates.append({"key": "owner_profile", "value": dict(hot.owner_profile)})
    updates += [{"key": "lesson", "value": {"text": t, "importance": 0.8}} for t in hot.lessons]
    updates += [{"key": "task", "value": {"text": t}} for t in hot.tasks]
    updates += [{"key": "event", "value": {"text": t}} for t in hot.events]
    return updates


def fresh_hot_updates(updates: list[dict[str, Any]], state: HotState) -> list[dict[str, Any]]:
    """`updates` without what hot memory already says (same profile value, same text)."""
    texts = {normalized_key(x.text) for x in state.critical_lessons}
    texts |= {normalized_key(x.text) for x in state.active_context.tasks}
    texts |= {normalized_key(x.text) for x in state.active_context.events}
    fresh = []
    for update in updates:
        key, value = update.get("key"), update.get("value")
        if key == "owner_profile" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if state.owner_profile.get(k) != v}
            if value:
                fresh.append({"key": key, "value": value})
        elif isinstance(value, dict) and normalized_key(str(value.get("text", ""))) in texts:
            continue
        else:
            fresh.append(update)
    return fresh
