"""Codecs: cloud rows and the critical state to and from what the cloud stores.

`PlainCodec` writes rows as the original skill did (clear text); `SealedCodec` seals them
with the agent's keyring. Both decode a row through the same checks (`fact_from_row`), and
`cloud_seconds` reads a row's time exactly as written.
"""

from __future__ import annotations

import json
import math
from typing import Optional

import msgspec

from evoclaw_memory import validate
from evoclaw_memory.errors import CryptoError, RemoteError, ValidationError
from evoclaw_memory.models import EntityRecord, Fact, HotState, Metadata, TreeNode

class CriticalState(msgspec.Struct, omit_defaults=True):
    """Hot memory + tree: what a device needs to wake up as itself (critical_state.data)."""

    hot: HotState
    tree: list[TreeNode] = []
    updated_at: float = 0.0
    device_id: str = ""
    entities: list[EntityRecord] = []     # the entity graph (issue 18); links are rebuilt
    # Names the owner removed from the graph, with when (store.entities.KV_REMOVALS).
    entity_removals: dict[str, float] = {}


_state_decoder = msgspec.json.Decoder(CriticalState)
_meta_decoder = msgspec.json.Decoder(Metadata)
_encoder = msgspec.json.Encoder()


def encode_state(state: CriticalState) -> str:
    return _encoder.encode(state).decode()


def decode_state(data: str) -> CriticalState:
    """critical_state.data: ours, or the original skill's bare hot state (read as hot only)."""
    try:
        return _state_decoder.decode(data)
    except msgspec.ValidationError:
        pass
    except msgspec.DecodeError as exc:
        raise RemoteError(f"critical_state.data is not JSON: {exc}") from exc
    # Not ours as it stands: the original skill's bare hot state, or ours with one bad entry
    # (an older release stored NaN as null). Keep every entry that reads rather than
    # adopting an empty state, which the next merge would push over the good one.
    try:
        raw = json.loads(data, parse_constant=lambda _token: None)
    except (ValueError, RecursionError) as exc:
        raise RemoteError(f"critical_state.data is not JSON: {exc}") from exc
    target = CriticalState if isinstance(raw, dict) and "hot" in raw else HotState
    try:
        state, _dropped = validate.salvage(raw, target)
    except ValidationError:
        return CriticalState(hot=HotState())
    return state if isinstance(state, CriticalState) else CriticalState(hot=state)


# Epoch seconds of 3000-01-01, the bound the store validates every timestamp against.
SECONDS_BOUND = 32_503_680_000


def cloud_seconds(created_at) -> float:
    """A cloud row's created_at in epoch seconds, exactly as written.

    Rows are written in seconds, by this library and by the original skill alike
    (`str(int(time.time()))`). Every valid time is below SECONDS_BOUND, so a value at or
    past it cannot be seconds: only then is it read as milliseconds (a hand-written or
    foreign row); no time in seconds is ever reinterpreted."""
    value = float(created_at or 0)
    return value / 1000.0 if value >= SECONDS_BOUND else value


def fact_from_row(row: tuple) -> Fact:
    """A cloud row as a Fact, every value checked as at every other entry point (a row
    another device or an old release wrote with a value this device could not store again
    raises ValidationError, and the caller skips it with its reason)."""
    fact = _usual_row_fact(row)
    return fact if fact is not None else _checked_row_fact(row)


def _checked_row_fact(row: tuple) -> Fact:
    (fid, text, category, importance, created_at, access_count, metadata, source, last_access,
     superseded_by, *rest) = row
    flags = validate.integer("cloud fact flags", rest[0] or 0, 0, 3) if rest else 0
    # From cloud schema 8 on: the fact's last-writer-wins clock (a time, or 0: never changed).
    changed = validate.timestamp("cloud fact changed_at", rest[1]) if len(rest) > 1 and rest[1] else 0.0
    # From cloud schema 9 on: the content's and the flags' own clocks.
    content_changed, flags_changed = (
        validate.timestamp(f"cloud fact {name}", rest[i]) if len(rest) > i and rest[i] else 0.0
        for i, name in ((2, "content_changed_at"), (3, "flags_changed_at")))
    # From cloud schema 10 on: who said it (NULL on older rows and on an older release's).
    speaker = validate.speaker(rest[4]) if len(rest) > 4 else None
    # From cloud schema 11 on: the supersession's own clock.
    link_changed = validate.timestamp("cloud fact superseded_changed_at", rest[5]) \
        if len(rest) > 5 and rest[5] else 0.0
    created = cloud_seconds(created_at)
    # The same checks as every other entry point: a row another device (or an old release)
    # wrote with a value this device could not store again is skipped with its reason.
    return Fact(id=validate.text("cloud fact id", fid, max_len=64),
                text=validate.text("cloud fact text", text),
                category=validate.category(category),
                importance=0.5 if importance is None else validate.importance(importance),
                created_at=validate.timestamp("cloud fact created_at", created),
                last_access=validate.timestamp("cloud fact last_access", last_access)
                if last_access else created,
                access_count=validate.integer("cloud fact access_count", access_count or 0,
                                              0, validate.INT_MAX),
                metadata=_row_metadata(metadata),
                source=validate.text("cloud fact source", source or "legacy", max_len=64),
                tier="cold", superseded_by=validate.optional_text("cloud fact superseded_by",
                                                                  superseded_by, max_len=64),
                pinned=bool(flags & 1), private=bool(flags & 2), changed_at=changed,
                content_changed_at=content_changed, flags_changed_at=flags_changed,
                speaker=speaker, superseded_changed_at=link_changed)


