"""The owner's control on the Memory API (SPEC §5b): validation, then the store's keepers.

`OwnerControl` is a mixin of Memory (memory.py stays a facade that composes): list, edit,
forget (one id, or matching a query after a dry run), history, unsupersede, tree move,
export and import. The rows are in store.control, the file formats in lifecycle.exchange.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Optional, Union, cast

from evoclaw_memory import validate
from evoclaw_memory.errors import ValidationError
from evoclaw_memory.models import Fact, Metadata
from evoclaw_memory.text import fts_phrase, normalized_key, query_terms
from evoclaw_memory.tiers import tree as tree_rules

if TYPE_CHECKING:
    from evoclaw_memory.config import Config
    from evoclaw_memory.memory import Memory
    from evoclaw_memory.store.control import ControlKeeper, FactHistory
    from evoclaw_memory.store.local import LocalStore
    from evoclaw_memory.store.tree_keeper import TreeKeeper
    from evoclaw_memory.store.warm_keeper import WarmKeeper

FORGET_MATCHING_MAX = 1_000     # one forget_matching call erases at most this many facts
Timestamp = Union[float, int, dt.datetime, None]


def fact_id(value: Any) -> str:
    """A fact id as given by a caller (any id the store could hold: text, <= 128 chars)."""
    value = validate.text("fact id", value, max_len=128).strip()
    if not value:
        raise ValidationError("give a fact id (see `evoclaw-memory list`)")
    return value


def actor(value: Any) -> str:
    """Who asked: 'manual' (API, CLI), 'mcp', 'bot:rules', 'bot:llm' ... (no spaces)."""
    value = validate.text("actor", value, max_len=64)
    if not value or any(ch.isspace() for ch in value):
        raise ValidationError("actor must be one word, e.g. manual or bot:rules")
    return value


def _time(name: str, value: Timestamp) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        value = (value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)).timestamp()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{name} must be epoch seconds or a datetime")
    return validate.timestamp(name, value)


class OwnerControl:
    """Memory's owner-control methods (mixed into Memory)."""

    store: "LocalStore"
    config: "Config"
    clock: Callable[[], float]
    warm: "WarmKeeper"
    trees: "TreeKeeper"
    if TYPE_CHECKING:
        def _check_text(self, text: str) -> str: ...

    @property
    def control(self) -> ControlKeeper:
        # Imported here: Memory's import (every CLI command) then skips the history and
        # undo module, which only the owner's control commands use (issue 29).
        from evoclaw_memory.store.control import ControlKeeper
        return ControlKeeper(self.store, self.trees)

    def list_facts(self, *, category: Optional[str] = None, tier: Optional[str] = None,
                   since: Timestamp = None, until: Timestamp = None,
                   include_superseded: bool = False, limit: Optional[int] = None,
                   offset: int = 0) -> list[Fact]:
        """Stored facts, oldest first: by category (with its subtree), tier and creation time."""
        if category is not None:
            category = tree_rules.validate_path(category)
        if tier is not None and tier not in ("warm", "cold"):
            raise ValidationError(f"tier must be warm or cold, not {tier!r}")
        if limit is not None:
            limit = validate.integer("limit", limit, 1, 10_000_000)
        offset = validate.integer("offset", offset, 0, 10_000_000_000)
        return self.control.select(category=category, tier=tier, since=_time("since", since),
                                 until=_time("until", until),
                                 include_superseded=bool(include_superseded), limit=limit,
                                 offset=offset)


    facts = list_facts      # the API's name (SPEC §8); list_facts is the MCP tool's

    def edit(self, fact_id_: str, *, text: Optional[str] = None, category: Optional[str] = None,
             importance: Optional[float] = None,
             metadata: Optional[Union[Metadata, dict]] = None, by: str = "manual") -> Fact:
        """Correct a fact: its old version is kept in history (not in search); the cloud row
        is replaced at the next push."""
        fid, who = fact_id(fact_id_), actor(by)
        if text is None and category is None and importance is None and metadata is None:
            raise ValidationError("nothing to change: give text, category, importance or metadata")
        new_text = None if text is None else self._check_text(text)
        new_category = None if category is None else tree_rules.validate_path(category)
        new_importance = None if importance is None else validate.importance(importance)
        new_meta = validate.metadata(metadata)
        fact = self.control.require(fid)
        if new_text is not None and new_meta is None and metadata is None:
            # Links, commands and paths in the new text are found as remember() finds them.
            from evoclaw_memory.distill.metadata import extract_metadata, merge_metadata
            found = extract_metadata(new_text)
            new_meta = merge_metadata(fact.metadata, found) if not found.is_empty() else None
        with self.store.transaction():
            edited = self.control.edit(fact, who, self.clock(), text=new_text,
                                       category=new_category, importance=new_importance,
                                       metadata=new_meta)
            # The entity graph follows a corrected text ("Zeb" -> "Zed"): one transaction.
            cast("Memory", self).relink({fact.id: fact.text})
        return edited

    def forget(self, fact_id_: Union[str, Iterable[str]], *, by: str = "manual") -> list[str]:
        """Erase a fact (or several) here, and from the cloud and the other devices through
        the next syncs; returns the ids forgotten. NotFoundError for an unknown id."""
        ids = [fact_id(fact_id_)] if isinstance(fact_id_, str) else [fact_id(i) for i in fact_id_]
        who = actor(by)
        for fid in ids:
            self.control.require(fid)          # all or nothing: check every id first
        return self.control.forget(ids, who, self.clock())

    def forget_matching(self, query: str, *, category: Optional[str] = None,
                        dry_run: bool = True, by: str = "manual") -> list[Fact]:
        """Live and superseded facts containing every word of `query` (in `category` and
        below); erased only with dry_run=False. Returns the facts (that would go)."""
        validate.text("query", query, max_len=4_096)
        terms = query_terms(query)
        if not terms:
            raise ValidationError("give words to match (stopwords alone match everything)")
        cats = None if category is None else [tree_rules.validate_path(category)]
        found = self.control.matching(" AND ".join(map(fts_phrase, terms)), cats,
                                      FORGET_MATCHING_MAX + 1)
        if len(found) > FORGET_MATCHING_MAX:
            raise ValidationError(f"more than {FORGET_MATCHING_MAX} facts match; narrow the "
                                  "query or the category")
        if not dry_run and found:
            self.control.forget([f.id for f in found], actor(by), self.clock())
        return found

    def history(self, fact_id_: str) -> FactHistory:
        """Versions, supersessions, reinforcements and forget of a fact, with times and actors."""
        return self.control.history(fact_id(fact_id_))

    def unsupersede(self, fact_id_: str, *, by: str = "manual") -> Fact:
        """Bring a superseded fact back into search (and the cloud's copy with it)."""
        return self.control.unsupersede(self.control.require(fact_id(fact_id_)), actor(by),
                                        self.clock())

    def tree_move(self, old: str, new: str, *, by: str = "manual") -> int:
        """Move every fact filed at `old` or below to `new` (same sub-paths), then remove
        `old`; returns how many facts moved. by: the actor its audit row names."""
        old_path, new_path = tree_rules.validate_path(old), tree_rules.validate_path(new)
        who = actor(by)
        if old_path == new_path or new_path.startswith(old_path + "/"):
            raise ValidationError("move a node to another place, not into itself")
        if not self.store.has_node(old_path):
            raise ValidationError(f"no node {old_path!r} in the tree")
        now = self.clock()
        moved = 0
        with self.store.transaction():
            paths = [n.path for n in self.store.tree_nodes()
                     if n.path == old_path or n.path.startswith(old_path + "/")]
            for path in sorted(paths):
                target = self.trees.ensure_category(new_path + path[len(old_path):], now)
                for fid in self.store.fact_ids_in_category(path):
                    self.trees.recategorize(fid, target, now)
                    moved += 1
            self.trees.remove(old_path)
            self.store.audit("tree.move", old_path, f"to {new_path} ({moved} facts) actor={who}",
                             now)
        return moved

    def export(self, target: Union[str, Path, IO[str]], format: str = "jsonl") -> int:
        """Write the memory to a path or a text stream: "jsonl" (for import_jsonl: loses
        nothing: every fact with its versions, the tree, hot memory, the entity graph) or
        "markdown" (for reading). Returns the facts written."""
        from evoclaw_memory.lifecycle import exchange
        if format not in ("jsonl", "markdown"):
            raise ValidationError(f"format must be jsonl or markdown, not {format!r}")
        return exchange.export(cast("Memory", self), target, format)

    def import_jsonl(self, source: Union[str, Path, IO[str]]) -> dict[str, int]:
        """Load an export (a path or a text stream): every line validated before anything is
        written, then one transaction; ids already here are skipped, hot memory is merged and
        entities joined. The facts are queued for the cloud and linked to their entities.
        Returns {'facts', 'skipped', 'forgotten', 'versions', 'entities' (new ones), 'hot'
        (1 if hot memory changed)}."""
        from evoclaw_memory.lifecycle import exchange
        return exchange.import_jsonl(cast("Memory", self), source)

    def apply_tombstones(self, ids: list[str]) -> int:
        """Delete facts another device forgot (pulled tombstones); not queued back."""
        return len(self.control.forget(ids, "sync", self.clock(), enqueue=False)) if ids else 0


