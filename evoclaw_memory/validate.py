"""The one validation layer at the boundary (SPEC §6 "Nothing lost").

Every value that enters the store - through the API, the CLI, the MCP server, an LLM answer,
a legacy import or a row pulled from the cloud - passes these small pure functions first. A
value the store could write but not read back (NaN, a time past SQLite's 64-bit range, a
lone surrogate) would otherwise poison every later sync, so it is refused here, before
anything is written, with one clear ValidationError.
"""

from __future__ import annotations

# `json` is imported in the functions that use it: a CLI run of store/retrieve/context/hot
# starts without it (start-up time, one process per agent turn).
import functools
import math
import re
from typing import Any, Optional

from evoclaw_memory.errors import NestingError, ValidationError
from evoclaw_memory.limits import (ENTITY_ATTRIBUTES_MAX, ENTITY_KINDS, ENTITY_NAME_MAX,
                                   TREE_MAX_DEPTH)
from evoclaw_memory.models import Metadata

# Epoch seconds before 3000-01-01: far beyond any real fact, far inside SQLite's INTEGER.
EPOCH_MAX = 32_503_680_000
JSON_MAX_DEPTH = 20
INT_MAX = 2 ** 63 - 1
_SEGMENT = re.compile(r"[^\W_][\w-]{0,31}")
# Scripts whose letters pass for each other ("hоme" with a Cyrillic o): one per segment.
_CONFUSABLE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")
# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _show(value: Any, width: int = 40) -> str:
    """A short, printable rendering of a bad value for an error message."""
    shown = repr(value)
    return shown if len(shown) <= width else shown[:width - 1] + "…"


def finite(name: str, value: Any) -> float:
    """`value` as a float if it is a real, finite number (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{name} must be a number, not {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        raise ValidationError(f"{name} is too large") from None
    if not math.isfinite(number):
        raise ValidationError(f"{name} must be a finite number, not {_show(value)}")
    return number


def timestamp(name: str, value: Any) -> float:
    """Epoch seconds from 0 to before the year 3000."""
    seconds = finite(name, value)
    if not 0 <= seconds < EPOCH_MAX:
        raise ValidationError(f"{name} {_show(value)} is not a time in epoch seconds from 0 to "
                              f"{EPOCH_MAX} (year 3000)")
    return seconds


def importance(value: Any, name: str = "importance") -> float:
    """A number from 0 to 1."""
    number = finite(name, value)
    if not 0.0 <= number <= 1.0:
        raise ValidationError(f"{name} must be a number from 0 to 1, not {_show(value)}")
    return number


def flag(name: str, value: Any) -> bool:
    """A yes/no argument: a real bool (1, "yes" or "false" are refused, not guessed)."""
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be true or false, not {_show(value)}")
    return value


def optional_flag(name: str, value: Any) -> Optional[bool]:
    return None if value is None else flag(name, value)


AUDIENCES = ("owner", "shared")


def audience(value: Any) -> str:
    """Who will see a context: the owner alone ('owner') or a shared session ('shared')."""
    if value not in AUDIENCES:
        raise ValidationError(f"audience must be owner or shared, not {_show(value)}")
    return str(value)


def integer(name: str, value: Any, low: int, high: int) -> int:
    """A whole number within [low, high] (an integral float such as 5.0 is accepted)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{name} must be a whole number from {low} to {high}, not "
                              f"{_show(value)}")
    if not low <= value <= high:
        raise ValidationError(f"{name} must be between {low} and {high}, not {value}")
    return value


def text(name: str, value: Any, max_len: Optional[int] = None, *,
         allow_nul: bool = False) -> str:
    """A string that is valid UTF-8 (no lone surrogates, no undecodable bytes) without NUL
    (`allow_nul` for text that is only searched for, never stored: a query)."""
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be text, not {type(value).__name__}")
    if not allow_nul and "\x00" in value:
        raise ValidationError(f"{name} contains a NUL character")
    try:
        if not value.isascii():       # (ASCII holds no surrogate: most text skips the copy)
            value.encode("utf-8")
    except UnicodeEncodeError:
        # argv with invalid UTF-8 arrives as surrogate escapes; JSON can carry lone "\ud800".
        raise ValidationError(f"{name} is not valid UTF-8 (a lone surrogate or an undecodable "
                              "byte)") from None
    if max_len is not None and len(value) > max_len:
        raise ValidationError(f"{name} is {len(value)} characters; the limit is {max_len}")
    return value


