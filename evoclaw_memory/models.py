"""msgspec Structs shared by every part of the package. Plain data, no I/O.

No `from __future__ import annotations` here (nor in config.py): msgspec reads a Struct's
annotations to decode it, and a postponed one is a string it must compile, ~20 µs each
(the hot state's 34: ~0.6 ms of every `context`). Written `X | None`, the annotations cost
next to nothing when the class is made."""

from typing import Any, Literal

import msgspec


class Metadata(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """Links, shell commands and file paths a fact mentions (kept verbatim)."""

    urls: list[str] = []
    commands: list[str] = []
    paths: list[str] = []

    def is_empty(self) -> bool:
        return not (self.urls or self.commands or self.paths)


class FactDraft(msgspec.Struct, omit_defaults=True):
    """A fact proposed by distillation or a daily note, before it is stored."""

    text: str
    category: str
    importance: float = 0.5
    metadata: Metadata = msgspec.field(default_factory=Metadata)
    source: str = "manual"
    created_at: float | None = None     # when it was said (a message's time); None: now
    speaker: str | None = None          # who said it (a conversation turn's name): the
                                           # entity graph links the fact to them as its speaker


StorageTier = Literal["warm", "cold"]


class Fact(msgspec.Struct, omit_defaults=True):
    """A stored fact. `tier` is where it lives: the device's warm set or the cold archive."""

    id: str
    text: str
    category: str
    importance: float
    created_at: float
    last_access: float
    access_count: int = 0
    metadata: Metadata = msgspec.field(default_factory=Metadata)
    source: str = "manual"
    tier: StorageTier = "warm"
    superseded_by: str | None = None
    pinned: bool = False        # in the vault: never decays, never leaves the device
    private: bool = False       # the owner's only: never in a shared session's context
    changed_at: float = 0.0     # last change of content or flags (0: never); the sync's LWW clock
    # The two parts' own clocks (0: never): content (text, category, importance, metadata,
    # supersession) and flags (pinned, private) merge apart, each by its later change.
    content_changed_at: float = 0.0
    flags_changed_at: float = 0.0
    speaker: str | None = None   # who said it (FactDraft.speaker), kept so a restored or
                                    # pulling device links the fact to its speaker again
    # The supersession's own clock (0: never changed): it merges apart from the content, so
    # an unsupersede after a supersession undoes it everywhere, a concurrent edit never does.
    superseded_changed_at: float = 0.0


class Identity(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    agent_name: str | None = None
    owner_name: str | None = None
    owner_preferred_name: str | None = None
    relationship_start: str | None = None
    trust_level: float | None = None


class Lesson(msgspec.Struct, omit_defaults=True):
    id: str
    text: str
    category: str = "general"
    importance: float = 0.5
    timestamp: float = 0.0
    private: bool = False     # the owner's only (tiers.privacy)


class Event(msgspec.Struct, omit_defaults=True):
    id: str
    text: str
    timestamp: float = 0.0
    private: bool = False     # the owner's only (tiers.privacy)


class Task(msgspec.Struct, omit_defaults=True):
    id: str
    text: str
    status: Literal["pending", "done"] = "pending"
    timestamp: float = 0.0
    private: bool = False     # the owner's only (tiers.privacy)


class Project(msgspec.Struct, omit_defaults=True):
    id: str
    name: str
    status: str = "active"
    description: str = ""
    timestamp: float = 0.0
    private: bool = False     # the owner's only (tiers.privacy)


class ActiveContext(msgspec.Struct, omit_defaults=True):
    projects: list[Project] = []
    events: list[Event] = []
    tasks: list[Task] = []


class HotState(msgspec.Struct, omit_defaults=True):
    """Hot memory: always in context, at most HOT_MAX_BYTES serialized (without `clock`).

    `clock` maps a field ("identity.owner_name", "owner_profile.timezone") or a removed list
    entry ("removed:<id>") to the time of its last change; the sync merge uses it to keep the
    newest change of each field. It is bookkeeping, not memory, so it is not counted in the size.
    """

    identity: Identity = msgspec.field(default_factory=Identity)
    owner_profile: dict[str, Any] = {}
    active_context: ActiveContext = msgspec.field(default_factory=ActiveContext)
    critical_lessons: list[Lesson] = []
    clock: dict[str, float] = {}

    def copied(self) -> "HotState":
        """A deep copy to change freely. Through its JSON, as it is stored: ~30× faster than
        copy.deepcopy, which rebuilds every entry through __reduce__ (~1 ms for a full hot
        memory, paid on every hot update and every shared session)."""
        return _hot_decoder.decode(_hot_encoder.encode(self))


_hot_encoder = msgspec.json.Encoder()
_hot_decoder = msgspec.json.Decoder(HotState)


class TreeNode(msgspec.Struct, omit_defaults=True):
    path: str
    description: str = ""
    warm_count: int = 0
    cold_count: int = 0
    last_access: float = 0.0
    created_at: float = 0.0


class Distilled(msgspec.Struct):
    """Stage 2 of distillation: a conversation as one structured record (~80-100 bytes)."""

    fact: str
    emotion: str | None = None
    people: list[str] = []
    topics: list[str] = []
    actions: list[str] = []
    outcome: str | None = None


Method = Literal["llm-tree", "keyword-tree", "fts-warm", "fts-cold", "cold", "url"]


class RetrievalResult(msgspec.Struct):
    """One retrieved fact with how it was found and how relevant it is.

    `relevance` (0..1) follows the ranking: results come best first and each one's relevance
    is at most that of every result above it, so sorting or cutting at a threshold keeps
    the retriever's order (a cut keeps a prefix of the list). It is the smallest `coverage`
    of this result and those ranked above it; a fact stated as the owner attribute the query
    asks about ranks first at 1.0.
    `coverage` (0..1): the share of the query's (IDF-weighted) words this fact holds by
    itself (a fact under a path an LLM navigator chose holds at least half that path's
    relevance), what `relevance` meant before; it does not follow the ranking (decay, the
    tree, feedback and the entity graph also rank). None for the owner-attribute fact.
    `score`: the ranking's own figure (unbounded, higher first)."""

    fact: Fact
    method: str
    path: str | None
    relevance: float
    score: float
    coverage: float | None = None


class PathChoice(msgspec.Struct):
    """A tree path chosen by a navigator, with relevance 0..1 and why."""

    path: str
    relevance: float
    reason: str = ""


class EntityRelation(msgspec.Struct, omit_defaults=True):
    """`relation` from this entity to `other` ("wife" to "owner": she is the owner's wife)."""

    relation: str
    other: str


class EntityRecord(msgspec.Struct, omit_defaults=True):
    """An entity as the critical state carries it to other devices and restores."""

    name: str
    kind: str = "other"
    aliases: list[str] = []
    attributes: dict[str, str] = {}
    relations: list[EntityRelation] = []
    mentions: int = 0            # read from older devices; not sent (each device counts its own links)
    first_mentioned: float = 0.0
    last_mentioned: float = 0.0
    manual: bool = False


class Entity(msgspec.Struct, omit_defaults=True):
    """One entity with what the memory knows of it (`mem.entity(name)`)."""

    name: str
    kind: str
    aliases: list[str] = []
    attributes: dict[str, str] = {}
    relations: list[EntityRelation] = []
    mentions: int = 0
    first_mentioned: float | None = None
    last_mentioned: float | None = None
    facts: list[str] = []          # ids of the linked facts, newest first
