"""The signals of sentences: one pass of each scanner over a whole text (SPEC §4).

The text is split into sentence spans; then each scanner (English keywords, Chinese
keywords, names, links) runs once over the whole text and drops what it finds into the
sentence whose span holds it, and the few per-sentence counts are single regex calls.

The big patterns (the keyword index, content words, Chinese names) compile on first use:
storing a fact runs only the name scanners (`find_people`), and a CLI `store` is a fresh
process that would otherwise compile every pattern of the distiller (~25 ms).
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from typing import Iterable, NamedTuple

from evoclaw_memory.distill.lexicon import (IMPLIED_FLAGS, NAME_STOP_CHARS, NOT_NAMES, PLACE_WORDS,
                                            PREFERENCE_SUBJECTS, PREFERENCE_VERBS, STOPWORDS, SURNAMES,
                                            WH_WORDS, ZH_NAME_AFTER, ZH_NAME_BEFORE, ZH_NAME_CALLED,
                                            ZH_NAME_TITLES, ZH_NOT_NAMES, keywords)
from evoclaw_memory.distill.metadata import locate_metadata, metadata_from_items, words_regex
from evoclaw_memory.distill.sentences import sentence_spans
from evoclaw_memory.models import Metadata

WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:['’-][A-Za-z0-9]+)*")


@functools.cache
def _content_word_re() -> re.Pattern[str]:
    """Words of two letters or more that are not stopwords, on lowered text."""
    return re.compile(
        rf"(?<![a-z0-9'-])(?!(?:{words_regex(STOPWORDS)})(?![a-z0-9'-]))[a-z][a-z0-9]+(?:['-][a-z0-9]+)*"
    )


# A run of capitalised words: "Maya", "Chen Li", "Maya's"; checked further in `_scan_names`.
_NAME_RE = re.compile(r"[A-Z][a-z]+(?:['’-][A-Za-z]?[a-z]+)*(?: [A-Z][a-z]+(?:['’-][A-Za-z]?[a-z]+)*)*")
_PREVIOUS_WORD_RE = re.compile(r"([A-Za-z'’]+)[^A-Za-z'’]*$")
_NEGATED_RE = re.compile(r"(?:\bnot|\bnever|n't|\bno)\s+$")
# Acronyms (AWS, ENT), codes with digits (ESP32, HSK4, v0.3), CamelCase (GitHub, iPhone).
_ENTITY_RE = re.compile(
    r"(?<![A-Za-z0-9])(?:(?!(?:OK|TODO|FYI|BTW|AM|PM|ASAP)(?![A-Za-z0-9]))[A-Z]{2,}[A-Za-z0-9]*"
    r"|[A-Za-z]+\d[A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z]*|[A-Z][a-z]+[A-Z][A-Za-z]*)"
)


@functools.cache
def _cjk_char_re() -> re.Pattern[str]:
    """One Chinese character (compiled on first use: a CJK class costs ~1 ms)."""
    return re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _has_cjk(text: str) -> bool:
    return not text.isascii() and _cjk_char_re().search(text) is not None


_DIGIT_RE = re.compile(r"\d")
# Starts with a digit (no look-behind, no IGNORECASE) so the engine jumps between digits.
_NUMERIC_DATE_RE = re.compile(
    r"\d{1,4}(?:-\d{2}-\d{2}|(?:st|nd|rd|th)\b|:\d{2}|\s?[aApP][mM]\b|\s+[mM]ay\b|\s*[年月日号])"
)
# Starts with a literal so the engine can jump between candidates; checked further in code.
_EMAIL_RE = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_PHONE_RE = re.compile(r"\+?\d[\d -]{8,}\d")

_CJK = r"\u4e00-\u9fff"


@functools.cache
def _zh_name_re() -> re.Pattern[str]:
    """Chinese names (only texts with Chinese in them need it)."""
    return re.compile(
        # 名叫 / 叫做 / 名字叫: whatever follows is the name
        rf"(?:{'|'.join(ZH_NAME_CALLED)})(?P<called>[{_CJK}]{{2,3}})"
        # after a companion or kinship word, a surname starts a name: 和陈莉, 跟老王, 表姐王静;
        # after a bare 叫 ("call", "order") too: 我叫陈莉 yes, 叫外卖 no
        rf"|(?:{'|'.join(ZH_NAME_AFTER)})"
        rf"(?P<after_word>(?:老|小)?[{SURNAMES}][{_CJK}]{{1,2}})"
        # at the start of a clause, a surname and one or two characters before 的/说/是...: 陈莉每周...
        # (each starts with the surname and checks the character before it afterwards, which
        # lets the engine jump from surname to surname)
        rf"|(?P<subject>[{SURNAMES}](?<![{_CJK}].)[{_CJK}]{{1,2}}?)"
        rf"(?={'|'.join(ZH_NAME_BEFORE)})"
        # 王医生 / 李老师: a surname and a title
        rf"|(?P<titled>[{SURNAMES}](?<![{_CJK}].)(?:{'|'.join(ZH_NAME_TITLES)}))"
    )


class Sentence:
    """One sentence of a block and the signals the scanners dropped into it."""

    __slots__ = (
        "start",
        "end",
        "text",
        "flags",
        "terms",
        "topics",
        "emotions",
        "actions",
        "names",
        "content_words",
        "cjk_chars",
        "filler_chars",
        "first_word",
        "first_word_start",
        "items",
        "_score",
    )

    def __init__(self, text: str, start: int, end: int) -> None:
        self.start, self.end, self.text = start, end, text[start:end]
        self.flags: set[str] = set()
        self.terms: set[str] = set()  # topics and segment terms implied by the words
        self.topics: list[str] = []
        self.emotions: list[str] = []
        self.actions: list[str] = []
        self.names: list[str] = []
        self.content_words = 0
        self.cjk_chars = 0
        self.filler_chars = 0
        self.first_word = ""
        self.first_word_start = -1
        self.items: list[tuple[int, str, str]] = []  # located links, commands, paths
        self._score: int | None = None

    @property
    def metadata(self) -> Metadata:
        return metadata_from_items(self.items) if self.items else Metadata()

    @property
    def question(self) -> bool:
        return self.text.endswith(("?", "？", "吗", "呢")) or self.first_word in WH_WORDS

    @property
    def filler(self) -> bool:
        """Greetings and thanks: no link, no content word, (almost) no Chinese beyond filler."""
        return not self.items and self.content_words == 0 and self.cjk_chars - self.filler_chars < 2

    @property
    def substantive(self) -> bool:
        return bool(self.items) or self.content_words >= 2 or self.cjk_chars >= 4

    @property
    def detailed(self) -> bool:
        return self.content_words >= 6 or self.cjk_chars >= 12

    @property
    def score(self) -> int:
        """Signal points, computed once the scanners are done (see `info_score`)."""
        if self._score is None:
            self._score = info_score(self)
        return self._score


class Analysis(NamedTuple):
    sentences: list[Sentence]
    stray_items: list[tuple[int, str, str]]  # links, commands, paths outside every sentence


def analyse(text: str, spans: list[tuple[int, int]] | None = None) -> Analysis:
    """The sentences of `text` (or of the given spans) with every signal counted."""
    sentences = [
        Sentence(text, start, end) for start, end in (sentence_spans(text) if spans is None else spans)
    ]
    if not sentences:
        return Analysis([], locate_metadata(text))
    sentence_at = sentence_at_offset(sentences)
    # Lowercase once; "’" becomes "'" so "don’t" meets "don't". (Rare characters change
    # length when lowered; then offsets would drift, so keyword scanning uses a fallback.)
    lowered = text.lower().replace("’", "'")
    if len(lowered) != len(text):
        lowered = "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text).replace("’", "'")
    has_cjk = _has_cjk(text)
    for sentence in sentences:
        _scan_sentence(text, lowered, sentence, has_cjk)
    _scan_keywords(lowered, sentence_at)
    _scan_names(text, sentence_at)
    if has_cjk:
        _scan_chinese(text, sentence_at)
    if "@" in text:
        _scan_emails(text, sentence_at)
    stray_items = []
    for item in locate_metadata(text):
        owner = sentence_at(item[0])
        if owner:
            owner.items.append(item)
        else:
            stray_items.append(item)
    for sentence in sentences:
        for flag, implied in IMPLIED_FLAGS.items():
            if flag in sentence.flags:
                sentence.flags.add(implied)
    return Analysis(sentences, stray_items)


def sentence_at_offset(sentences: list[Sentence]):
    """A lookup: the sentence whose span holds an offset (None between sentences)."""
    starts = [s.start for s in sentences]

    def sentence_at(offset: int) -> Sentence | None:
        index = bisect_right(starts, offset) - 1
        if index >= 0 and offset < sentences[index].end:
            return sentences[index]
        return None

    return sentence_at


def _first_word(text: str, sentence: Sentence) -> None:
    """What the name scanner needs of _scan_sentence: where the first word starts."""
    first = WORD_RE.search(text, sentence.start, sentence.end)
    if first:
        sentence.first_word_start = first.start()


def _scan_sentence(text: str, lowered: str, sentence: Sentence, has_cjk: bool) -> None:
    """The per-sentence counts, each one C-level regex call over the sentence."""
    start, end = sentence.start, sentence.end
    first = WORD_RE.search(text, start, end)
    if first:
        sentence.first_word, sentence.first_word_start = lowered[first.start() : first.end()], first.start()
        sentence.content_words = len(_content_word_re().findall(lowered, start, end))
        if _ENTITY_RE.search(text, start, end):
            sentence.flags.add("entity")
    if _DIGIT_RE.search(text, start, end):
        sentence.flags.add("number")
        if _NUMERIC_DATE_RE.search(text, start, end):
            sentence.flags.add("date")
        if _PHONE_RE.search(text, start, end):
            sentence.flags.add("contact")
    if has_cjk:
        sentence.cjk_chars = len(_cjk_char_re().findall(text, start, end))


def starts_word(text: str, offset: int) -> bool:
    return offset == 0 or not (text[offset - 1].isalnum() or text[offset - 1] in "'’-_")


def _scan_keywords(lowered: str, sentence_at) -> None:
    """English lexicon words and flag words/pairs, one regex pass over the lowered text."""
    index = keywords()
    english = index.english
    for match in index.english_re.finditer(lowered):
        start = match.start()
        if not starts_word(lowered, start):
            continue
        sentence = sentence_at(start)
        if sentence is None:
            continue
        word = match.group()
        entries = english.get(word) or english.get(word[:-2], ())  # "biscuit's" -> "biscuit"
        for kind, label in entries:
            if kind == "preference_verb":
                # "like" states a preference after a subject: "I like", "Sam hates", "we don't love".
                previous = _PREVIOUS_WORD_RE.search(lowered, max(sentence.start, start - 24), start)
                if previous and previous.group(1) in PREFERENCE_SUBJECTS:
                    sentence.flags.add("preference")
            elif kind == "emotion" and _NEGATED_RE.search(lowered, max(sentence.start, start - 12), start):
                continue  # "not happy" is not happy
            else:
                _count_entry(sentence, kind, label)


def _count_entry(sentence: Sentence, kind: str, label: str) -> None:
    if kind == "term":
        sentence.terms.add(label)
    elif kind == "flag":
        sentence.flags.add(label)
    elif kind == "topic":
        if label not in sentence.topics:
            sentence.topics.append(label)
    elif kind == "emotion":
        sentence.emotions.append(label)
    elif kind == "action":
        if label not in sentence.actions:
            sentence.actions.append(label)
    elif kind == "filler":
        pass  # counted by the caller, which knows the length


def _scan_names(text: str, sentence_at) -> None:
    """Runs of capitalised words that read as names (not a first word, not after "in"/"the")."""
    for match in _NAME_RE.finditer(text):
        start, end = match.span()
        if not starts_word(text, start) or (end < len(text) and (text[end].isalnum() or text[end] in "_")):
            continue  # inside a word, a path or CamelCase ("GitHub")
        if start > 0 and text[start - 1] in "./@":
            continue
        sentence = sentence_at(start)
        if sentence is None:
            continue
        if (
            start == sentence.first_word_start
            and " " not in match.group()
            and not match.group().endswith(("'s", "’s"))
        ):
            continue  # the common case, decided cheaply: a lone capitalised first word (see _record_name)
        _record_name(text, sentence, match)
        # A capitalised word just before a preference verb is its subject: "Sam hates ...".
        if text.startswith(" ", end) and text[end + 1 : end + 9].split(" ", 1)[0] in PREFERENCE_VERBS:
            sentence.flags.add("preference")


def _record_name(text: str, sentence: Sentence, match: re.Match[str]) -> None:
    """Record a run of capitalised words as a name unless it reads as a place or a first word."""
    run = match.group().split(" ")
    possessive = run[-1].endswith(("'s", "’s"))
    if possessive:
        run[-1] = run[-1][:-2]
    kept = [w for w in run if w not in NOT_NAMES and len(w) > 1]
    if not kept:
        return
    if kept[0] == run[0]:
        if len(kept) == 1 and not possessive and match.start() == sentence.first_word_start:
            return  # "Dinner was late", "Biscuit had his jab": a word or a name? Skip.
        previous = _PREVIOUS_WORD_RE.search(text, max(sentence.start, match.start() - 24), match.start())
        if previous and previous.group(1).lower() in PLACE_WORDS:
            return  # "in Leeds", "the Hilton"
    name = " ".join(kept)
    if name not in sentence.names:
        sentence.names.append(name)
    sentence.flags.add("entity")


def _scan_chinese(text: str, sentence_at) -> None:
    index = keywords()
    for match in index.chinese_re.finditer(text):
        sentence = sentence_at(match.start())
        if sentence is None:
            continue
        for kind, label in index.chinese[match.group()]:
            if kind == "filler":
                sentence.filler_chars += len(match.group())
            else:
                _count_entry(sentence, kind, label)
    _scan_chinese_names(text, sentence_at)


def _scan_chinese_names(text: str, sentence_at) -> None:
    for match in _zh_name_re().finditer(text):
        sentence = sentence_at(match.start())
        name = _trim_chinese_name(next(group for group in match.groups() if group))
        if sentence and name and name not in ZH_NOT_NAMES and name not in sentence.names:
            sentence.names.append(name)
            sentence.flags.add("entity")


def _scan_emails(text: str, sentence_at) -> None:
    for match in _EMAIL_RE.finditer(text):
        at = match.start()
        # The regex starts at "@"; an address needs its user part right before it.
        if at > 0 and (text[at - 1].isalnum() or text[at - 1] in "._+-"):
            sentence = sentence_at(at)
            if sentence:
                sentence.flags.add("contact")


def _trim_chinese_name(name: str) -> str:
    # Cut the name at the first particle or verb: 陈莉去了 -> 陈莉.
    for index, ch in enumerate(name):
        if index > 0 and ch in NAME_STOP_CHARS:
            name = name[:index]
            break
    core = name[1:] if name[0] in "老小" else name
    return name if len(core) >= 2 or (name[0] in "老小" and len(name) == 2) else ""


def find_people(text: str) -> list[str]:
    """Proper names in `text`: capitalised words in mid-sentence, Chinese names by surname.

    Only the name scanners run (not every signal `analyse` counts): entity linking calls this
    for every fact `remember` stores, so it must cost a fraction of a full analysis."""
    sentences = [Sentence(text, start, end) for start, end in sentence_spans(text)]
    if not sentences:
        return []
    sentence_at = sentence_at_offset(sentences)
    for sentence in sentences:      # the one per-sentence fact the name scanner reads
        _first_word(text, sentence)
    _scan_names(text, sentence_at)
    if _has_cjk(text):
        _scan_chinese_names(text, sentence_at)
    people: list[str] = []
    for sentence in sentences:
        extend_unique(people, sentence.names)
    return people


def extend_unique(items: list[str], new: Iterable[str]) -> None:
    for item in new:
        if item not in items:
            items.append(item)


def info_score(sentence: Sentence) -> int:
    """How much a sentence says: links, 'remember', preferences, decisions, names, dates..."""
    flags = sentence.flags
    score = 3 if sentence.items else 0
    for flag in ("remember", "preference", "decision", "credential", "contact"):
        score += 2 if flag in flags else 0
    for flag in ("entity", "date", "number", "personal"):
        score += 1 if flag in flags else 0
    score += 1 if sentence.topics else 0
    score += 1 if sentence.detailed else 0
    return score
