"""Export and import: a memory as JSON Lines (a round trip that loses nothing: every fact
with its ids, times, counts, metadata, tier, supersessions and prior versions, the tree, hot
memory and the entity graph) or Markdown (for reading).

The JSONL file is deterministic (no export time, rows in storage order, entities by name,
floats in their shortest exact form), so exporting an imported export gives the same bytes.
Its first line is a header; then one line per tree node (path, description), one for hot
memory, one per entity and one per fact. Version 1 files (nodes and facts only) still import.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterator, Literal, Optional, Union

import msgspec

from evoclaw_memory import durable, validate
from evoclaw_memory.errors import ValidationError
from evoclaw_memory.limits import FACT_MAX_TEXT, HOT_MAX_BYTES
from evoclaw_memory.models import (EntityRecord, EntityRelation, Event, Fact, HotState, Lesson,
                                   Metadata, Project, Task)
from evoclaw_memory.store.control import FactVersion, versions_by_fact
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.store.rows import FACT_AND_FLAGS, FACT_COLUMNS, fact_from_row
from evoclaw_memory.store.tree_keeper import key_and_body_of
from evoclaw_memory.tiers import tree as tree_rules
from evoclaw_memory.tiers.warm import fact_size

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory

FORMAT = "evoclaw-memory.export"
FORMAT_VERSION = 2          # 2: hot memory and the entity graph (1: nodes and facts only)
LINE_MAX_BYTES = 1_000_000
# Facts an import links to their entities before it returns (~0.1 ms each): a usual export
# whole, a 100k-fact one in part (bench/: import of 100k facts < 10 s).
LINKED_AT_IMPORT = 10_000


class Header(msgspec.Struct, tag_field="type", tag="header"):
    format: str
    version: int
    agent_id: str


class Node(msgspec.Struct, tag_field="type", tag="node"):
    path: str
    description: str = ""


class Hot(msgspec.Struct, tag_field="type", tag="hot", forbid_unknown_fields=True):
    """Hot memory as stored, its merge clock included."""
    state: HotState


class ExportedEntity(msgspec.Struct, tag_field="type", tag="entity", forbid_unknown_fields=True,
                     omit_defaults=True):
    """An entity as the critical state carries it (models.EntityRecord without `mentions`:
    the import counts its own links, as a device does)."""
    name: str
    kind: str = "other"
    aliases: list[str] = []
    attributes: dict[str, str] = {}
    relations: list[EntityRelation] = []
    first_mentioned: float = 0.0
    last_mentioned: float = 0.0
    manual: bool = False


class Removals(msgspec.Struct, tag_field="type", tag="removed", forbid_unknown_fields=True):
    """The names the owner removed from the entity graph, with when (written when there are
    any): an import does not link them again from the facts said before."""
    names: dict[str, float]


class ExportedFact(msgspec.Struct, tag_field="type", tag="fact", forbid_unknown_fields=True):
    id: str
    text: str
    category: str
    importance: float
    created_at: float
    last_access: float
    access_count: int
    metadata: Metadata
    source: str
    tier: Literal["warm", "cold"]
    superseded_by: Optional[str]
    versions: list[FactVersion] = []
    pinned: bool = False          # older exports have neither: read as not pinned, shared
    private: bool = False
    # The last change's time (the sync's later-change-wins clock); older exports have none:
    # read as 0, never changed, as the facts they come from were (local migration 0010).
    changed_at: float = 0.0
    content_changed_at: float = 0.0   # the two parts' own clocks (local migration 0011)
    flags_changed_at: float = 0.0
    # Who said it (issue 13). UNSET (absent from the line) when nobody did, so a fact without
    # one exports exactly as before; older exports have none.
    speaker: Union[Optional[str], msgspec.UnsetType] = msgspec.UNSET
    # The supersession's own clock (local migration 0013); older exports have none: read as 0.
    superseded_changed_at: float = 0.0


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Union[Header, Node, Hot, ExportedEntity, Removals,
                                      ExportedFact])


class Export(msgspec.Struct):
    """An export file, read and checked (nothing written yet)."""
    nodes: list[Node]
    facts: list[ExportedFact]
    hot: Optional[HotState] = None          # None: a version 1 file
    entities: list[EntityRecord] = []
    removals: dict[str, float] = {}


@contextlib.contextmanager
def _opened(target: Union[str, Path, IO[str]], mode: str) -> Iterator[IO[str]]:
    if isinstance(target, (str, Path)):
        path = Path(target).expanduser()
        try:
            if mode == "w":
                # Written whole under another name, fsynced, then renamed over the previous
                # export (durable.py): a power cut or an error mid-export leaves the previous
                # one intact. 0600 from the first byte: it holds the whole memory.
                from evoclaw_memory.config import private_dir
                private_dir(path.parent)
                with durable.replacing(path) as handle:
                    yield handle
            else:
                with open(path, mode, encoding="utf-8", newline="\n") as handle:
                    yield handle
        except (OSError, ValueError) as exc:      # ValueError: a NUL byte in the path
            verb = "write" if mode == "w" else "open"
            shown = str(target).replace("\0", "\\0")
            raise ValidationError(f"cannot {verb} {shown}: "
                                  f"{getattr(exc, 'strerror', None) or exc}") from None
    else:
        yield target


def export(mem: "Memory", target: Union[str, Path, IO[str]], fmt: str) -> int:
    """Write the memory to `target` as jsonl or markdown; returns the facts written."""
    store = mem.store
    store.flush_fulltext()
    mem.link_new_facts(batch=None)      # every fact's entities are in the graph written out
    written = 0
    with _opened(target, "w") as out:
        if fmt == "markdown":
            return _markdown(mem, out)
        versions = versions_by_fact(store)
        buffer: list[bytes] = [_encoder.encode(Header(FORMAT, FORMAT_VERSION,
                                                      mem.config.agent_id))]
        buffer += [_encoder.encode(Node(n.path, n.description)) for n in store.tree_nodes()]
        buffer.append(_encoder.encode(Hot(store.load_hot())))
        buffer += [_encoder.encode(ExportedEntity(
            r.name, r.kind, r.aliases, r.attributes, r.relations, r.first_mentioned,
            r.last_mentioned, r.manual)) for r in mem.entity_keeper.every_record()]
        removals = mem.entity_removals()
        if removals:
            buffer.append(_encoder.encode(Removals(dict(sorted(removals.items())))))
        for row in store.conn.execute(f"SELECT {FACT_AND_FLAGS} FROM facts ORDER BY rowid"):
            f = fact_from_row(row)
            buffer.append(_encoder.encode(ExportedFact(
                f.id, f.text, f.category, f.importance, f.created_at, f.last_access,
                f.access_count, f.metadata, f.source, f.tier, f.superseded_by,
                versions.get(f.id, []), f.pinned, f.private, f.changed_at,
                f.content_changed_at, f.flags_changed_at, f.speaker or msgspec.UNSET,
                f.superseded_changed_at)))
            written += 1
            if len(buffer) >= 5_000:
                out.write(b"\n".join(buffer).decode() + "\n")
                buffer = []
        if buffer:
            out.write(b"\n".join(buffer).decode() + "\n")
    return written


def _markdown(mem: "Memory", out: IO[str]) -> int:
    import datetime as dt
    store = mem.store
    by_category: dict[str, list[Fact]] = {}
    for row in store.conn.execute(f"SELECT {FACT_COLUMNS} FROM facts ORDER BY category, rowid"):
        fact = fact_from_row(row)
        by_category.setdefault(fact.category, []).append(fact)
    out.write(f"# Memory of {mem.config.agent_id}\n")
    count = 0
    for category, facts in by_category.items():
        out.write(f"\n## {category}\n\n")
        for fact in facts:
            day = dt.datetime.fromtimestamp(fact.created_at, dt.timezone.utc).strftime("%Y-%m-%d")
            note = f" (superseded by {fact.superseded_by})" if fact.superseded_by else ""
            text = validate.printable(fact.text).replace("\n", " ")
            out.write(f"- {text} — {day}, importance {fact.importance:g}, `{fact.id}`{note}\n")
            meta = fact.metadata
            for item in meta.urls + meta.commands + meta.paths:
                out.write(f"  - {validate.printable(item)}\n")
            count += 1
    _markdown_graph(mem, out)
    return count


def _markdown_graph(mem: "Memory", out: IO[str]) -> None:
    """Hot memory (as MEMORY.md shows it, one level down, whole) and the entity graph."""
    from evoclaw_memory.tiers.hot import render_markdown
    hot = render_markdown(mem.store.load_hot(), mem.clock(), max_bytes=10 ** 9)
    body = [line for line in hot.splitlines()[1:] if not line.startswith("_Generated")]
    out.write("\n## Hot memory\n")
    out.write("\n".join(f"#{line}" if line.startswith("#") else line for line in body).rstrip()
              + "\n")
    records = mem.entity_keeper.every_record()
    if records:
        out.write("\n## People and things\n\n")
    for rec in records:
        parts = [f"- **{validate.printable(rec.name)}** ({rec.kind})"]
        if rec.aliases:
            parts.append("also " + ", ".join(validate.printable(a) for a in rec.aliases))
        parts += [f"{validate.printable(r.relation)} of {validate.printable(r.other)}"
                  for r in rec.relations]
        parts += [f"{validate.printable(k)}: {validate.printable(v)}"
                  for k, v in sorted(rec.attributes.items())]
        out.write("; ".join(parts) + "\n")


def _check(fact: ExportedFact) -> ExportedFact:
    """The validation every stored value passes (validate.py)."""
    validate.text("id", fact.id, max_len=128)
    if not fact.id.strip():
        raise ValidationError("empty id")
    validate.text("text", fact.text, max_len=FACT_MAX_TEXT)
    tree_rules.validate_path(fact.category)
    validate.importance(fact.importance)
    validate.timestamp("created_at", fact.created_at)
    validate.timestamp("last_access", fact.last_access)
    validate.integer("access_count", fact.access_count, 0, 2**62)
    validate.metadata(fact.metadata)
    validate.text("source", fact.source, max_len=64)
    validate.optional_text("superseded_by", fact.superseded_by, max_len=128)
    validate.timestamp("changed_at", fact.changed_at)
    validate.timestamp("content_changed_at", fact.content_changed_at)
    validate.timestamp("flags_changed_at", fact.flags_changed_at)
    validate.timestamp("superseded_changed_at", fact.superseded_changed_at)
    fact.speaker = validate.speaker(fact.speaker) if fact.speaker else msgspec.UNSET
    for v in fact.versions:
        validate.text("version text", v.text, max_len=FACT_MAX_TEXT)
        tree_rules.validate_path(v.category)
        validate.importance(v.importance)
        validate.metadata(v.metadata)
        validate.timestamp("replaced_at", v.replaced_at)
        validate.text("actor", v.actor, max_len=64)
    return fact


def read_export(source: Union[str, Path, IO[str]]) -> Export:
    """Every line decoded and validated (nothing written); ValidationError names the line."""
    read = Export(nodes=[], facts=[])
    seen_header = False
    with _opened(source, "r") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            if len(line) > LINE_MAX_BYTES:
                raise ValidationError(f"line {number} is over {LINE_MAX_BYTES} bytes")
            try:
                item = _decoder.decode(line)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise ValidationError(f"line {number} is not an export record: {exc}") from None
            try:
                if isinstance(item, Header):
                    if item.format != FORMAT or item.version > FORMAT_VERSION:
                        raise ValidationError(f"not an export this release reads "
                                              f"({item.format} v{item.version})")
                    seen_header = True
                elif isinstance(item, Node):
                    read.nodes.append(Node(tree_rules.validate_path(item.path),
                                           validate.text("description", item.description, 100)))
                elif isinstance(item, Hot):
                    if read.hot is not None:
                        raise ValidationError("a second hot memory line")
                    read.hot = _checked_hot(item.state)
                elif isinstance(item, ExportedEntity):
                    read.entities.append(_checked_entity(item))
                elif isinstance(item, Removals):
                    for key, when in item.names.items():
                        validate.entity_name(key, "removed name")
                        validate.timestamp("removed at", when)
                    read.removals.update(item.names)
                else:
                    read.facts.append(_check(item))
            except ValidationError as exc:
                raise ValidationError(f"line {number}: {exc}") from None
    if not seen_header:
        raise ValidationError("not an evoclaw-memory export (no header line)")
    return read


def _checked_hot(state: HotState) -> HotState:
    """What update_hot would accept: JSON values in the profile, times in range. The limits
    are the store's: a state over them is pruned as any update is (import_jsonl)."""
    validate.json_value("owner_profile", state.owner_profile)
    ctx = state.active_context
    entries: list[Union[Lesson, Event, Task, Project]] = [
        *state.critical_lessons, *ctx.events, *ctx.tasks, *ctx.projects]
    for entry in entries:
        validate.text("hot entry id", entry.id, max_len=128)
        validate.timestamp("hot entry timestamp", entry.timestamp)
    for key, when in state.clock.items():
        validate.timestamp(f"clock {key[:40]!r}", when)
    return state