def optional_text(name: str, value: Any, max_len: Optional[int] = None) -> Optional[str]:
    return None if value is None else text(name, value, max_len)


def json_value(name: str, value: Any, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """`value` if it is plain JSON data the store can round-trip: finite numbers, 64-bit
    integers, valid text, string keys, at most `max_depth` levels of nesting."""
    stack: list[tuple[Any, int, str]] = [(value, 1, name)]
    while stack:                       # iterative: a deep value must not exhaust the stack
        item, depth, where = stack.pop()
        if depth > max_depth:
            raise NestingError(f"{name} is nested deeper than {max_depth} levels")
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not -INT_MAX - 1 <= item <= INT_MAX:
                raise ValidationError(f"{where} is an integer outside the 64-bit range")
        elif isinstance(item, float):
            finite(where, item)
        elif isinstance(item, str):
            text(where, item)
        elif isinstance(item, (list, tuple)):
            stack += [(v, depth + 1, f"{where}[{i}]") for i, v in enumerate(item)]
        elif isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise ValidationError(f"{where} has a non-text key {_show(key)}")
                text(f"{where} key", key)
                stack.append((sub, depth + 1, f"{where}.{key[:40]}"))
        else:
            raise ValidationError(f"{where} is a {type(item).__name__}, which is not JSON")
    return value


def _no_constant(token: str) -> Any:
    raise ValidationError(f"{token} is not a JSON number")


def loads_json(name: str, raw: str, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """Parse JSON text strictly: no NaN/Infinity, at most `max_depth` levels, valid text."""
    import json
    text(name, raw)
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except ValidationError as exc:
        raise ValidationError(f"{name}: {exc}") from None
    except RecursionError:
        raise NestingError(f"{name} is nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{name}: malformed JSON ({exc.msg} at position {exc.pos})") \
            from None
    return json_value(name, value, max_depth)


def metadata(value: Any) -> Optional[Metadata]:
    """Metadata from a Metadata, a {urls, commands, paths} dict of text lists, or None."""
    if value is None:
        return None
    if isinstance(value, Metadata):
        fields = {"urls": value.urls, "commands": value.commands, "paths": value.paths}
    elif isinstance(value, dict):
        unknown = sorted(str(k) for k in value if k not in ("urls", "commands", "paths"))
        if unknown:
            raise ValidationError(f"metadata: unknown key(s) {', '.join(unknown)[:80]}; "
                                  "expected urls, commands, paths")
        fields = {k: value.get(k) or [] for k in ("urls", "commands", "paths")}
    else:
        raise ValidationError("metadata must be an object with urls, commands and paths lists, "
                              f"not {type(value).__name__}")
    for key, items in fields.items():
        if not isinstance(items, (list, tuple)):
            raise ValidationError(f"metadata {key} must be a list of text")
        for item in items:
            text(f"metadata {key}", item, max_len=2_000)
    return Metadata(urls=list(fields["urls"]), commands=list(fields["commands"]),
                    paths=list(fields["paths"]))


def _scripts(segment: str) -> set[str]:
    import unicodedata      # loaded where used: a `retrieve` or `hot` run never needs it
    return {script for ch in segment if ch.isalpha()
            for script in (unicodedata.name(ch, "").split(" ")[0],)
            if script in _CONFUSABLE_SCRIPTS}


def category(value: Any) -> str:
    """A normalized category path ('a/b/c', lower case, NFKC) or ValidationError saying why.

    NFKC folds fullwidth and other compatibility forms ('ｈｏｍｅ' -> 'home'); a segment that
    mixes Latin, Cyrillic or Greek letters ('hоme' with a Cyrillic o) is refused as a
    look-alike. Letters of any one script (CJK, Cyrillic...) are fine."""
    if not isinstance(value, str):
        raise ValidationError("a category path must be text")
    return _category(value)


@functools.lru_cache(maxsize=4096)
def _category(value: str) -> str:
    # Cached: a restore decodes 100k rows filed under a few dozen paths.
    text("category path", value)
    import unicodedata
    clean = unicodedata.normalize("NFKC", value).strip().lower()
    segments = clean.split("/")
    # fullmatch, not match with "$": "$" also matches before a trailing newline.
    if not clean or any(not _SEGMENT.fullmatch(s) for s in segments):
        raise ValidationError(
            f"invalid category path {value[:80]!r}: use 1-{TREE_MAX_DEPTH} segments of letters, "
            "digits, '-' or '_' separated by '/', e.g. 'projects/evoclaw'")
    if len(segments) > TREE_MAX_DEPTH:
        raise ValidationError(f"category path {value[:80]!r} is {len(segments)} levels deep; "
                              f"the tree allows {TREE_MAX_DEPTH}")
    for segment in segments:
        scripts = sorted(_scripts(segment))
        if len(scripts) > 1:
            raise ValidationError(f"category segment {segment!r} mixes "
                                  f"{' and '.join(s.title() for s in scripts)} letters "
                                  "(look-alikes); use one script per segment")
    return clean


def conversation(messages: Any) -> Any:
    """A conversation: text, or a list of {role, content} messages with text content."""
    if isinstance(messages, str):
        text("conversation", messages)
        return messages
    if not isinstance(messages, list):
        raise ValidationError("a conversation must be text or a list of {\"role\": ..., "
                              "\"content\": \"...\"} messages, not "
                              f"{type(messages).__name__}")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise ValidationError(f"message {index} has no text `content`")
        text(f"message {index} content", message["content"])
        for field in ("role", "name"):
            if message.get(field) is not None:
                text(f"message {index} {field}", message[field], max_len=64)
        message_time(message, index)
    return messages


MESSAGE_TIME_FIELDS = ("timestamp", "time", "created_at")


def message_time(message: dict, index: int = 0) -> Optional[float]:
    """A message's own time (its `timestamp`, `time` or `created_at`), if it has one."""
    for field in MESSAGE_TIME_FIELDS:
        if message.get(field) is not None:
            return when(f"message {index} {field}", message[field])
    return None


def when(name: str, value: Any) -> float:
    """Epoch seconds from a time as people write it: a number, a datetime or date, or ISO 8601
    text (`2026-12-12`, `2026-12-12 15:00`, `...T15:00:00Z`, `...+01:00`); a time without a
    zone is the device's local time, as a person writing it means."""
    import datetime as dt
    if isinstance(value, str):
        raw = text(name, value, max_len=64).strip()
        if re.fullmatch(r"\d+(?:\.\d+)?", raw):
            return timestamp(name, float(raw))
        try:
            value = dt.datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ValidationError(f"{name} {_show(raw)} is not a date or time: use ISO 8601, "
                                  "e.g. 2026-12-12, 2026-12-12 15:00 or 2026-12-12T15:00:00Z, "
                                  "or epoch seconds") from None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if isinstance(value, dt.datetime):
        try:
            value = value.timestamp()
        except (OverflowError, OSError, ValueError):
            raise ValidationError(f"{name} {_show(value)} is out of range") from None
    return timestamp(name, value)


def valid(check: Any, *args: Any) -> bool:
    """True when `check(*args)` accepts its value (for filters that skip, not refuse)."""
    try:
        check(*args)
    except ValidationError:
        return False
    return True


def printable(value: str) -> str:
    """`value` with control characters (ESC, OSC, C1...) but newline and tab shown as
    escapes, so stored text cannot drive the terminal it is printed on."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def salvage(raw: Any, typ: Any) -> tuple[Any, int]:
    """Convert decoded JSON to `typ`, dropping only the parts that do not fit; returns
    (value, parts dropped).

    A hot state written by an older release (or another tool) may hold one bad entry - the
    NaN lesson of a release without this layer was stored as `null` - and a strict decode
    fails for the whole state, which blocked every later command. Here a bad list item is
    dropped, a bad field falls back to its default, and the rest is kept."""
    import msgspec
    try:
        return msgspec.convert(raw, typ), 0
    except msgspec.ValidationError:
        pass
    if not (isinstance(typ, type) and issubclass(typ, msgspec.Struct) and isinstance(raw, dict)):
        raise ValidationError(f"{getattr(typ, '__name__', typ)}: unreadable value {_show(raw)}")
    kept: dict[str, Any] = {}
    dropped = 0
    for field in msgspec.structs.fields(typ):
        if field.encode_name not in raw:
            continue
        value = raw[field.encode_name]
        item_type = _list_item_type(field.type)
        if item_type is not None and isinstance(value, list):
            items = []
            for item in value:
                try:
                    fixed, lost = salvage(item, item_type)
                except ValidationError:
                    dropped += 1
                    continue
                items.append(fixed)
                dropped += lost
            kept[field.encode_name] = items
            continue
        try:
            kept[field.encode_name], lost = salvage(value, field.type)
            dropped += lost
        except ValidationError:
            dropped += 1                 # the field's default stands in
    try:
        return msgspec.convert(kept, typ), dropped
    except msgspec.ValidationError as exc:
        raise ValidationError(f"{typ.__name__}: unreadable ({exc})") from exc


def _list_item_type(annotation: Any) -> Any:
    """X for list[X], else None."""
    import typing
    if typing.get_origin(annotation) is list:
        args = typing.get_args(annotation)
        return args[0] if args else None
    return None


def decode_salvaging(data: str, typ: Any) -> tuple[Any, int]:
    """JSON text -> `typ` with `salvage` (NaN/Infinity literals read as null, then dropped)."""
    import json
    try:
        raw = json.loads(data, parse_constant=lambda _token: None)
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"{getattr(typ, '__name__', typ)}: not JSON ({exc})") from exc
    return salvage(raw, typ)


# A network cloud (Turso, sqld) is one of these schemes; a file target must say it is a file.
CLOUD_SCHEMES = ("libsql://", "https://", "http://", "wss://", "ws://")
CLOUD_FORMS = ("libsql://HOST, https://HOST, http://HOST:PORT (sqld), ws(s)://HOST, "
               "file:PATH, or a path starting with /, ~/, ./ or ../")


def cloud_target(value: Any) -> tuple[str, str]:
    """("network", url) or ("file", path) for a cloud URL, else one ValidationError naming
    the accepted forms. A bare name such as `my-db.turso.io` is refused: taking it for a
    file in the current folder would sync in plain text to the wrong place, silently."""
    url = text("cloud URL", value, max_len=2048).strip()
    lowered = url.lower()
    shown = _show(url, 60)
    if lowered.startswith(CLOUD_SCHEMES):
        what = _network_url_problem(url)
        if what is None:
            return "network", url
        raise ValidationError(f"cloud URL {shown} {what}: use {CLOUD_FORMS}")
    if lowered.startswith("file:"):
        path = url[len("file://"):] if lowered.startswith("file://") else url[len("file:"):]
        if path:
            return "file", path
    elif url.startswith(("/", "~/", "./", "../")) or url in (".", "~"):
        return "file", url
    scheme = url.split("://", 1)[0] + "://" if "://" in url else None
    what = f"has an unsupported scheme ({scheme})" if scheme else "is neither a URL nor a path"
    raise ValidationError(f"cloud URL {shown} {what}: use {CLOUD_FORMS}")


def _network_url_problem(url: str) -> Optional[str]:
    """Why a libsql/http(s)/ws(s) URL cannot be reached (a typo such as `http://exa mple`),
    or None: caught here as a configuration error, not after minutes of network retries."""
    from urllib.parse import urlsplit
    if any(char.isspace() for char in url):
        return "contains a space"
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018  (raises ValueError for a port like ":abc")
    except ValueError:
        return "has an invalid port"
    return None if parts.hostname else "has no host name"


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def duration(name: str, value: Any) -> float:
    """Seconds from `3600`, `90m`, `12h`, `30d` or `2w` (a token lifetime), above 0."""
    found = _DURATION.fullmatch(text(name, value, max_len=32).strip().lower())
    if not found:
        raise ValidationError(f"{name} {_show(value)} is not a duration: use seconds or a "
                              "number with s, m, h, d or w (e.g. 30d)")
    seconds = float(found.group(1)) * _UNIT_SECONDS[found.group(2)]
    if not 0 < seconds < EPOCH_MAX:
        raise ValidationError(f"{name} must be above 0 and below the year 3000")
    return seconds


def device_name(value: Any) -> str:
    """A device's name for people (`sam-phone`, `Kitchen Pi`): 1-64 printable characters."""
    name = text("device name", value, max_len=64).strip()
    if not name or _CONTROL.search(name) or "\n" in name or "\t" in name:
        raise ValidationError("a device name needs 1-64 printable characters on one line")
    return name


def plain_error(exc: Exception) -> str:
    """A msgspec validation message in words (`Expected `float`, got `str` - at
    `$.timestamp`` -> `timestamp: expected float, got str`): no decoder internals."""
    message = str(exc).replace("`", "")
    found = re.fullmatch(r"(.*?) - at \$\.?(.*)", message)
    if not found:
        return message[:1].lower() + message[1:]
    what, where = found.groups()
    where = re.sub(r"\[(\d+)\]", r" \1", where).strip(". ")
    what = what[:1].lower() + what[1:]
    return f"{where}: {what}" if where else what


# -- the entity graph (issue 18) -------------------------------------------------------------

_KIND_ALIASES = {"person": "people", "project": "projects", "tool": "tools",
                 "concept": "concepts", "place": "places"}


def entity_name(value: Any, name: str = "entity name") -> str:
    """An entity's name: one line of printable text, spaces collapsed, 1..80 characters."""
    value = " ".join(text(name, value).split())
    if not value:
        raise ValidationError(f"{name} is empty")
    if len(value) > ENTITY_NAME_MAX:
        raise ValidationError(f"{name} is {len(value)} characters; the limit is {ENTITY_NAME_MAX}")
    import unicodedata
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        raise ValidationError(f"{name} contains a control character")
    return value


def speaker(value: Any) -> Optional[str]:
    """Who said a fact (a conversation turn's name), or None: a short single-line name, as
    an entity's name is (it becomes one); blank reads as None."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and any(ch in value for ch in "\n\r\u2028\u2029\x85"):
        raise ValidationError("speaker must be one line")     # not collapsed: refused
    return entity_name(value, "speaker")


def entity_kind(value: Any) -> str:
    """One of ENTITY_KINDS (the singular "person", "place"... is accepted for its plural)."""
    kind = text("entity kind", value, max_len=32).strip().lower()
    kind = _KIND_ALIASES.get(kind, kind)
    if kind not in ENTITY_KINDS:
        raise ValidationError(f"entity kind {_show(value)} is not one of {', '.join(ENTITY_KINDS)}")
    return kind


def relation(value: Any) -> str:
    """A relation's label ("wife", "works on"): short, one line, lower case."""
    return entity_name(value, "relation").lower()[:40]


def entity_attributes(value: Any) -> dict[str, str]:
    """Up to 20 short attributes: names to text (numbers are kept as their text)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError("entity attributes must be a mapping of names to values")
    if len(value) > ENTITY_ATTRIBUTES_MAX:
        raise ValidationError(f"an entity holds at most {ENTITY_ATTRIBUTES_MAX} attributes")
    out: dict[str, str] = {}
    for key, item in value.items():
        key = entity_name(key, "attribute name")[:40]
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ValidationError(f"attribute {key!r} must be text or a number")
        out[key] = text(f"attribute {key!r}", str(item), max_len=200)
    return out
