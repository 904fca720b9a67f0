"""Memory's entity graph (issue 18), as a mixin: the API (entities, entity, add_entity,
link, remove_entity), linking stored facts to the entities they mention, and the lines
context() lists.

Linking runs after a fact is stored, over every fact past a cursor (the highest rowid
linked), so facts that arrive by other roads (a restore, a pull) are linked too, and a
crash between the two transactions only delays the linking: the links are derived data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, TypeVar

from evoclaw_memory import validate
from evoclaw_memory.errors import NotFoundError, ValidationError
from evoclaw_memory.limits import CONTEXT_RETRIEVED_MAX_BYTES, ENTITY_CONTEXT_MAX
from evoclaw_memory.models import Entity, EntityRecord, Fact
from evoclaw_memory.store.entities import (OWNER, EntityKeeper, linked_upto, lookup_keys, norm,
                                          save_linked_upto, set_linked_upto)

if TYPE_CHECKING:
    from evoclaw_memory.store.local import LocalStore

_T = TypeVar("_T")
CATCH_UP_BATCH = 500        # facts linked per transaction of a catch-up pass
# What one store call (remember, end_conversation) links at most: its own facts plus this
# much of a backlog (facts stored by a release before the entity graph), so a catch-up costs
# each call a few ms and no call hundreds; consolidation links whatever is left.
STORE_CALL_BATCH = 100


class EntityGraph:
    """The entity half of Memory (mixed in; uses self.store and self.clock)."""

    store: "LocalStore"
    clock: Any

    @property
    def entity_keeper(self) -> EntityKeeper:
        return EntityKeeper(self.store)

    # -- the API ---------------------------------------------------------------------------

    def entities(self, kind: Optional[str] = None, limit: Optional[int] = None) -> list[Entity]:
        """Known entities, most mentioned first; `kind` one of limits.ENTITY_KINDS."""
        kind = None if kind is None else validate.entity_kind(kind)
        limit = None if limit is None else validate.integer("limit", limit, 1, 10_000)
        keeper = self.entity_keeper
        return [keeper.get(i, fact_limit=20) for i in keeper.listing(kind, limit)]

    def entity(self, name: str) -> Entity:
        """One entity (by name or alias): attributes, relations, mentions, first/last
        mentioned and the ids of its facts, newest first. NotFoundError if unknown."""
        keeper = self.entity_keeper
        found = keeper.find(validate.entity_name(name))
        if found is None:
            raise NotFoundError(f"no entity {name!r}")
        return keeper.get(found)

    def add_entity(self, name: str, kind: str, attributes: Optional[dict] = None) -> Entity:
        """Add an entity (or set a known one's kind and merge its attributes)."""
        name = validate.entity_name(name)
        kind = validate.entity_kind(kind)
        attributes = validate.entity_attributes(attributes)
        now = self.clock()
        keeper = self.entity_keeper
        with self.store.transaction():
            found = keeper.ensure(name, kind, now, manual=True, attributes=attributes)
            keeper.owner_mentioned(found, now)   # newer than a removal made before it
            self.store.enqueue_state(now)        # entities travel in the critical state
            self.store.audit("entity.add", name, kind, now)
        return keeper.get(found)

    def link(self, a: str, b: str, relation: str) -> Entity:
        """Relate two known entities: `a` is `relation` of `b` ("Sarah", "owner", "wife")."""
        a, b = validate.entity_name(a, "entity a"), validate.entity_name(b, "entity b")
        relation = validate.relation(relation)
        now = self.clock()
        keeper = self.entity_keeper
        with self.store.transaction():
            ids = []
            for name in (a, b):
                found = keeper.find(name)
                if found is None and norm(name) == OWNER:
                    found = keeper.ensure(OWNER, "people", now)
                if found is None:
                    raise NotFoundError(f"no entity {name!r}; add it first (add_entity)")
                ids.append(found)
            if ids[0] == ids[1]:
                raise ValidationError("an entity cannot be related to itself")
            keeper.relate(ids[0], ids[1], relation, now)
            for entity_id in ids:
                keeper.owner_mentioned(entity_id, now)
            self.store.enqueue_state(now)
            self.store.audit("entity.link", a, f"{relation} -> {b}", now)
        return keeper.get(ids[0])

    def remove_entity(self, name: str) -> bool:
        """Remove an entity, its aliases, links and relations (its facts stay). Sticky, as a
        forget is (store.entities.KV_REMOVALS): linking does not bring it back from a fact
        said before now, and other devices remove it too."""
        name = validate.entity_name(name)
        now = self.clock()
        keeper = self.entity_keeper
        with self.store.transaction():
            found = keeper.find(name)
            if found is None:
                return False
            names = [r[0] for r in self.store.conn.execute(
                "SELECT alias FROM entity_aliases WHERE entity_id = ?", (found,))]
            keeper.note_removed({key: now for key in names})
            keeper.remove(found)
            save_linked_upto(self.store)    # facts linked before stay linked without it
            self.store.enqueue_state(now)
            self.store.audit("entity.remove", name, "", now)
        return True

    # -- linking facts ---------------------------------------------------------------------

    def linked(self, value: _T) -> _T:
        """`value`, once every fact not yet linked (the ones just stored among them) is
        linked to its entities."""
        self.link_new_facts(batch=None)
        return value

    def link_new_facts(self, batch: Optional[int] = CATCH_UP_BATCH) -> int:
        """Link the facts stored since the last pass (all of them when batch is None)."""
        fresh = self._link_fresh()
        if fresh is not None:
            return fresh
        linked = 0
        while True:
            cursor = linked_upto(self.store)
            rows = self.store.conn.execute(
                "SELECT rowid, text, created_at, speaker FROM facts WHERE rowid > ? ORDER BY rowid "
                "LIMIT ?", (cursor, min(batch or CATCH_UP_BATCH, CATCH_UP_BATCH))).fetchall()
            if not rows:
                return linked
            now = self.clock()
            keeper = self.entity_keeper
            with self.store.transaction(), self.store.warm_neutral():
                for rowid, text, created_at, speaker in rows:
                    _link_one(keeper, rowid, text, created_at, now, speaker)
                set_linked_upto(self.store, rows[-1][0])
            linked += len(rows)
            if batch is not None:
                return linked

    def link_backlog(self, at_least: int) -> int:
        """Link facts not linked yet, a catch-up transaction at a time, until at least
        `at_least` are linked or none is left (the rest wait for the next store calls and
        the consolidation); returns how many were linked."""
        linked = 0
        while linked < at_least:
            step = self.link_new_facts()
            if not step:
                break
            linked += step
        return linked

    def relink(self, old_texts: dict[str, str]) -> int:
        """Facts whose text changed (an owner's edit, another device's version): their links
        follow the new text. `old_texts`: id -> the text before the change. A name only the
        old text held goes with it (as a forget's does), one the new text holds is linked.
        Facts not linked yet are left to the linking pass, which reads their text as it is.
        Returns how many facts were linked again."""
        ids = list(old_texts)
        if not ids:
            return 0
        store = self.store
        relinked = 0
        with store.transaction(), store.warm_neutral():
            cursor = linked_upto(store)
            keeper = self.entity_keeper
            now = self.clock()
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                for rowid, fid, text, created_at, speaker in store.conn.execute(
                        "SELECT rowid, id, text, created_at, speaker FROM facts WHERE id IN "
                        f"({','.join('?' * len(chunk))})", chunk).fetchall():
                    if old_texts[fid] == text or rowid > cursor:
                        continue
                    keeper.unlink_rowids([rowid])
                    _link_one(keeper, rowid, text, created_at, now, speaker)
                    relinked += 1
        return relinked

    def _link_fresh(self) -> Optional[int]:
        """Link the facts this transaction stored when they are the only ones not linked
        yet (the common case: remember() on a store with no backlog), from the facts in
        hand instead of reading their rows back; None when that is not the case."""
        store = self.store
        fresh = store.fresh
        if not fresh or not store.conn.in_transaction:
            return None
        first = fresh[0][0]
        if first != linked_upto(store) + 1 or fresh[-1][0] != first + len(fresh) - 1:
            return None
        now = self.clock()
        keeper = self.entity_keeper
        with store.warm_neutral():
            for rowid, fact in fresh:
                _link_one(keeper, rowid, fact.text, fact.created_at, now, fact.speaker)
            set_linked_upto(store, fresh[-1][0], lazy=True)
        store.fresh = []                # linked: a second pass in this transaction skips them
        return len(fresh)

    def link_speaker(self, fact: Fact, name: str) -> None:
        """Link a distilled fact to the person who said it, as its speaker. A stored turn
        ("Melanie: ...") says so in its text; a distilled one reads "Melanie went ...",
        which the text alone cannot tell from a fact about Melanie, so distillation says.

        The speaker is kept with the fact too (facts.speaker, in the caller's transaction, so
        the push of this fact carries it): links are rebuilt from the stored fact on a restored
        device, on one that pulls it and in the catch-up (_link_one), and there only the
        stored speaker tells."""
        row = self.store.conn.execute("SELECT rowid FROM facts WHERE id = ?", (fact.id,)).fetchone()
        if row is None or not validate.valid(validate.entity_name, name):
            return
        with self.store.warm_neutral():      # who said it changes no fact's size or tier
            self._link_speaker(fact, row[0], name)

    def _link_speaker(self, fact: Fact, rowid: int, name: str) -> None:
        name = validate.entity_name(name)
        # A reinforced older fact keeps the speaker it has (who said it first); one that had
        # none is queued so the cloud learns it (a new fact is queued already: no-op there).
        if self.store.conn.execute("UPDATE facts SET speaker = ? WHERE rowid = ? AND speaker IS NULL",
                                   (name, rowid)).rowcount:
            self.store.enqueue_fact(fact.id, self.clock())
        keeper = self.entity_keeper
        keeper.link_fact(keeper.ensure(name, "people", self.clock()), rowid, "speaker", fact.created_at)

    def note_entities(self, found: list[dict[str, Any]]) -> None:
        """Entities the LLM distiller named (validated in llm/distill), relations to the
        owner included; the facts stored next link to them by name."""
        now = self.clock()
        keeper = self.entity_keeper
        for item in found:
            entity_id = keeper.ensure(item["name"], item["kind"], now)
            if item.get("relation"):
                keeper.relate(entity_id, keeper.ensure(OWNER, "people", now), item["relation"], now)

    # -- the critical state ----------------------------------------------------------------

    def entity_records(self) -> list[EntityRecord]:
        return self.entity_keeper.records()

    def entity_removals(self) -> dict[str, float]:
        """The names the owner removed, with when (the critical state carries them)."""
        return self.entity_keeper.removals()

    def install_entities(self, records: list[EntityRecord],
                         removals: Optional[dict[str, float]] = None) -> int:
        """Join entities another device (or a restore) carried, after its removals (what
        they cover goes here too); returns how many were new."""
        now = self.clock()
        clean = []
        for rec in records:            # pulled rows pass validate.py like any input
            if validate.valid(validate.entity_name, rec.name) and \
                    validate.valid(validate.entity_kind, rec.kind):
                clean.append(rec)
        valid_removals = {key: when for key, when in (removals or {}).items()
                          if validate.valid(validate.entity_name, key)
                          and validate.valid(validate.timestamp, "removed", when)}
        keeper = self.entity_keeper
        with self.store.transaction():
            if valid_removals:
                keeper.apply_removals(valid_removals)
                save_linked_upto(self.store)    # facts linked before stay linked without them
            return keeper.install(clean, now)

    # -- context ---------------------------------------------------------------------------

    def entity_section(self, query: str, fact_ids: list[str], used: int) -> list[str]:
        """context()'s entities section, inside what the retrieved facts (`used` bytes)
        left of the 3 KB retrieved budget; [] when there is nothing to list or no room."""
        kept, used = [], used + len("## Entities mentioned\n\n".encode())
        for line in self.entity_lines(query, fact_ids):
            used += len(line.encode()) + 1
            if used > CONTEXT_RETRIEVED_MAX_BYTES:
                break
            kept.append(line)
        return ["## Entities mentioned", "\n".join(kept)] if kept else []

    def entity_lines(self, query: str, fact_ids: list[str]) -> list[str]:
        """Up to ENTITY_CONTEXT_MAX lines: the entities the query names, then those the
        retrieved facts mention most."""
        keeper = self.entity_keeper
        ids = list(dict.fromkeys(keeper.lookup(lookup_keys(query, 300)).values()))
        if fact_ids:
            rowids = [r[0] for r in self.store.conn.execute(
                f"SELECT rowid FROM facts WHERE id IN ({','.join('?' * len(fact_ids))})",
                fact_ids)]
            ids += [i for i in keeper.linked_to(rowids) if i not in ids]
        lines = []
        for entity_id in ids:
            e = keeper.get(entity_id, fact_limit=0)
            if norm(e.name) == OWNER:
                continue
            relations = "; ".join(f"{r.relation} {r.other}" for r in e.relations[:3])
            lines.append(f"- {e.name} ({e.kind}, {e.mentions} mentions"
                         + (f"; {relations}" if relations else "") + ")")
            if len(lines) == ENTITY_CONTEXT_MAX:
                break
        return lines


def _link_one(keeper: EntityKeeper, rowid: int, text: str, created_at: float, now: float,
              speaker: Optional[str] = None) -> None:
    """Link one fact to what it mentions: the rules' finds and the known names it holds,
    and to its stored speaker (who said it: the text alone cannot tell) as "speaker"."""
    # Imported here, not at the top: the rules compile large regexes (~40 ms), which
    # only storing a fact needs; `retrieve`, `context` and `hot` start without them.
    from evoclaw_memory.distill.entities import extract
    linked: set[int] = set()
    if speaker and validate.valid(validate.entity_name, speaker) \
            and not keeper.removed_since(speaker, created_at):
        entity_id = keeper.ensure(validate.entity_name(speaker), "people", now)
        keeper.link_fact(entity_id, rowid, "speaker", created_at)
        linked.add(entity_id)
    for m in extract(text):
        if keeper.removed_since(m.name, created_at):
            continue                    # the owner removed this name after it was said
        entity_id = keeper.ensure(m.name, m.kind, now)
        for alias in m.aliases:
            keeper.alias(entity_id, alias)
        keeper.link_fact(entity_id, rowid, m.role, created_at)
        linked.add(entity_id)
        if m.relation:
            keeper.relate(entity_id, keeper.ensure(OWNER, "people", now), m.relation, now)
    known = keeper.named_in(text, 600) - linked
    if known:
        known.discard(keeper.find(OWNER))       # "owner" is the owner's relations' anchor
    for entity_id in known:
        keeper.link_fact(entity_id, rowid, "mention", created_at)
