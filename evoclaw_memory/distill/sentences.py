"""Sentences: messages into text, text into sentence spans, and the shaping of a sentence.

Pure functions over strings (rule-mode distillation, SPEC §4): which parts of a conversation
are text, where its sentences start and end, and how a sentence is cleaned and shortened.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Sequence, Union

from evoclaw_memory.limits import DISTILLED_FACT_MAX_CHARS

Messages = Union[str, Sequence[Any]]

# Sentence ends: . ! ? before a space (not in "3.11" or a URL), 。！？ anywhere, line breaks;
# a closing quote or bracket right after the mark belongs to the sentence it closes (else a
# quoted sentence ran on into the next, and its fact was cut inside the quote).
_SENTENCE_END_RE = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)|[。！？]+[”’」』）)]*|\n")
# "e.g." and "Mr." do not end a sentence; neither do initials ("J." or "J.K.").
_ABBREVIATION_RE = re.compile(
    r"(?<![A-Za-z.])(?:(?i:e\.g|i\.e|etc|vs|mr|mrs|ms|dr|prof|st|approx|fig|cf|jr|sr)|(?:[A-Z]\.)*[A-Z])\Z"
)
_ALNUM_RE = re.compile(r"[^\W_]")
_BULLET_RE = re.compile(r"\s*(?:[-*+•>]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_LEADING_FILLER_RE = re.compile(
    r"^(?:(?:so|well|oh|ok|okay|um|uh|also|btw|by the way|anyway|hey|hi|hello|and|but|actually"
    r"|basically|plus|quick note|side note|ps|one more thing|another thing|on another note"
    r"|incidentally|for the record)\b[,:]?\s+|p\.s\.[,:]?\s+)+"
    r"|^(?:嗯|哦|对了|那个|然后|另外)[，,]?\s*",
    re.IGNORECASE,
)


def conversation_text(messages: Messages) -> str:
    """The conversation as plain text, one "role: content" line per message."""
    if isinstance(messages, str):
        return messages
    return "\n".join(f"{role}: {content}" for role, content in iter_messages(messages))


def iter_messages(messages: Messages) -> Iterator[tuple[str, str]]:
    """(role, text) of each message; accepts OpenAI-style dicts, content parts or strings."""
    if isinstance(messages, str):
        if messages.strip():
            yield "user", messages
        return
    for message in messages or ():
        if isinstance(message, str):
            if message.strip():
                yield "user", message
            continue
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "image_url"...}]
            content = "\n".join(
                str(part.get("text", ""))
                for part in content
                if isinstance(part, dict) and part.get("type") == "text"
            )
        if isinstance(content, str) and content.strip():
            yield str(message.get("role") or "user"), content


def split_sentences(text: str) -> list[str]:
    """Split English and Chinese text into trimmed sentences (lines, . ! ? 。！？)."""
    return [text[start:end] for start, end in sentence_spans(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END_RE.finditer(text):
        if match.group().startswith(".") and _ends_with_abbreviation(text, match.start()):
            continue
        add_span(spans, text, start, match.end())
        start = match.end()
    add_span(spans, text, start, len(text))
    return spans


def _ends_with_abbreviation(text: str, dot: int) -> bool:
    # "e.g." and "Mr." do not end a sentence; neither does an initial such as "J."
    return _ABBREVIATION_RE.search(text, max(0, dot - 8), dot) is not None


def add_span(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    bullet = _BULLET_RE.match(text, start, end)
    if bullet:
        start = bullet.end()
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    # Keep only spans with a letter or digit: "---" or "!!" are not sentences.
    if end > start and _ALNUM_RE.search(text, start, end):
        spans.append((start, end))


# What a fact does not need to say: the request to remember it, the assent before it.
_PREFIX_RE = re.compile(
    r"^(?:(?:yes|yeah|yep|yup|sure|no|nope|right|true|totally|definitely|absolutely|exactly|indeed"
    r"|wow|whoa|aww+|haha+|lol|hmm+|oh|ah|great|cool|awesome|nice|thanks|thank you|please"
    r"|ok|okay|well|so|and|but)\b[,!.:;]*\s+)*"
    r"(?:(?:please\s+)?(?:remember|note|keep in mind|don't forget)(?:\s+that)?\b[,:]?\s+"
    r"|(?:just\s+)?so you know,?\s+|fyi,?\s+"
    r"|(?:can|could|would|will) you (?:please\s+)?(?:note|remember|save|record|keep in mind)(?:\s+that)?\s+)?",
    re.IGNORECASE,
)
_ZH_PREFIX_RE = re.compile(r"^(?:(?:是的|对|嗯|好的|好|哦)[，,！!]\s*)*(?:(?:请)?(?:记住|记得)[，,：:]?\s*)?")
_CLAUSE_BREAK_RE = re.compile(r"[,;:]\s+|\s+[-–—]\s+|[，；：]|\s+(?=(?:and|but|because|so|which|while|although)\s)")


# A request to remember is a statement, though it ends with "?".
REQUEST_RE = _REQUEST_RE = re.compile(r"(?:please\s+)?(?:can|could|would|will) you (?:please\s+)?(?:note|remember|save|"
                                      r"record|keep in mind)\b", re.I)


# A question tag after a statement ("Sunflowers mean warmth, right?", "很好吃，对吧？"): the
# statement is what was said; the tag only asks for agreement.
QUESTION_TAG_RE = re.compile(
    r"[,，]\s*(?:right|huh|eh|yeah|no|ok|okay|you know|don't you think|isn't it|aren't they|wasn't it"
    r"|weren't they|didn't it|don't they|doesn't it|am i right|isn't that so"
    r"|对吧|是吧|对不对|是不是|不是吗|对吗)\s*[?？]+$", re.I)


def drop_question_tag(text: str) -> str:
    """`text` with a question tag at its end made a plain full stop."""
    match = QUESTION_TAG_RE.search(text)
    if match is None:
        return text
    return text[:match.start()].rstrip() + ("。" if match.group().endswith("？") else ".")


def strip_prefixes(text: str) -> str:
    """`text` without "Remember that", "Yes," and the like in front (SPEC §4), nor a question
    tag at its end."""
    text = drop_question_tag(text)
    stripped = _ZH_PREFIX_RE.sub("", _PREFIX_RE.sub("", text, count=1), count=1).strip()
    if not stripped or len(re.findall(r"\w", stripped)) < 2:
        return text
    if _REQUEST_RE.match(text):            # "Can you note that X?" states X
        stripped = stripped.rstrip("?？ ") + "."
    return stripped[0].upper() + stripped[1:] if stripped[0].islower() else stripped


def clause_spans(text: str, limit: int) -> list[tuple[int, int]]:
    """Sentence spans, a sentence longer than `limit` split at its clause breaks."""
    out: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        while end - start > limit:
            cut = None
            for match in _CLAUSE_BREAK_RE.finditer(text, start + limit // 4, start + limit):
                cut = match
            if cut is None:
                break
            add_span(out, text, start, cut.start())
            start = cut.end()
        add_span(out, text, start, end)
    return out


def clean_sentence(sentence: str) -> str:
    """A sentence without bullets, leading filler ("so", "btw", "嗯") and extra spaces."""
    bullet = _BULLET_RE.match(sentence)
    text = " ".join((sentence[bullet.end() :] if bullet else sentence).split())
    stripped = _LEADING_FILLER_RE.sub("", text)
    if stripped and stripped != text and stripped[0].islower():
        stripped = stripped[0].upper() + stripped[1:]
    return stripped or text


def shorten(text: str, limit: int = DISTILLED_FACT_MAX_CHARS) -> str:
    """`text` cut to at most `limit` characters, at a clause or word boundary when possible."""
    if len(text) <= limit:
        return text
    room = limit - 1  # for the ellipsis
    head = text[:room]
    # Prefer ending at a clause break if that keeps most of the text...
    clause = max(head.rfind(mark) for mark in (", ", "; ", ": ", " - ", "，", "；", "：", "、"))
    if clause >= room * 0.6:
        return head[:clause].rstrip(" ,;:-，；：、") + "…"
    # ...else at a word boundary (English), else anywhere (Chinese has no spaces).
    space = head.rfind(" ")
    if space >= room * 0.6:
        head = head[:space]
    return head.rstrip(" ,;:-，；：、") + "…"


def truncate_utf8(text: str, max_bytes: int) -> str:
    """`text` cut to at most `max_bytes` UTF-8 bytes, never inside a character."""
    # "replace": a lone surrogate (invalid in UTF-8) becomes "?" instead of raising.
    encoded = text.encode("utf-8", errors="replace")
    return encoded[:max_bytes].decode("utf-8", errors="ignore")


def byte_length(text: str) -> int:
    return len(text.encode("utf-8", errors="replace"))


def shorten_bytes(text: str, max_bytes: int) -> str:
    """Cut to `max_bytes`, at a word boundary when there is one in the second half."""
    cut = truncate_utf8(text, max_bytes)
    if cut == text:
        return text
    space = cut.rfind(" ")
    if space >= len(cut) // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-，；：、")