def _checked_entity(item: ExportedEntity) -> EntityRecord:
    """An entity line as install_entities takes a pulled record: names, kind, attributes and
    relations validated."""
    return EntityRecord(
        name=validate.entity_name(item.name), kind=validate.entity_kind(item.kind),
        aliases=[validate.entity_name(a, "alias") for a in item.aliases],
        attributes=validate.entity_attributes(item.attributes),
        relations=[EntityRelation(relation=validate.relation(r.relation),
                                  other=validate.entity_name(r.other, "related entity"))
                   for r in item.relations],
        first_mentioned=validate.timestamp("first_mentioned", item.first_mentioned),
        last_mentioned=validate.timestamp("last_mentioned", item.last_mentioned),
        manual=item.manual)


def import_jsonl(mem: "Memory", source: Union[str, Path, IO[str]]) -> dict[str, int]:
    """Load an export in one transaction (see OwnerControl.import_jsonl)."""
    if isinstance(source, str) and "\n" in source:
        source = io.StringIO(source)
    read = read_export(source)
    nodes, facts = read.nodes, read.facts
    store, now = mem.store, mem.clock()
    forgotten = mem.control.forgotten_among([f.id for f in facts])
    rows, versions = [], []
    for item in facts:
        if item.id in forgotten:        # the owner erased it: an old export must not undo that
            continue
        fact = Fact(id=item.id, text=item.text, category=item.category,
                    importance=item.importance, created_at=item.created_at,
                    last_access=item.last_access, access_count=item.access_count,
                    metadata=item.metadata, source=item.source, tier=item.tier,
                    superseded_by=item.superseded_by, pinned=item.pinned, private=item.private,
                    changed_at=item.changed_at, content_changed_at=item.content_changed_at,
                    flags_changed_at=item.flags_changed_at, speaker=item.speaker or None,
                    superseded_changed_at=item.superseded_changed_at)
        key, body = key_and_body_of(fact)
        rows.append(LocalStore.bulk_row(fact, key, fact_size(fact.text, fact.metadata), body))
        versions += [(item.id, v.version, v.text, v.category, v.importance,
                      _encoder.encode(v.metadata).decode(), v.replaced_at, v.actor)
                     for v in item.versions]
    with store.transaction():
        for node in nodes:
            if not store.has_node(node.path):
                mem.trees.ensure_category(node.path, now)
                if node.description:
                    store.set_node_description(node.path, node.description)
        start = store.conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM facts").fetchone()[0]
        inserted = store.insert_facts_bulk(rows)
        landed = [r[0] for r in store.conn.execute("SELECT id FROM facts WHERE rowid > ?",
                                                   (start,))]
        landed_set = set(landed)
        store.conn.executemany(
            "INSERT OR IGNORE INTO fact_versions (fact_id, version, text, category, importance, "
            "metadata, replaced_at, actor) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [v for v in versions if v[0] in landed_set])
        # The cloud archive holds every fact: the imported ones go out with the next push.
        store.conn.executemany("INSERT INTO outbox (kind, ref, created_at) VALUES ('fact', ?, ?) "
                               "ON CONFLICT(kind, ref) DO NOTHING", [(i, now) for i in landed])
        store.audit("import", "facts", f"{inserted} facts actor=manual", now)
        mem.trees.recount()
        hot = read.hot is not None and _import_hot(store, read.hot, now)
        # As a synced device takes them: the removals first (before the linking below),
        # then the records.
        entities = mem.install_entities(read.entities, read.removals)
        store.enqueue_state(now)
    # The imported facts join their entities: up to LINKED_AT_IMPORT of them now, the rest
    # (as after a full restore) by the next store calls and the consolidation; an export
    # links what is left first. Linking is idempotent: a crash here only leaves a backlog.
    mem.link_backlog(LINKED_AT_IMPORT)
    if hot:
        mem.write_memory_md()
    return {"facts": inserted, "skipped": len(rows) - inserted, "forgotten": len(forgotten),
            "versions": sum(1 for v in versions if v[0] in landed_set),
            "entities": entities, "hot": int(hot)}


def _import_hot(store: LocalStore, imported: HotState, now: float) -> bool:
    """Hot memory from an export: taken as it is by a memory that has none, else merged as
    two devices' states merge (the newest change of each field and entry); pruned only if
    over the limits, as an update would be. Returns whether it changed anything."""
    from evoclaw_memory.cloud.merge import merge_hot
    from evoclaw_memory.tiers import hot as hot_rules
    ours = store.load_hot()
    merged = imported if ours == HotState() else merge_hot(ours, imported, now)
    if not hot_rules.within_limits(merged):
        merged = hot_rules.prune(merged, now)
        if hot_rules.state_size(merged) > HOT_MAX_BYTES:        # identity and profile alone
            raise ValidationError(f"the export's hot memory would be "
                                  f"{hot_rules.state_size(merged)} bytes here, over the "
                                  f"{HOT_MAX_BYTES}-byte limit; nothing was imported")
    if merged == ours:
        return False
    store.save_hot(merged, now)
    store.audit("import", "hot", "hot memory actor=manual", now)
    return True