def _row_metadata(metadata) -> Metadata:
    try:
        # Most facts carry no links: skip the decoder for them (a mirror opens 100k rows).
        meta = Metadata() if not metadata or metadata == "{}" else _meta_decoder.decode(metadata)
    except msgspec.MsgspecError:
        return Metadata()
    # (the empty default holds nothing to check: most rows of a mirror)
    return meta if meta.is_empty() else validate.metadata(meta) or Metadata()


def _usual_row_fact(row: tuple) -> Optional[Fact]:
    """The row of the current cloud schema (16 columns) whose every value is of the usual
    kind, decoded with inline tests that each imply the validator's own and give the same
    value (the text and the category go through their validators); None for anything else,
    which _checked_row_fact then checks in full (and names what is wrong). A mirror opens
    100,000 rows: the twelve validator calls per row were ~40% of the time spent decoding
    them. tests/test_cloud_codec_rows.py checks both give the same Fact, or the fast one
    gives None, on rows built from every edge of every column."""
    if len(row) != 16:
        return None
    (fid, text, category, importance, created_at, access_count, metadata, source, last_access,
     superseded_by, flags, changed, content_changed, flags_changed, speaker, link_changed) = row
    source = source or "legacy"          # (the original skill wrote none)
    if speaker is not None or not (_plain_id(fid) and _plain_id(source)
                                   and (superseded_by is None or _plain_id(superseded_by))):
        return None
    if importance is None:
        importance = 0.5
    elif type(importance) is not float or not 0.0 <= importance <= 1.0:
        return None
    if created_at is None:
        created_at = 0
    if type(created_at) not in (int, float) or not 0 <= created_at < SECONDS_BOUND:
        return None                  # (milliseconds, a bad value: the full path)
    created = float(created_at)
    if not last_access:
        last_access = created
    elif type(last_access) not in (int, float) or not 0 <= last_access < validate.EPOCH_MAX:
        return None
    if access_count is None:
        access_count = 0
    elif type(access_count) is not int or not 0 <= access_count <= validate.INT_MAX:
        return None
    if flags is None:
        flags = 0
    elif type(flags) is not int or not 0 <= flags <= 3:
        return None
    clocks = []
    for clock in (changed, content_changed, flags_changed, link_changed):
        if not clock:
            clocks.append(0.0)
        elif type(clock) in (int, float) and 0 <= clock < validate.EPOCH_MAX:
            clocks.append(float(clock))
        else:
            return None
    try:
        # The validators themselves, one call each: the text's checks (NUL, valid UTF-8) have
        # no cheaper form, and the category's answer is cached (a store has a few dozen paths).
        text = validate.text("cloud fact text", text)
        category = validate.category(category)
    except ValidationError:
        return None
    # Positional, in models.Fact's field order: keywords cost ~2 µs a row more
    # (tests/test_cloud_codec_rows.py compares every field with the full path's Fact).
    return Fact(fid, text, category, importance, created,
                float(last_access), access_count, _row_metadata(metadata), source, "cold",
                superseded_by, bool(flags & 1), bool(flags & 2), clocks[0], clocks[1], clocks[2],
                None, clocks[3])


def _plain_id(value) -> bool:
    """An id, source or link the full check passes as it is: ASCII text of 1-64 characters
    without NUL (ASCII holds no lone surrogate)."""
    return type(value) is str and 0 < len(value) <= 64 and value.isascii() and "\x00" not in value


def fact_flags(fact: Fact) -> int:
    """The cloud's flags column: 1 pinned, 2 private."""
    return (1 if fact.pinned else 0) | (2 if fact.private else 0)


def _whole_seconds(value: float) -> int:
    """created_at as the cloud's INTEGER; an infinite one (an old or damaged row) is refused
    like any value SQLite cannot hold."""
    if not math.isfinite(value):
        raise ValidationError(f"created_at {value} does not fit SQLite's 64-bit range")
    return int(value)


