"""English <-> Chinese across scripts, without an LLM: a query word's translations stand for it.

A memory written in two languages holds "陈莉不吃羊肉" and is asked "should I cook lamb for
Lily?"; "地铁" and "metro" share no token, and the tree can only say which category to look
in. A general word list (data/crosslang.tsv: the 6,000 most frequent Chinese words with a
one-word English gloss, derived from CC-CEDICT by scripts/build_crosslang.py, nothing picked
by hand) maps each side to the other. Used at query time only: no index change, no
migration, and a fact holding the query's own word never needs it.

- An English query word (already stemmed, as the index holds it) gets the most common Chinese
  words glossed by it, each as a phrase of its character bigrams (how the index holds them).
- A Chinese query run is cut into dictionary words by forward maximum matching; each word's
  English glosses, stemmed, stand for the run's bigram that starts the word.

Every CLI `retrieve` and `context` is a fresh process, and indexing the whole list costs
~15 ms (stemming 6,000 glosses), more than the rest of the query. So an English query does
not build it: each query word is looked up only in the lines that can gloss it
(`_glossed_by`), found through data/crosslang_words.tsv (every gloss word, sorted, with the
byte offsets of its lines; `word_index` derives it from the list, and a test checks the
shipped one is that); the full index is built for a Chinese query, which needs all of it.
"""

from __future__ import annotations

import functools
from pathlib import Path

from evoclaw_memory.english import first_line_from, sorted_lines
from evoclaw_memory.text import STEMMED_STOPWORDS, cjk_bigrams, cjk_runs, is_cjk, stem

ZH_PER_WORD = 1         # Chinese words an English word may stand for (the most common ones)
MAX_TRANSLATED = 6      # query words translated per query (each adds searched tokens)
MAX_WORD = 4            # longest Chinese dictionary word, in characters


@functools.cache
def _raw() -> bytes:
    """The word list's bytes (a plain file beside the module; importlib.resources costs
    ~5 ms). An English query searches these: decoding the whole list (Chinese, ~130 KB) is
    ~0.5 ms of a CLI `retrieve`, and only the few lines found need it."""
    plain = Path(__file__).parent / "data" / "crosslang.tsv"
    if plain.is_file():
        return plain.read_bytes()
    from importlib import resources
    return (resources.files(__package__) / "data" / "crosslang.tsv").read_bytes()


def _entry(line: str) -> tuple[str, tuple[str, ...]]:
    """(Chinese word, its glosses' stems) of one line; no stems for a comment or blank."""
    if not line or line.startswith("#"):
        return "", ()
    zh, _, en = line.partition("\t")
    return zh, tuple(dict.fromkeys(s for s in map(stem, en.split()) if s not in STEMMED_STOPWORDS))


class _Lexicon:
    def __init__(self) -> None:
        self.zh_en: dict[str, tuple[str, ...]] = {}
        self.en_zh: dict[str, list[str]] = {}
        for line in _raw().decode("utf-8").splitlines():
            zh, stems = _entry(line)
            if not stems:
                continue
            self.zh_en[zh] = stems
            for s in stems:                 # the file lists the most common words first
                have = self.en_zh.setdefault(s, [])
                if len(have) < ZH_PER_WORD:
                    have.append(zh)


@functools.cache
def _lexicon() -> _Lexicon:
    # Read on the first query that needs it (~130 KB, ~15 ms), never at import: most CLI
    # commands retrieve nothing.
    return _Lexicon()


def _glossed_by(term: str) -> list[str]:
    """`_lexicon().en_zh.get(term, [])` without building the index: the same words, from
    the only lines that can hold `term`. stem() keeps a prefix of its word and adds at most
    a "y" (allergies, allergic -> allerg+y; tried -> tr+y), so a word that stems to `term`
    starts with `term` (without a final y): the lines are those holding a gloss word that
    starts with that, read in file order."""
    if _lexicon.cache_info().currsize:
        return _lexicon().en_zh.get(term, [])
    if term in STEMMED_STOPWORDS:
        return []                   # the index leaves stopwords out
    data = _raw()
    found: list[str] = []
    for start in _lines_with_word_starting(term[:-1] if term.endswith("y") else term):
        end = data.find(b"\n", start)
        zh, stems = _entry(data[start:end if end != -1 else len(data)].decode("utf-8"))
        if term in stems:
            found.append(zh)
            if len(found) == ZH_PER_WORD:
                break
    return found