def act_on_triggers(mem: "OwnerControl", messages: Any, exclude: Iterable[str] = (),
                    by: str = "bot:rules", llm_forget: Iterable[str] = (),
                    llm_correct: Iterable[dict] = ()) -> dict[str, list]:
    """Resolve the conversation's forget/correct triggers against the stored facts.

    A forget acts on the live facts that hold every meaningful word of what the owner named
    (or of the retracted message) when they say one thing (one fact, or it and restatements
    stored apart), and on their superseded versions; anything less clear — such facts that
    say different things, a weaker match, every correction — lists every candidate for the
    owner to confirm, never a deletion.
    `exclude`: ids stored from this very conversation that a named forget must not touch
    (a retraction, though, takes back exactly those). Returns {'forgotten', 'forget_candidates'}."""
    from evoclaw_memory.distill.triggers import find_triggers
    forgotten: list[str] = []
    candidates: list[dict[str, Any]] = []
    skip = set(exclude)
    for trig in find_triggers(messages):
        terms = [t for t in query_terms(trig.target) if t not in _VAGUE] or query_terms(trig.target)
        if not terms:
            continue
        # Every word: a clear match (superseded versions too: a forget is erasure, and the
        # old code in a fact's history is the code). Any word: what the owner may have meant.
        holding = [f for f in mem.control.matching(" AND ".join(map(fts_phrase, terms)), None,
                                                   FORGET_SCAN)
                   if (trig.retracts_previous or f.id not in skip) and f.id not in forgotten]
        strict = [f for f in holding if f.superseded_by is None]
        if trig.kind == "forget" and strict and _one_thing(strict):
            ids = [f.id for f in holding]
            mem.control.forget(ids, by, mem.clock())
            forgotten += [f.id for f in strict]
            continue
        loose = strict or [f for f in _live(mem, " OR ".join(map(fts_phrase, terms)))
                           if f.id not in skip]
        for fact in loose:               # every one: the owner chooses among all of them
            if fact.id not in forgotten:
                candidates.append({"op": trig.kind, "fact_id": fact.id, "text": fact.text,
                                   "said": trig.said[:200], "replacement": trig.replacement})
    # The LLM's own reading (its one distillation call) names facts by the ids it was shown.
    # A model can be wrong, so its forget acts only when the owner's words hold a forget
    # request at all; otherwise, like every correction, it is a candidate to confirm.
    asked = any(t.kind == "forget" for t in find_triggers(messages))
    llm_ids = [i for i in dict.fromkeys(llm_forget) if i not in skip and i not in forgotten]
    named = {f.id: f for f in mem.store.facts_by_ids(llm_ids) if f.superseded_by is None}
    for fact_id, fact in named.items():
        if asked:
            mem.control.forget([fact_id], "bot:llm", mem.clock())
            forgotten.append(fact_id)
        else:
            candidates.append({"op": "forget", "fact_id": fact_id, "text": fact.text,
                               "said": "(the LLM read a forget request)", "replacement": None})
    corrected = {c["old_id"]: c["text"] for c in llm_correct if c.get("old_id")}
    for fact in mem.store.facts_by_ids(list(corrected)):
        if fact.id not in forgotten and fact.superseded_by is None:
            candidates.append({"op": "correct", "fact_id": fact.id, "text": fact.text,
                               "said": "(the LLM read a correction)",
                               "replacement": corrected[fact.id]})
    # The request itself ("never mind, scratch that") is not a fact to keep.
    said = {normalized_key(t.said) for t in find_triggers(messages) if t.kind == "forget"}
    stale = [f.id for f in mem.store.facts_by_ids(list(skip)) if normalized_key(f.text) in said]
    if stale:
        mem.control.forget(stale, by, mem.clock())
    return {"forgotten": forgotten, "forget_candidates": candidates}


def _live(mem: "OwnerControl", match: str) -> list[Fact]:
    return [f for f in mem.control.matching(match, None, FORGET_SCAN) if f.superseded_by is None]


# Words of a forget request that do not name the thing: "forget my OLD gym code", "remove
# that STUFF about the therapist from memory".
_VAGUE = frozenset(query_terms("old older previous former earlier current stuff thing things "
                               "info information detail details fact facts memory memories bit "
                               "part everything anything record note notes entry"))
FORGET_SCAN = 50            # facts a forget request looks at (and lists as candidates)


def _one_thing(facts: list[Fact]) -> bool:
    """Whether the live facts a forget request names all say one thing (a fact and its
    restatements that were stored apart): then all of them go; else the owner chooses."""
    from evoclaw_memory.distill.decision import Known, decide
    first = facts[0]
    return all(decide(f.text, [Known(first.id, first.text)], own=f.speaker is None).action
               == "reinforce" for f in facts[1:])
