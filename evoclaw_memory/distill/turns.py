"""The turns of a conversation: who spoke, what they said, and when (SPEC §4, issue 13).

Messages are OpenAI-style: `role`, `content` (text or content parts), optional `name`
and an optional time (`timestamp`, `time` or `created_at`: epoch seconds or ISO 8601).
The speaker is the `name` when given; an assistant without one is "Assistant"; the owner
without one stays in the first person (the memory is theirs: "I", "my" mean the owner).
System prompts and tool output are not the owner's memories and are left out.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Collection, NamedTuple, Optional, Sequence, Union

from evoclaw_memory import validate

Messages = Union[str, Sequence[Any]]
ASSISTANT = "Assistant"


class Turn(NamedTuple):
    role: str                    # "user" or "assistant"
    text: str
    speaker: Optional[str]       # who the fact names (None: the owner, in the first person)
    addressee: Optional[str]     # who "you" is, when the conversation has just two speakers
    when: float                  # epoch seconds: the message's own time, else the conversation's
    dated: bool = True           # False: nobody said when (a fact's time is then "now")
    agent: bool = False          # the agent's own turn (an assistant without a person's name)


def conversation_turns(messages: Messages, at: float, dated: bool = True,
                       agent_names: Collection[str] = ()) -> list[Turn]:
    """The user and assistant turns of `messages`, each with its speaker and time (`dated`:
    `at` was given, not just the clock's now).

    An assistant turn is the agent's own when it has no name, or the agent's name
    (`agent_names`, e.g. hot memory's identity.agent_name); a named assistant is a person
    (a LoCoMo-style conversation between two people passes the second one so)."""
    agents = {ASSISTANT.lower()} | {n.strip().lower() for n in agent_names if n and n.strip()}
    raw: list[tuple[str, str, Optional[str], float, bool]] = []
    if isinstance(messages, str):
        messages = [messages]
    for index, message in enumerate(messages or ()):
        if isinstance(message, str):
            if message.strip():
                raw.append(("user", message, None, at, dated))
            continue
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or "user")
        if role not in ("user", "assistant"):
            continue
        content = message.get("content")
        if isinstance(content, list):       # [{"type": "text", "text": ...}, {"type": "image_url"...}]
            content = "\n".join(str(part.get("text", "")) for part in content
                                if isinstance(part, dict) and part.get("type") == "text")
        if not isinstance(content, str) or not content.strip():
            continue
        name = message.get("name")
        speaker = " ".join(name.split()) if isinstance(name, str) and name.strip() else None
        if speaker is None and role == "assistant":
            speaker = ASSISTANT
        when = validate.message_time(message, index)
        raw.append((role, content, speaker, at if when is None else when, dated or when is not None))
    labels = {(speaker or "\0owner") for _, _, speaker, _, _ in raw}
    turns = []
    for role, content, speaker, when, stamped in raw:
        other = labels - {speaker or "\0owner"}
        addressee = next(iter(other)) if len(other) == 1 else None
        turns.append(Turn(role, content, speaker, None if addressee == "\0owner" else addressee, when,
                          stamped, role == "assistant" and (speaker or "").lower() in agents))
    return turns


def local_time(epoch: float) -> dt.datetime:
    """The device's local time at `epoch` ("yesterday" is the owner's yesterday)."""
    return dt.datetime.fromtimestamp(epoch)


def label(turn: Turn) -> str:
    """How a turn is introduced to an LLM: its speaker's name, else its role."""
    return turn.speaker or turn.role
