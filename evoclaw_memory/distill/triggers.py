"""Forget and correct triggers in a conversation (SPEC §5b), found by rules; pure, no I/O.

"forget about my old address", "remove the locker code from memory", "忘掉我的旧地址" name what
to forget; "never mind", "scratch that", "不用记了" take back the speaker's previous message;
"that's wrong, it's 26 degrees" corrects it. Only the owner's (user) messages count: an
assistant saying "I'll forget that" is not the owner asking. What a trigger names is resolved
against the stored facts elsewhere (lifecycle.control), which acts only on a clear match.
"""

from __future__ import annotations

import re
from typing import Literal, Optional, Union

import msgspec

Kind = Literal["forget", "correct"]


class Trigger(msgspec.Struct, frozen=True):
    kind: Kind
    target: str                    # the words naming the fact(s) (or the retracted message)
    said: str                      # the message that carried the trigger
    replacement: Optional[str] = None    # a correction's new value ("it's Y")
    retracts_previous: bool = False      # "never mind": the target is the previous message


_NAMED = [
    # "never forget X" / "don't forget X" ask to keep X (PIN_TRIGGERS), not to drop it.
    re.compile(r"(?<!never )(?<!n't )(?<!not )\b(?:please\s+)?forget\s+(?:about\s+)?"
               r"(?!it\b|that\b|this\b)(?P<t>[^.!?;\n]{3,160})", re.I),
    re.compile(r"\b(?:remove|delete|erase)\s+(?P<t>[^.!?;\n]{3,160}?)\s+from\s+(?:your\s+)?memory",
               re.I),
    re.compile(r"\b(?:don't|do not|stop)\s+remember(?:ing)?\s+(?P<t>[^.!?;\n]{3,160})", re.I),
    re.compile(r"(?:忘掉|忘记|忘了|删掉|删除|别记)(?P<t>[^。！？；\n]{1,80})"),
]
_RETRACT = [
    re.compile(r"^\W*(?:never\s*mind|scratch\s+that|forget\s+(?:it|that|this)|ignore\s+that|"
               r"disregard\s+that|strike\s+that)\b", re.I),
    re.compile(r"^\W*(?:算了|不用记|别记了|忘了吧|当我没说)"),
]
_CORRECT = [
    re.compile(r"\b(?:that's|that is|this is)\s+(?:wrong|incorrect|not right|not true)\W+"
               r"(?:it's|it is|it was|actually)?\s*(?P<r>[^.!?\n]{1,160})", re.I),
    re.compile(r"(?:不对|错了)[，,。\s]*(?:是|应该是)(?P<r>[^。！？\n]{1,80})"),
]
# Filler at the start of a named target: "forget about *the fact that* ..."
_LEADING = re.compile(r"^(?:the\s+fact\s+that\s+|that\s+|about\s+|my\s+|our\s+|the\s+)+", re.I)


def _messages(conversation: Union[str, list[dict]]) -> list[tuple[str, str]]:
    """(role, content) pairs; a plain text conversation counts as the owner speaking."""
    if isinstance(conversation, str):
        return [("user", line) for line in conversation.splitlines() if line.strip()]
    out = []
    for m in conversation:
        content = m.get("content")
        if isinstance(content, str) and content.strip():
            out.append((str(m.get("role", "user")), content.strip()))
    return out


def find_triggers(conversation: Union[str, list[dict]]) -> list[Trigger]:
    """The forget/correct triggers in the owner's messages, in order."""
    found: list[Trigger] = []
    previous_user: Optional[str] = None
    for role, content in _messages(conversation):
        if role != "user":
            continue
        if any(p.search(content) for p in _RETRACT):
            if previous_user:
                found.append(Trigger("forget", previous_user, content, retracts_previous=True))
        else:
            correction = next((m for p in _CORRECT if (m := p.search(content))), None)
            if correction is not None and previous_user:
                found.append(Trigger("correct", previous_user, content,
                                     replacement=correction.group("r").strip(" ,.:")))
            for pattern in _NAMED:
                for match in pattern.finditer(content):
                    target = _LEADING.sub("", match.group("t").strip(" ,.:\"'"))
                    if target:
                        found.append(Trigger("forget", target, content))
        previous_user = content
    return found


# "remember forever", "never forget", "永远记住": the owner asks for the vault (pinned facts).
PIN_TRIGGERS = [
    re.compile(r"\b(?:remember\s+(?:this\s+|that\s+|it\s+)?forever|never\s+forget|"
               r"always\s+remember|don'?t\s+ever\s+forget)\b", re.I),
    re.compile(r"永远记住|永远别忘|千万别忘|一定要记住"),
]


def find_pin_requests(conversation: Union[str, list[dict]]) -> list[str]:
    """The owner's messages that ask for what they say to be kept forever."""
    return [content for role, content in _messages(conversation)
            if role == "user" and any(p.search(content) for p in PIN_TRIGGERS)]
