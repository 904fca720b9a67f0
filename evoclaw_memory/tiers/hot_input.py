"""A hot-memory update's value as a person or a model writes it (text), read into what
`Memory.update_hot` takes. Pure: no I/O.

One function, `hot_value`, shared by every path that takes such text: the CLI's
`hot --update KEY VALUE` (click's, the click-free one in cli.fast and serve's relay, all
through cli.plain.hot) and the MCP tool `update_hot` (agent.mcp_args), so they cannot read
the same words differently; only the label naming the value in an error differs.

- A JSON object (the text starts with `{`) is parsed strictly (validate.loads_json).
- For lesson, event and task a bare text that is not JSON is the entry's text, and for
  project its name: `hot --update lesson 'Never deploy on Fridays'` is what a person types.
- complete_task takes a task id as it is (or a JSON object with an "id").
- Anything else (identity or owner_profile given plain text, a JSON list, malformed JSON)
  is one error line that names the key and shows the right form. Text that starts with `[`
  but is not JSON ("[urgent] renew the certificate") is text.

Imported only when `hot --update` runs, and it imports nothing heavy (start-up time).
"""

from __future__ import annotations

from typing import Any

# key -> the field a bare text fills (the entry's own text field, as tiers.hot checks it).
BARE_TEXT_FIELD = {"lesson": "text", "event": "text", "task": "text", "project": "name"}

# key -> a right form, shown in the error for a wrong one (each one is accepted as it is).
EXAMPLES = {
    "identity": '{"agent_name": "Claw", "owner_name": "Sam"}',
    "owner_profile": '{"timezone": "Australia/Sydney"}',
    "lesson": '{"text": "Never deploy on Fridays", "importance": 0.9}',
    "event": '{"text": "Dentist appointment", "when": "2026-12-12 15:00"}',
    "task": '{"text": "Renew the TLS certificate", "when": "2026-12-04"}',
    "project": '{"name": "EvoClaw", "status": "active"}',
    "complete_task": '{"id": "3f2a9c01d4e5b6a7"}',
}


def hot_value(key: str, raw: Any, label: str = "") -> Any:
    """What `Memory.update_hot(key, value)` takes for the command line's `raw` text.

    A value that is not text (a dict from Python or MCP) and an unknown key are passed
    through: Memory.update_hot and tiers.hot check those, with their own messages.
    Raises ValidationError (one line, naming the key and showing the right form); `label`
    names the value in it (default `hot --update KEY`)."""
    if not isinstance(raw, str) or key not in EXAMPLES:
        return raw
    from evoclaw_memory.errors import NestingError, ValidationError
    from evoclaw_memory.validate import loads_json, text
    label = label or f"hot --update {key}"
    stripped = text(label, raw).strip()
    if key == "complete_task" and not stripped.startswith("{"):
        return raw                            # a task id
    if stripped.startswith("[") and _is_json(stripped):
        raise ValidationError(_needs_object(key, label, "a JSON list"))   # JSON, of the wrong kind
    if not stripped.startswith("{"):
        field = BARE_TEXT_FIELD.get(key)
        if field is not None and stripped:
            return {field: stripped}      # "[urgent] renew the certificate" is text too
        raise ValidationError(_needs_object(key, label, "text that is not a JSON object"
                                            if stripped else "nothing"))
    try:
        value = loads_json(label, stripped)
    except NestingError:
        raise
    except ValidationError as exc:
        reason = str(exc).split(": ", 1)[-1]      # "malformed JSON (... at position 9)"
        raise ValidationError(_needs_object(key, label, reason)) from None
    return value


def _is_json(raw: str) -> bool:
    import json
    try:
        json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return True


def _needs_object(key: str, label: str, got: str) -> str:
    """`hot --update lesson takes a JSON object or plain text (...), e.g. '{...}' (got ...)`"""
    bare = BARE_TEXT_FIELD.get(key)
    if key == "complete_task":
        what = " or a task id"
    elif bare is not None:
        what = f" or plain text (the {key}'s {bare})"
    else:
        what = ""
    return f"{label} takes a JSON object{what}, e.g. '{EXAMPLES[key]}' (got {got})"