def word_index(raw: bytes) -> str:
    """data/crosslang_words.tsv for the list `raw`: each gloss word (the words after a
    line's tab), sorted, with the byte offsets of the lines holding it, in file order:
    "word<TAB>offset offset...". scripts/build_crosslang.py writes it beside the list."""
    lines: dict[str, list[int]] = {}
    at = 0
    for line in raw.split(b"\n"):
        if line and not line.startswith(b"#"):
            for word in line.partition(b"\t")[2].decode("utf-8").split(" "):
                if word and at not in lines.setdefault(word, []):
                    lines[word].append(at)
        at += len(line) + 1
    return WORDS_HEADER + "".join(f"{word}\t{' '.join(map(str, lines[word]))}\n"
                                  for word in sorted(lines))


WORDS_HEADER = ("# The gloss words of crosslang.tsv, sorted, each with the byte offsets of its "
                "lines there\n# (evoclaw_memory.retrieval.crosslang.word_index, written by "
                "scripts/build_crosslang.py);\n# derived from CC-CEDICT like that list, and "
                "under the same licence, CC BY-SA 4.0.\n")


@functools.cache
def _words() -> tuple[str, int]:
    """The word index's text and where its lines start (after the # header)."""
    plain = Path(__file__).parent / "data" / "crosslang_words.tsv"
    if plain.is_file():
        text = plain.read_text(encoding="utf-8")
    else:
        from importlib import resources
        text = (resources.files(__package__) / "data" / "crosslang_words.tsv").read_text(
            encoding="utf-8")
    return sorted_lines(text)


def _lines_with_word_starting(head: str) -> list[int]:
    """Byte offsets (in file order) of the list's lines holding a gloss word that starts
    with `head`: the words from the first one >= `head` (english.first_line_from), while
    they start with it."""
    if not head or "\n" in head or "\t" in head:
        return []
    text, body = _words()
    lo = first_line_from(text, body, head)
    offsets: set[int] = set()
    while lo < len(text):
        end = text.find("\n", lo)
        word, _, where = text[lo:end].partition("\t")
        if not word.startswith(head):
            break
        offsets.update(map(int, where.split()))
        lo = end + 1
    return sorted(offsets)


def chinese_words(text: str) -> list[str]:
    """The dictionary words of the text's Chinese runs, longest match first, left to right."""
    runs = cjk_runs(text)
    if not runs:
        return []                   # no Chinese: the index is not needed
    known = _lexicon().zh_en
    out: list[str] = []
    for run in runs:
        i = 0
        while i < len(run) - 1:
            for n in range(min(MAX_WORD, len(run) - i), 1, -1):
                if run[i:i + n] in known:
                    out.append(run[i:i + n])
                    i += n
                    break
            else:
                i += 1
    return out


def translations(query: str, terms: list[str]) -> dict[str, list[tuple[str, ...]]]:
    """query term -> phrases (token tuples) in the other script that stand for it."""
    wanted = set(terms)
    out: dict[str, list[tuple[str, ...]]] = {}
    for word in chinese_words(query):
        zh_en = _lexicon().zh_en
        head = word[:2]                     # the bigram the query's tokens hold for it
        if head in wanted and zh_en.get(word):
            out.setdefault(head, []).extend((s,) for s in zh_en[word] if s not in wanted)
    for term in terms:
        if not is_cjk(term) and term.isalpha():
            phrases = [tuple(cjk_bigrams(zh)) for zh in _glossed_by(term)]
            if phrases:
                out.setdefault(term, []).extend(phrases)
    kept = [t for t in terms if out.get(t)][:MAX_TRANSLATED]
    return {t: out[t] for t in kept}
