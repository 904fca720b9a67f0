"""Text normalisation shared by the full-text index, queries and duplicate detection.

SQLite's unicode61 tokenizer keeps a run of Chinese or Japanese characters as one giant token,
so "我喜欢喝咖啡" would only match itself. We pre-split such runs into overlapping character
bigrams ("我喜 喜欢 欢喝 喝咖 咖啡") before indexing and before querying, the classic CJK
retrieval trick: it finds two-character words, which the trigram tokenizer cannot, and keeps
porter stemming and real BM25 for spaced languages in the same index.
"""

from __future__ import annotations

import functools
import re

# CJK ideographs, kana, hangul, fullwidth forms: scripts written without spaces.
_CJK = (r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
        r"\uff66-\uff9f")
_SPACES = re.compile(r"\s+")
# A word of the first person: a question without one asks nothing about the owner's own
# attributes (distill.slots.asked_kinds), so lifecycle.attributes loads no slot patterns.
FIRST_PERSON = re.compile(r"\b(?:I|my|me|we|our|us)\b", re.I)
_CJK_RANGES = ((0x3040, 0x30ff), (0x3400, 0x4dbf), (0x4e00, 0x9fff), (0xf900, 0xfaff),
               (0xac00, 0xd7af), (0xff66, 0xff9f))      # the ranges of _CJK, as numbers


class _ScriptPatterns:
    """The two patterns over the CJK ranges, compiled on first use (~2 ms, which every CLI
    process paid at import): only a text that is not plain ASCII needs them."""

    def __init__(self) -> None:
        self.cjk_run = re.compile(f"[{_CJK}]+")
        self.word = re.compile(rf"[^\W_]+|[{_CJK}]+", re.UNICODE)


@functools.cache
def _scripts() -> _ScriptPatterns:
    return _ScriptPatterns()


# Words too common to say anything about relevance (English; CJK bigrams need none).
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
s t don isn aren wasn weren hasn haven hadn doesn didn won wouldn shouldn can't let's
tell remind know remember recall what's whats please again also get got
""".split())


def is_cjk(token: str) -> bool:
    """True when the token is written in a script without spaces."""
    if token.isascii():
        return False            # no CJK character is ASCII
    # The ranges of _CJK, checked without the pattern (compiling it costs ~1 ms a process).
    return all(any(low <= ord(ch) <= high for low, high in _CJK_RANGES) for ch in token)


def cjk_runs(text: str) -> list[str]:
    """The runs of CJK characters in a text, in order."""
    return [] if text.isascii() else _scripts().cjk_run.findall(text)


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a single character stays itself."""
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


# Bumped whenever stem() or the tokenisation changes: stored index bodies and duplicate keys
# were made by the old one and must be rebuilt (schema/local/0007_wording.sql does it).
STEMMER_VERSION = 2

