"""The rule-mode distiller's vocabulary: the word lists in data/, read once and indexed.

The words live in two data files beside this module (shipped as package data):
`data/lexicon.txt` holds the labelled tables (topics, segment terms, emotions, actions,
flags, flag pairs, topic paths) and `data/words.txt` the plain word sets (stopwords,
not-names, Chinese surnames...). Both are read at import, once: the tables are constant,
never modified (not state), and every distillation needs them. The keyword index and its
two big regexes (~20 ms to compile) are built on first use (`keywords()`): storing a fact
only looks for names (signals.find_people), which needs neither.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Iterable

from evoclaw_memory.distill.metadata import words_regex

# Every data file this package reads (a test checks each ships, non-empty).
DATA_FILES = ("lexicon.txt", "slots.txt", "words.txt")

Table = list[tuple[str, list[str], list[str]]]


def read_sections(name: str) -> dict[str, list[str]]:
    """The lines of each [section] of data/<name>, without comments and blank lines."""
    plain = Path(__file__).parent / "data" / name
    if plain.is_file():         # the usual install; importlib.resources costs ~5 ms to import
        text = plain.read_text(encoding="utf-8")
    else:
        from importlib import resources
        text = (resources.files(__package__) / "data" / name).read_text(encoding="utf-8")
    sections: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("[") and line.rstrip().endswith("]"):
            lines = sections.setdefault(line.strip()[1:-1], [])
        else:
            lines.append(line)
    return sections


def parse_table(lines: list[str]) -> Table:
    """(label, English words, Chinese words) per entry; indented lines continue an entry."""
    entries_lines: list[str] = []
    for line in lines:
        if line.startswith(" ") and entries_lines:
            entries_lines[-1] += " " + line.strip()
        elif line.strip():
            entries_lines.append(line)
    entries = []
    for line in entries_lines:
        label, _, words = line.partition(":")
        english, _, chinese = words.partition("|")
        entries.append((label.strip(), english.split(), chinese.split()))
    return entries


_LEXICON = read_sections("lexicon.txt")
_WORDS = read_sections("words.txt")


def _words(section: str) -> list[str]:
    return " ".join(_WORDS[section]).split()


def _chars(section: str) -> str:
    return "".join(line.strip() for line in _WORDS[section])


TOPICS = parse_table(_LEXICON["topics"])
SEGMENT_TERMS = parse_table(_LEXICON["segment_terms"])
EMOTIONS = parse_table(_LEXICON["emotions"])
ACTIONS = parse_table(_LEXICON["actions"])
FLAG_WORDS = parse_table(_LEXICON["flags"])
# Where a fact goes when no existing category fits, by topic.
TOPIC_PATHS = {label: english[0] for label, english, _ in parse_table(_LEXICON["topic_paths"])}


def _pairs(lines: list[str]) -> dict[tuple[str, str], str]:
    """(first word, second word) -> flag, from "flag: first second, first second" lines."""
    pairs = {}
    for line in lines:
        flag, _, phrases = line.partition(":")
        for phrase in phrases.split(","):
            first, second = phrase.split()
            pairs[(first, second)] = flag.strip()
    return pairs


FLAG_PAIRS = _pairs(_LEXICON["flag_pairs"])

PREFERENCE_VERBS = frozenset(_words("preference_verbs"))
PREFERENCE_SUBJECTS = frozenset(_words("preference_subjects"))
# Flags implied by others.
IMPLIED_FLAGS = {"firm_decision": "decision", "plan": "decision", "profile": "personal"}

ZH_FILLER_WORDS = " ".join(_words("zh_filler"))
ZH_DAY_WORDS = [p + d for p in ("周", "星期", "礼拜") for d in "一二三四五六日天"] + [
    m + "月" for m in "一 二 三 四 五 六 七 八 九 十 十一 十二".split()
]

STOPWORDS = frozenset(_words("stopwords"))
NOT_NAMES = frozenset(_words("not_names"))
PLACE_WORDS = frozenset(_words("place_words"))
WH_WORDS = frozenset(_words("wh_words"))
SUMMARY_DROP = frozenset(_words("summary_drop"))
SURNAMES = _chars("zh_surnames")
NAME_STOP_CHARS = frozenset(_chars("zh_name_stop_chars"))
ZH_NOT_NAMES = frozenset(_words("zh_not_names"))
# The word lists of the Chinese name pattern (signals._ZH_NAME_RE), in the order it tries them.
ZH_NAME_CALLED = _words("zh_name_called")
ZH_NAME_AFTER = _words("zh_name_after")
ZH_NAME_BEFORE = _words("zh_name_before")
ZH_NAME_TITLES = _words("zh_name_titles")


def stem(word: str) -> str:
    """A crude English stem: enough to make "pets", "allergies", "Maya's" meet "pet" etc."""
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def variants(word: str) -> set[str]:
    """Surface forms of a listed English word: "dog" -> dog, dogs, doges; "story" -> stories."""
    forms = {word, word + "s", word + "es"}
    if word.endswith("y"):
        forms.add(word[:-1] + "ies")
    return forms


def _build_lexicon() -> tuple[dict, dict]:
    """(English surface form -> entries, Chinese word -> entries); an entry is (kind, label)."""
    english: dict[str, list[tuple[str, str]]] = {}
    chinese: dict[str, list[tuple[str, str]]] = {}
    for kind, table in (
        ("topic", TOPICS),
        ("term", SEGMENT_TERMS),
        ("emotion", EMOTIONS),
        ("action", ACTIONS),
    ):
        for label, english_words, chinese_words in table:
            entries = [(kind, label)]
            if kind == "topic":  # a topic is also a term: "pets" meets the segment `pets`
                entries.append(("term", stem(label)))
            for word in english_words:
                for form in variants(word):
                    english.setdefault(form, []).extend(entries)
            for word in chinese_words:
                chinese.setdefault(word, []).extend(entries)
    for flag, english_words, chinese_words in FLAG_WORDS:
        for word in english_words:
            english.setdefault(word, []).append(("flag", flag))
        for word in chinese_words:
            chinese.setdefault(word, []).append(("flag", flag))
    for (first, second), flag in FLAG_PAIRS.items():
        english.setdefault(f"{first} {second}", []).append(("flag", flag))
    for verb in PREFERENCE_VERBS:
        english.setdefault(verb, []).append(("preference_verb", ""))
    for word in ZH_DAY_WORDS:
        chinese.setdefault(word, []).append(("flag", "date"))
    for word in ZH_FILLER_WORDS.split():
        chinese.setdefault(word, []).append(("filler", ""))
    # A longer word hides the shorter ones inside it (我叫 hides 我): give it their meaning too.
    chinese["我叫"].append(("flag", "personal"))
    return english, chinese


def keyword_regex(words: Iterable[str]) -> re.Pattern[str]:
    """Lowercase keywords (and their "'s") as one prefix-tree regex, to run on lowered text.

    It starts with a literal so the engine can skip ahead; that a match starts a word is
    checked in code (`signals.starts_word`), which is much faster than a leading look-behind.
    """
    return re.compile(rf"(?:{words_regex(words)})(?:'s)?(?![a-z0-9'-])")


class Keywords:
    """The keyword index: surface form -> entries, and the regex that finds the forms."""

    def __init__(self) -> None:
        self.english, self.chinese = _build_lexicon()
        self.english_re = keyword_regex(self.english)
        self.chinese_re = re.compile(words_regex(self.chinese))


@functools.cache
def keywords() -> Keywords:
    """The keyword index, built once, on first use."""
    return Keywords()


TOPIC_ORDER = [label for label, _, _ in TOPICS]
