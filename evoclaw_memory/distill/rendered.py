"""What the memory itself rendered, found in a message and taken out before distillation.

`context()`, MEMORY.md and the tree hand the agent text with a recognisable shape: headers
("## Retrieved memories (data, not instructions)", "## Pending tasks"), tagged fact lines
("- [pinned] [private] [owner/preferences] ..."), tree lines ("📂 Root (warm:3, cold:0)",
"📁 ..."), "Nodes: 7/50 · Size: ...", "_Generated at ... by evoclaw-memory._", entity lines
("- Biscuit (pet, 4 mentions)"), task lines with their id ("- [ ] call the bank `1f2e...`").
A weak model pastes such a block back into its reply, and an owner may paste it too; stored,
it would come back in the next context, pasted again, nested deeper each round (SPEC §4:
nothing the memory rendered is ever stored back, whoever pastes it).

`strip_rendered` removes, from one message:
- a rendered block: from the first marker on a line through the lines that continue it
  (blank lines, list items, tree lines, headers) up to the first line of plain prose; the
  text before the marker stays unless it only introduces the block ("Here is what I have in
  memory:");
- a fact tag inside a sentence ("If I recall correctly, [general] ..."), keeping the sentence:
  the write-time decision then finds the live fact it repeats.

Pure; no I/O. tests/test_rendered.py renders real context, MEMORY.md and tree output and
checks every line of it is found here, so the two cannot drift apart.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable

# Headers the memory writes (tiers/hot.py, lifecycle/audience.py, lifecycle/entities.py).
_HEADERS = ("MEMORY", "Agent identity", "Owner profile", "Active projects", "Pending tasks",
            "Recent events", "Critical lessons", "Memory tree", "Retrieved memories",
            "Entities mentioned")
# Category-like tags: a path with a slash is always ours; a single word only when it is a
# path the tree knows or a top-level path the distiller files under.
_PATH = r"[a-z0-9_-]+(?:/[a-z0-9_-]+)+"
_DEFAULT_TOPS = ("general", "owner", "work", "projects", "health", "family", "food", "home",
                 "finance", "travel", "hobbies", "social", "technical", "people", "pets",
                 "lessons", "events", "tasks", "preferences", "identity", "learning", "shopping")


@functools.lru_cache(maxsize=64)
def _patterns(known: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(a marker that starts a rendered block, a line that continues one, an inline tag)."""
    words = sorted({p for p in known if "/" not in p} | set(_DEFAULT_TOPS), key=len, reverse=True)
    tag = rf"\[(?:pinned|private|{_PATH}|{'|'.join(map(re.escape, words))})\]"
    marker = re.compile(
        rf"#{{1,6}}\s*(?:{'|'.join(map(re.escape, _HEADERS))})\b"
        r"|📂|📁"
        r"|\((?:warm|cold):\s*\d+"
        r"|\bNodes:\s*\d+\s*/\s*\d+"
        r"|_?Generated at [^\n]{0,60}?by evoclaw-memory"
        r"|\(data, not instructions\)"
        r"|\(nothing relevant found\)"
        r"|_Shared session: \d+ private item"
        rf"|(?:^|\s)[-*]\s+(?:{tag}\s*)+(?=\S)"
        r"|(?:^|\s)[-*]\s+\[ \]\s+[^\n]*`[0-9a-f]{16}`"
        r"|\(\w+, \d+ mentions?[;)]")
    continuation = re.compile(
        r"^\s*(?:$|[-*]\s|📁|📂|#{1,6}\s|Nodes:\s*\d|_[^\n]*_\s*$|\((?:not set|empty)\)\s*$)")
    inline = re.compile(rf"{tag}\s*")
    return marker, continuation, inline


def strip_rendered(text: str, known_paths: Iterable[str] = ()) -> str:
    """`text` without what the memory rendered (see the module's docstring)."""
    if not text:
        return text
    marker, continuation, inline = _patterns(tuple(sorted(known_paths)))
    if marker.search(text) is None and inline.search(text) is None:
        return text
    out: list[str] = []
    in_block = False
    for line in text.split("\n"):
        if in_block:
            if continuation.match(line) or marker.search(line):
                continue
            in_block = False
        found = marker.search(line)
        if found is not None:
            if out and not line[:found.start()].strip():
                out[-1] = _drop_introduction(out[-1])       # "... here's yours back:\n# MEMORY"
            head = line[:found.start()].rstrip()
            if head and not head.endswith((":", "：")):    # "Here is what I have in memory:"
                out.append(inline.sub("", head))            # introduces the block: it goes too
            in_block = True
            continue
        out.append(inline.sub("", line))
    return "\n".join(out).strip()


_LAST_SENTENCE = re.compile(r"(?:^|(?<=[.!?。！？]))\s*[^.!?。！？]*[:：]\s*$")


def _drop_introduction(line: str) -> str:
    """`line` without a last sentence that only introduces what follows ("Also, here's mine:")."""
    return _LAST_SENTENCE.sub("", line).rstrip()


def holds_rendered(text: str, known_paths: Iterable[str] = ()) -> bool:
    """Whether `text` holds any of the memory's own markup."""
    marker, _, inline = _patterns(tuple(sorted(known_paths)))
    return marker.search(text) is not None or inline.search(text) is not None


def scrub_messages(messages: Any, known_paths: Iterable[str] = ()) -> Any:
    """`messages` (a string or OpenAI-style messages) with what the memory rendered taken out
    of every text; a message left empty is dropped, every other key is kept."""
    known = tuple(sorted(known_paths))
    if isinstance(messages, str):
        return strip_rendered(messages, known)
    out: list[Any] = []
    for message in messages or ():
        if isinstance(message, str):
            cleaned = strip_rendered(message, known)
            if cleaned.strip():
                out.append(cleaned)
            continue
        if not isinstance(message, dict):
            out.append(message)
            continue
        content = message.get("content")
        if isinstance(content, str):
            cleaned = strip_rendered(content, known)
            if cleaned.strip() or not content.strip():
                out.append({**message, "content": cleaned})
        elif isinstance(content, list):
            parts = [{**part, "text": strip_rendered(part["text"], known)}
                     if isinstance(part, dict) and isinstance(part.get("text"), str) else part
                     for part in content]
            out.append({**message, "content": parts})
        else:
            out.append(message)
    return out
