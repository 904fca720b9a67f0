"""Export and import: every fact of a memory as JSON Lines (a round trip that loses nothing:
ids, times, counts, metadata, tier, supersessions, prior versions) or Markdown (for reading).

The JSONL file is deterministic (no export time, rows in storage order, floats in their
shortest exact form), so exporting an imported export gives the same bytes. Its first line
is a header; then one line per tree node (path, description) and one per fact.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterator, Literal, Optional, Union

import msgspec

from evoclaw_memory import durable, validate
from evoclaw_memory.errors import ValidationError
from evoclaw_memory.limits import FACT_MAX_TEXT
from evoclaw_memory.models import Fact, Metadata
from evoclaw_memory.store.control import FactVersion, versions_by_fact
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.store.rows import FACT_AND_FLAGS, FACT_COLUMNS, fact_from_row
from evoclaw_memory.store.tree_keeper import key_and_body_of
from evoclaw_memory.tiers import tree as tree_rules
from evoclaw_memory.tiers.warm import fact_size

if TYPE_CHECKING:
    from evoclaw_memory.lifecycle.control import OwnerControl

FORMAT = "evoclaw-memory.export"
FORMAT_VERSION = 1
LINE_MAX_BYTES = 1_000_000


class Header(msgspec.Struct, tag_field="type", tag="header"):
    format: str
    version: int
    agent_id: str


class Node(msgspec.Struct, tag_field="type", tag="node"):
    path: str
    description: str = ""


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
_decoder = msgspec.json.Decoder(Union[Header, Node, ExportedFact])


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
        except OSError as exc:
            verb = "write" if mode == "w" else "open"
            raise ValidationError(f"cannot {verb} {target}: {exc.strerror or exc}") from None
    else:
        yield target


def export(mem: "OwnerControl", target: Union[str, Path, IO[str]], fmt: str) -> int:
    """Write the memory to `target` as jsonl or markdown; returns the facts written."""
    store = mem.store
    store.flush_fulltext()
    written = 0
    with _opened(target, "w") as out:
        if fmt == "markdown":
            return _markdown(mem, out)
        versions = versions_by_fact(store)
        buffer: list[bytes] = [_encoder.encode(Header(FORMAT, FORMAT_VERSION,
                                                      mem.config.agent_id))]
        buffer += [_encoder.encode(Node(n.path, n.description)) for n in store.tree_nodes()]
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


def _markdown(mem: "OwnerControl", out: IO[str]) -> int:
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
    return count


def _check(fact: ExportedFact, line: int) -> ExportedFact:
    """The validation every stored value passes (validate.py), with the line in the message."""
    try:
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
    except ValidationError as exc:
        raise ValidationError(f"line {line}: {exc}") from None
    return fact


def read_export(source: Union[str, Path, IO[str]]) -> tuple[list[Node], list[ExportedFact]]:
    """Every line decoded and validated (nothing written); ValidationError names the line."""
    nodes: list[Node] = []
    facts: list[ExportedFact] = []
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
            if isinstance(item, Header):
                if item.format != FORMAT or item.version > FORMAT_VERSION:
                    raise ValidationError(f"line {number}: not an export this release reads "
                                          f"({item.format} v{item.version})")
                seen_header = True
            elif isinstance(item, Node):
                try:
                    nodes.append(Node(tree_rules.validate_path(item.path),
                                      validate.text("description", item.description, 100)))
                except ValidationError as exc:
                    raise ValidationError(f"line {number}: {exc}") from None
            else:
                facts.append(_check(item, number))
    if not seen_header:
        raise ValidationError("not an evoclaw-memory export (no header line)")
    return nodes, facts


def import_jsonl(mem: "OwnerControl", source: Union[str, Path, IO[str]]) -> dict[str, int]:
    """Load an export in one transaction (see OwnerControl.import_jsonl)."""
    if isinstance(source, str) and "\n" in source:
        source = io.StringIO(source)
    nodes, facts = read_export(source)
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
        store.enqueue_state(now)
    return {"facts": inserted, "skipped": len(rows) - inserted, "forgotten": len(forgotten),
            "versions": sum(1 for v in versions if v[0] in landed_set)}
