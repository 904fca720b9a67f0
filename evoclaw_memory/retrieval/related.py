"""English words related by WordNet stand in, weakly, for a query word that no fact holds.

"Can my son have cereal with ordinary semi-skimmed?" and "Oscar is mildly lactose intolerant:
... plain milk" share no telling word; WordNet's "skim" is "used of milk and milk products
from which the cream has been removed". A general word list (data/wordnet.tsv.gz: for each
common WordNet lemma, over all its senses, its synonyms, direct hypernyms and telling gloss
words, derived from WordNet 3.0 by scripts/build_wordnet.py, nothing picked by hand) supplies
such stand-ins. Used at query time only: no index change, no migration.

WordNet does not say which sense a query means, so a word's relatives are many and most are
noise ("dinner" -> "party"). The retriever gates them (retriever.py, `_related`): only when
no result holds much of the query's weight, only for query words no fact holds, only the
relatives that few facts hold (a rare word shared by a fact and a relative of the query's is
telling; a common one matches anything), and for rank only, below the word itself.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

from evoclaw_memory.text import STEMMED_STOPWORDS, is_cjk, stem

SYNONYM_CREDIT = 0.5          # × a query word's bm25 credit: same synset
HYPERNYM_CREDIT = 0.4         # ... a direct hypernym ("amoxicillin" -> "penicillin")
GLOSS_CREDIT = 0.3            # ... a telling word of a definition ("skim" -> "milk")
CREDITS = (SYNONYM_CREDIT, HYPERNYM_CREDIT, GLOSS_CREDIT)
MAX_EXPANDED = 3              # query words expanded per query
MAX_RELATIVES = 48            # relatives looked up per expanded word (commonest senses first)


# The word list (data/wordnet.tsv.gz) is ONE gzip stream of many members: the first holds
# the licence notice, the columns and an index line ("# index" + JSON: each later member's
# first key, offset after the first member, and length); each later member holds ~16 KB of
# lines "stem<TAB>word<TAB>synonyms<TAB>hypernyms<TAB>gloss words", sorted by stem, the stem
# being text.stem(word) (the first word of a stem wins). `gzip -dc` prints it whole; a query
# decompresses only the member its word is in (~0.2 ms) where parsing and stemming the whole
# list cost ~40-100 ms, which a CLI `retrieve` paid whenever the gate opened.
INDEX_PREFIX = "# index "


@functools.cache
def _chunks() -> tuple[list[str], list[tuple[int, int]], bytes]:
    """(first key of each member, (offset, length) of each, the bytes after the header)."""
    import json
    import zlib
    path = Path(__file__).with_name("data") / "wordnet.tsv.gz"
    if path.is_file():          # the usual install: a plain file beside the module
        raw = path.read_bytes()
    else:                       # a zipped install
        from importlib import resources
        raw = (resources.files(__package__) / "data" / "wordnet.tsv.gz").read_bytes()
    head = zlib.decompressobj(wbits=31)          # gzip: the first member only
    header = head.decompress(raw).decode("utf-8")
    rest = head.unused_data
    line = next(ln for ln in header.splitlines() if ln.startswith(INDEX_PREFIX))
    index = json.loads(line[len(INDEX_PREFIX):])
    return [k for k, _, _ in index], [(o, n) for _, o, n in index], rest


@functools.cache
def _chunk(i: int) -> dict[str, tuple[str, ...]]:
    import zlib
    _, spans, rest = _chunks()
    offset, length = spans[i]
    out: dict[str, tuple[str, ...]] = {}
    for line in zlib.decompress(rest[offset:offset + length], wbits=31).decode("utf-8").splitlines():
        key, _word, *columns = line.split("\t")
        out[key] = tuple(columns)
    return out


def lookup(term: str) -> Optional[tuple[str, ...]]:
    """The (synonyms, hypernyms, gloss words) columns of the word whose stem is `term`."""
    import bisect
    keys, _, _ = _chunks()
    i = bisect.bisect_right(keys, term) - 1
    return _chunk(i).get(term) if i >= 0 else None


def related(terms: list[str], df: dict[str, int]) -> dict[str, list[tuple[float, str]]]:
    """query term -> [(credit, related word as the index holds it)], best-trusted first.

    `df`: how many facts hold each query term; only terms no fact holds are expanded."""
    out: dict[str, list[tuple[float, str]]] = {}
    for term in terms:
        if len(out) >= MAX_EXPANDED:
            break
        if df.get(term) or is_cjk(term) or not term.isalpha() or term in STEMMED_STOPWORDS:
            continue
        columns = lookup(term)
        if not columns:
            continue
        seen = set(terms)
        found: list[tuple[float, str]] = []
        for credit, column in zip(CREDITS, columns):
            for word in map(stem, column.split()):
                if word not in seen and word not in STEMMED_STOPWORDS:
                    seen.add(word)
                    found.append((credit, word))
        if found:
            # Synonyms are the surest, so they come first, then hypernyms, then gloss words.
            out[term] = found[:MAX_RELATIVES]
    return out