class PlainCodec:
    """Rows as the original skill wrote them: text and categories in clear."""

    encrypted = False

    def fact_args(self, agent_id: str, device_id: str, fact: Fact) -> tuple:
        return (fact.id, agent_id, fact.text, fact.category, fact.importance,
                _whole_seconds(fact.created_at), fact.access_count,
                _encoder.encode(fact.metadata).decode(), fact.source, fact.last_access,
                fact.superseded_by, device_id, fact_flags(fact), fact.changed_at,
                fact.content_changed_at, fact.flags_changed_at, fact.speaker,
                fact.superseded_changed_at)

    def fact(self, row: tuple) -> Fact:
        return fact_from_row(row)

    def state_data(self, state: CriticalState) -> str:
        return encode_state(state)

    def state(self, data: str) -> CriticalState:
        return decode_state(data)

    def category(self, path: str) -> str:
        return path


class SealedCodec(PlainCodec):
    """Rows sealed with the agent's keyring: the cloud sees ciphertext and keyed hashes.

    A sealed category is stored as "<keyed hash> <sealed path>": the hash lets the database
    filter by category, the sealed path gives it back to a device. Clear on the wire and in
    the cloud: ids, agent id, importance, times, access counts, supersession links, device
    ids, and the sizes of everything; each sealed value also authenticates importance,
    created_at, superseded_by and the category hash (enc:v2, SECURITY.md)."""

    encrypted = True

    def __init__(self, keyring):
        from evoclaw_memory.cloud.crypto import clear_context, is_sealed    # cryptography loads only when used
        self.ring = keyring
        # The device keyring text this codec was made from (keys.attach_local), if any.
        self.source: Optional[str] = None
        self._clear = clear_context
        self._is_sealed = is_sealed

    def fact_args(self, agent_id: str, device_id: str, fact: Fact) -> tuple:
        # Every value is bound to the clear columns the cloud filters by (enc:v2): a push
        # re-sends the whole row, so a supersession re-seals it with its new link.
        importance = round(float(fact.importance), 6)
        created_at = _whole_seconds(fact.created_at)
        token = self.ring.category_token(fact.category)
        flags = fact_flags(fact)
        clear = self._clear(importance, created_at, fact.superseded_by, token, flags)
        meta = "{}" if fact.metadata.is_empty() else self.ring.seal(
            _encoder.encode(fact.metadata).decode(), fact.id, "metadata", clear)
        category = token + " " + self.ring.seal(fact.category, fact.id, "category", clear)
        # The speaker is a person's name: sealed like the text, never in clear.
        speaker = None if not fact.speaker else self.ring.seal(fact.speaker, fact.id, "speaker", clear)
        return (fact.id, agent_id, self.ring.seal(fact.text, fact.id, "text", clear), category,
                importance, created_at, fact.access_count, meta, fact.source,
                fact.last_access, fact.superseded_by, device_id, flags, fact.changed_at,
                fact.content_changed_at, fact.flags_changed_at, speaker,
                fact.superseded_changed_at)

    def fact(self, row: tuple) -> Fact:
        fid, text, category, importance, created_at, access_count, meta, *rest = row
        token, _, sealed_category = (category or "").partition(" ")
        # rest: source, last_access, superseded_by, (from cloud schema 7 on) flags and (8)
        # changed_at, and (9) content_changed_at and flags_changed_at, which are not
        # authenticated: they only order versions (SECURITY.md), and (10) the speaker, sealed
        clear = self._clear(importance, created_at, rest[2], token,
                            rest[3] if len(rest) > 3 else 0)
        if meta and meta != "{}":
            meta = self.ring.open(meta, fid, "metadata", clear)
        if len(rest) > 7 and rest[7]:          # (10) the sealed speaker
            rest = [*rest[:7], self.ring.open(rest[7], fid, "speaker", clear), *rest[8:]]
        return fact_from_row((fid, self.ring.open(text, fid, "text", clear),
                               self.ring.open(sealed_category, fid, "category", clear),
                               importance, created_at, access_count, meta, *rest))

    def fact_any(self, row: tuple, allow_plain: bool) -> Fact:
        """A row sealed under any key of the ring, or (allow_plain: the archive from before
        `key init`) a clear one; the re-seal reads rows this way."""
        if self._is_sealed(row[1]):
            return self.fact(row)
        if not allow_plain:
            raise CryptoError(f"row {row[0]}: text is in clear in an encrypted archive "
                              "(written around the keys)")
        return fact_from_row(row)

    def state_data(self, state: CriticalState) -> str:
        return self.ring.seal(encode_state(state), "critical_state", "data")

    def state(self, data: str) -> CriticalState:
        return decode_state(self.ring.open(data, "critical_state", "data"))

    def category(self, path: str) -> str:
        return self.ring.category_token(path)
