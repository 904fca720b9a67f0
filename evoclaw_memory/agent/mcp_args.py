"""What the MCP tools accept, said to a model in one line.

The SDK checks a call's arguments against the tool's JSON schema with pydantic; what it
reports is a multi-line dump ending in a documentation URL, which a model reads poorly,
and its log line calls a missing argument "rejected". `argument_error` says instead, in
one line, which argument is missing or wrong, what it accepts (read from the same schema
the model was given, so the two cannot drift) and what came; `argument_log` says the same
without the values (they are the caller's data and stay out of the log).

`hot_value` turns update_hot's `value`, as a model writes it, into what the hot tier takes:
an object as it is, an object written as JSON text, or plain text for the keys that have
one text field (lesson, event, task: {"text": ...}; project: {"name": ...}), by the very
function the CLI's `hot --update KEY VALUE` uses (tiers.hot_input).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping


SHOWN_MAX = 80          # characters of a wrong value quoted back to the model


def hot_value(key: str, value: Any) -> Any:
    """update_hot's value as the hot tier takes it: the CLI's rule (tiers.hot_input), with
    the error naming `value: KEY` (ValidationError, one line, showing the right form)."""
    from evoclaw_memory.tiers.hot_input import hot_value as read
    return read(key, value, label=f"value: {key}")


# -- argument errors ----------------------------------------------------------------------------

def argument_error(schema: dict, arguments: Any, errors: Iterable[Mapping[str, Any]]) -> str:
    """One line for the model: each wrong argument, what it accepts and what came."""
    props = schema.get("properties", {})
    given = arguments if isinstance(arguments, dict) else {}
    lines = []
    for arg in _arguments(errors):
        spec = props.get(arg, {})
        if arg not in given:
            lines.append(f"missing argument {arg!r} ({accepts(spec)})")
        else:
            lines.append(f"{arg}: must be {accepts(spec)}, got {shown(given[arg])}")
    return "; ".join(lines) or "the arguments must be an object"


def argument_log(tool: str, schema: dict, arguments: Any,
                 errors: Iterable[Mapping[str, Any]]) -> str:
    """The log's line for the same errors: what happened, without the caller's values."""
    props = schema.get("properties", {})
    given = arguments if isinstance(arguments, dict) else {}
    parts = [f"missing argument {arg!r}" if arg not in given
             else f"invalid argument {arg!r}: must be {accepts(props.get(arg, {}))}"
             for arg in _arguments(errors)]
    return f"{tool}: {'; '.join(parts) or 'arguments are not an object'}"


def _arguments(errors: Iterable[Mapping[str, Any]]) -> list[str]:
    """The top-level arguments the errors are about, in order, once each (a union's members
    and a list's items each give an error of their own)."""
    seen: list[str] = []
    for err in errors:
        loc = err.get("loc") or ()
        if loc and str(loc[0]) not in seen:
            seen.append(str(loc[0]))
    return seen


def accepts(spec: dict) -> str:
    """A JSON schema property in words: 'an integer from 1 to 50', 'one of "warm", "cold"'."""
    if "anyOf" in spec:
        kinds = [s for s in spec["anyOf"] if s.get("type") != "null"]
        words = " or ".join(accepts(s) for s in kinds) or "null"
        return words + (" (or leave it out)" if len(kinds) < len(spec["anyOf"]) else "")
    if "enum" in spec:
        return "one of " + ", ".join(json.dumps(v) for v in spec["enum"])
    kind = spec.get("type")
    if kind == "string":
        low, high = spec.get("minLength"), spec.get("maxLength")
        if low and high:
            return f"a text of {low} to {high} characters"
        if high:
            return f"a text of up to {high} characters"
        return "a non-empty text" if low else "a text"
    if kind in ("integer", "number"):
        low, high = spec.get("minimum"), spec.get("maximum")
        noun = "an integer" if kind == "integer" else "a number"
        if low is not None and high is not None:
            return f"{noun} from {low:g} to {high:g}"
        if low is not None:
            return f"{noun} of at least {low:g}"
        return noun if high is None else f"{noun} of at most {high:g}"
    if kind == "array":
        low, high = spec.get("minItems"), spec.get("maxItems")
        count = (f"{low} to {high} " if low and high else f"up to {high} " if high
                 else f"at least {low} " if low and low > 1 else "")
        return f"a {'non-empty ' if low == 1 and not high else ''}list of {count}" \
               f"{_plural(spec.get('items', {}))}"
    if kind == "object":
        return "an object"
    if kind == "boolean":
        return "true or false"
    return "a value"


def _plural(spec: dict) -> str:
    kind = spec.get("type")
    if kind == "string":
        return "texts"
    if kind == "object":
        values = spec.get("additionalProperties")
        return ("objects of texts" if isinstance(values, dict) and values.get("type") == "string"
                else "objects")
    return {"integer": "integers", "number": "numbers"}.get(str(kind), "values")


def shown(value: Any) -> str:
    """A value as the model wrote it (JSON), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= SHOWN_MAX else text[:SHOWN_MAX - 3] + "..."