_SUFFIXES = (("ies", "y"), ("ied", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("ly", ""),
             ("s", ""))


def stem(word: str) -> str:
    """A light, deterministic English stemmer (plurals, -ing, -ed, -ly, a silent final e,
    -ic adjectives of -y nouns).

    Index and queries go through the same function, so consistency matters more than
    linguistic accuracy: every inflection of a word must land on one stem (dance, dances,
    danced, dancing -> danc; beach, beaches -> beach; allergy, allergies, allergic ->
    allergy). Doing it here rather than with FTS5's porter tokenizer means the terms in the
    fts5vocab table are exactly the ones a query produces.
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    base = word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix):
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            base = word[: -len(suffix)] + repl
            if suffix == "ed" and base.endswith("e"):
                if len(word) < 6:
                    return word           # need, speed, seed: not a past tense
                base += "e"               # agreed -> agree, like "agree" itself
            if len(base) < 3:
                if suffix == "ed" and len(base) == 2:
                    base += "e"           # used -> use, like "use" itself
                else:
                    return word
            elif suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2] \
                    and base[-1] not in "lszaeiou":
                base = base[:-1]          # running -> runn -> run
            if suffix == "s" and base.endswith(("sse", "xe", "che", "she", "zze")):
                base = base[:-1]          # beaches -> beache -> beach, boxes -> box
            break
    if base.endswith("ic") and len(base) > 6:
        base = base[:-2] + "y"            # allergic -> allergy, strategic -> strategy
    if len(base) > 3 and base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        base = base[:-1]                  # dance/dancing -> danc, hike/hiking -> hik
    if base in STOPWORDS and base != word:
        # A stem must not become a stopword (notes -> note -> "not" would vanish).
        return base + "e" if word.startswith(base + "e") else word
    return base


def tokens(text: str) -> list[str]:
    """Lower-cased, stemmed search tokens of any text: words, and bigrams for CJK runs."""
    return list(_tokens(text))


# ASCII letters and digits lower-cased, everything else a space: _WORD's split, done in C.
_ASCII_WORDS = bytes(c if c < 128 and chr(c).isalnum() else 32 for c in range(256)).lower()


@functools.lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    # Cached: remember() tokenises a text for its key and its index entry, and retrieval
    # re-tokenises the same candidate facts query after query.
    if text.isascii():
        # Most texts: no NFKC needed (ASCII is its own normal form), and bytes.translate
        # splits words 3x faster than the regex (a restore tokenises 100k facts).
        words = text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
        return tuple(map(_ascii_word_token, words))
    out: list[str] = []
    word_tokens = _word_tokens
    import unicodedata              # here: ASCII text (most of it) never needs it
    for word in _scripts().word.findall(unicodedata.normalize("NFKC", text).lower()):
        out.extend(word_tokens(word))
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def _ascii_word_token(word: str) -> str:
    return stem(word)


@functools.lru_cache(maxsize=65536)
def _word_tokens(word: str) -> tuple[str, ...]:
    # Cached per word: words repeat far more than texts do (a restore tokenises 100k facts).
    if is_cjk(word):
        return tuple(cjk_bigrams(word))
    out = []
    # A word glued to CJK characters (e.g. "用vim写") splits at the script boundary.
    cjk_run = _scripts().cjk_run
    for part in cjk_run.split(word):
        if part:
            out.append(stem(part))
    for run in cjk_run.findall(word):
        out.extend(cjk_bigrams(run))
    return tuple(out)


def query_terms(text: str) -> list[str]:
    """Distinct meaningful tokens of a query, in order (stopwords dropped)."""
    seen: dict[str, None] = {}
    for tok in tokens(text):
        if tok in STEMMED_STOPWORDS or (len(tok) == 1 and not is_cjk(tok) and not tok.isdigit()):
            continue
        seen.setdefault(tok, None)
    return list(seen)


def fts_phrase(term: str) -> str:
    """One term as a quoted FTS5 phrase (quotes make any input safe)."""
    return '"' + term.replace('"', '""') + '"'


def fts_match_expression(terms: list[str]) -> str:
    """An FTS5 MATCH expression ORing the quoted terms."""
    return " OR ".join(map(fts_phrase, terms))


def normalized_key(text: str) -> str:
    """Key under which two texts count as the same fact (case, spacing, punctuation ignored)."""
    return " ".join(_tokens(text))[:500]


def key_digest(key: str) -> str:
    """What the store keeps of a normalized key: 64 bits of BLAKE2b, in hex.

    Full keys averaged ~90 bytes an index entry, and remember() inserts one at a random place
    in that index on every call; 16 characters keep the index ~5x smaller. The store confirms
    a digest match against the fact's own text, so a collision cannot merge two facts."""
    return _blake2b()(key.encode(), digest_size=8).hexdigest()


@functools.cache
def _blake2b():
    """BLAKE2b, loaded on first use (only a write needs it: ~0.15 ms of every other CLI run),
    without OpenSSL (hashlib's import)."""
    try:
        from _blake2 import blake2b
    except ImportError:     # pragma: no cover - a Python built without it
        from hashlib import blake2b
    return blake2b


def key_and_body(text: str, category: str, extra: str = "") -> tuple[str, str]:
    """normalized_key(text), and the string the full-text index holds for a fact (its text,
    category words and `extra`: links, commands), from one tokenisation."""
    words = " ".join(_tokens(text))
    more = " ".join(category_tokens(category))
    if extra:
        more = " ".join(filter(None, (more, " ".join(_tokens(extra)))))
    return words[:500], (f"{words} {more}" if words and more else words or more)


@functools.lru_cache(maxsize=2048)
def category_tokens(path: str) -> tuple[str, ...]:
    """A category path's search tokens ("projects/garden-bot" -> project, garden, bot);
    cached: a store has a few dozen paths."""
    return _tokens(path.replace("/", " ").replace("-", " ").replace("_", " "))


def collapse_spaces(text: str) -> str:
    """One line, single spaces."""
    return _SPACES.sub(" ", text).strip()


# STOPWORDS | {stem(w) for w in STOPWORDS}, spelled out: stemming them at import cost every
# CLI run ~0.2 ms. tests/test_retrieval_wording.py checks it is still exactly that set.
STEMMED_STOPWORDS = STOPWORDS | frozenset(
    "abov becaus befor doe dur hav mor onc ourselv pleas sam som themselv ther thes thos wer "
    "wher whil yourselv".split())


# -- aliases the memory itself states ------------------------------------------------------
# "Chen Li (Lily)", "Chen Li (陈莉)", "Sarah, known as Sal", "my wife Sarah", "Sam's son Oscar":
# a query naming one side should find facts naming the other. Found by a few cheap patterns at
# write time (most texts match none: one regex search each) and kept as token strings.
_NAME = r"[A-Z][a-z]+(?:[ -][A-Z][a-z]+){0,2}"
_RELATIONS = ("wife husband partner girlfriend boyfriend fiance fiancee son daughter kid child "
              "baby mum mom mother dad father brother sister grandma grandpa grandmother "
              "grandfather aunt uncle cousin niece nephew boss manager colleague friend "
              "neighbour neighbor dog cat puppy pet doctor dentist vet").split()


class _AliasPatterns:
    """The alias regexes, compiled on first use: compiling them costs ~10 ms, which every
    CLI process paid at import although only writes and alias-bearing texts need them (and
    only the `hint`, compiled alone, is needed to tell that a text has none)."""

    def __init__(self) -> None:
        self.paren = re.compile(rf"\b({_NAME})\s*[(（]\s*({_NAME}|[{_CJK}]{{2,6}})\s*[)）]")
        self.known_as = re.compile(
            rf"\b(?:called|goes by|known as|nicknamed|aka|a\.k\.a\.)\s+({_NAME})")
        self.name = re.compile(rf"\b{_NAME}")
        self.parens = re.compile(r"[(（][^()（）]*[)）]")
        self.gap = re.compile(r"[\s,]*(?:(?:is|was|also|often|usually|sometimes|now)\s+)*")
        self.relation = re.compile(rf"(?:\b(?:[Mm]y|[Oo]ur|{_NAME}'s)\s+|(?:^|(?<=[.;!?]\s)))"
                                   rf"((?i:{'|'.join(_RELATIONS)}))"
                                   rf"(?:,\s*|\s+(?:is\s+|called\s+|named\s+)?)({_NAME})\b")


@functools.cache
def _alias_patterns() -> _AliasPatterns:
    return _AliasPatterns()


MAX_ALIASES_PER_TEXT = 8
_RELATION_WORDS = frozenset(_RELATIONS)
_RELATION_BYTES = frozenset(w.encode() for w in _RELATIONS)
# ASCII word characters (\w: letters, digits, underscore) lower-cased, anything else a space.
_ASCII_WORD_CHARS = bytes(ord(chr(c).lower()) if chr(c).isalnum() or c == 95 else 32
                          for c in range(128)) + b" " * 128
# The non-ASCII letters a case-blind regex takes for ASCII ones (its simple case folding):
# dotless ı, long ſ, dotted İ (whose full lower case is two characters) and the Kelvin sign.
_FOLD_TO_ASCII = str.maketrans({"\u0131": "i", "\u017f": "s", "\u0130": "i", "\u212a": "k"})


@functools.cache
def _unicode_word() -> re.Pattern[str]:
    return re.compile(r"\w+")


def _alias_hints(text: str) -> tuple[bool, bool, bool]:
    """What each alias pattern needs somewhere in `text`, apart: "(" or "（" (`paren`); "called",
    "goes by", "known as", "nicknamed", "aka" or "a.k.a" in any case (`known_as`); a relation
    word (_RELATIONS) as a whole word in any case (`relation`). Together, the same answer as
    one case-blind regex of them all, which cost ~35 µs a text (a third of a 100k-fact
    `restore --full`); tests/test_retrieval_wording.py holds that regex and checks the two
    agree. A pattern runs only when its own hint holds: a text with "(noted Tuesday)" need not
    run the relation pattern, the costliest (the same tests: each pattern's match implies its
    hint)."""
    paren = "(" in text or "（" in text
    if text.isascii():
        low = text.lower()
        return paren, _has_hint_phrase(low), not _RELATION_BYTES.isdisjoint(
            text.encode().translate(_ASCII_WORD_CHARS).split())
    if "\u0131" in text or "\u017f" in text or "\u0130" in text or "\u212a" in text:
        text = text.translate(_FOLD_TO_ASCII)      # (rare: a dict lookup per character)
    low = text.lower()
    return paren, _has_hint_phrase(low), \
        not _RELATION_WORDS.isdisjoint(_unicode_word().findall(low))


def _has_hint_phrase(low: str) -> bool:
    # The hint regex's phrases, spelled out (a generator over a tuple costs more than this).
    return ("called" in low or "goes by" in low or "known as" in low or "nicknamed" in low
            or "aka" in low or "a.k.a" in low)


def alias_pairs(text: str) -> list[tuple[str, str]]:
    """(name, alias) pairs a text states, as search-token strings ("chen li", "lily")."""
    paren, phrase, relation = _alias_hints(text)
    if not (paren or phrase or relation):
        return []                         # the common case: no pattern can match
    pat = _alias_patterns()
    out: dict[tuple[str, str], None] = {}
    found = (pat.paren.findall(text) if paren else []) + \
        (pat.relation.findall(text) if relation else [])
    for m in (pat.known_as.finditer(text) if phrase else ()):
        # The name a "called X" belongs to stands right before it ("Chen Li (陈莉), called
        # Lily"), not anywhere in the clause ("Hannah walks a greyhound called Pixel").
        before = text[max(0, m.start() - 60):m.start()]
        names = [n for n in pat.name.finditer(before) if n.group().lower() not in STOPWORDS]
        if names and pat.gap.fullmatch(pat.parens.sub("", before[names[-1].end():])):
            found.append((names[-1].group(), m.group(1)))
    for a, b in found:
        ta, tb = " ".join(_tokens(a)), " ".join(_tokens(b))
        if ta and tb and ta != tb and not set(ta.split()) <= STEMMED_STOPWORDS \
                and not set(tb.split()) <= STEMMED_STOPWORDS:
            out.setdefault((ta, tb), None)
    return list(out)[:MAX_ALIASES_PER_TEXT]
