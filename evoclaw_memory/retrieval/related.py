"""English words related by WordNet stand in, weakly, for a query word that no fact holds.

"Can my son have cereal with ordinary semi-skimmed?" and "Oscar is mildly lactose intolerant:
... plain milk" share no telling word; WordNet's "skim" is "used of milk and milk products
from which the cream has been removed". A general word list (data/wordnet.tsv.gz: for each
common WordNet lemma, over all its senses, its synonyms, direct hypernyms and telling gloss
words, derived from WordNet 3.0 by scripts/build_wordnet.py, nothing picked by hand) supplies
such stand-ins. Used at query time only: no index change, no migration.

WordNet does not say which sense a query means, so a word's relatives are many and most are
noise ("dinner" -> "party"). The retriever gates them (retriever.py, `_related`): only when
no result holds much of the query's weight, only for query words few facts hold, only the
relatives that few facts hold (a rare word shared by a fact and a relative of the query's is
telling; a common one matches anything), and for rank only, below the word itself.

Words used alike (english.neighbours: "teeth" -> "dentist", "yarn" -> "knit", "mother" ->
"mum", made once from a sentence model by scripts/build_neighbours.py) join the same way,
first, and also count towards relevance at their credit: they are far less often another
sense's word than WordNet's relatives, and they let a question find a fact that shares no
word with it at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Optional

from evoclaw_memory import english
from evoclaw_memory.text import STEMMED_STOPWORDS, is_cjk, stem

SYNONYM_CREDIT = 0.5          # × a query word's bm25 credit: same synset
HYPERNYM_CREDIT = 0.4         # ... a direct hypernym ("amoxicillin" -> "penicillin")
GLOSS_CREDIT = 0.3            # ... a telling word of a definition ("skim" -> "milk")
CREDITS = (SYNONYM_CREDIT, HYPERNYM_CREDIT, GLOSS_CREDIT)
NEIGHBOUR_CREDIT = 0.6        # × similarity (0.6..0.9): a word used alike ("teeth" -> "dentist")
MAX_EXPANDED = 3              # query words expanded per query
EXPAND_MAX_DF = 5             # ... each held by at most this many facts
MAX_RELATIVES = 48            # relatives looked up per expanded word (commonest senses first)


# The word list (data/wordnet.tsv.gz) is member-indexed (english.indexed_lookup): a query
# decompresses only the member its word is in (~0.2 ms) where parsing and stemming the whole
# list cost ~40-100 ms, which a CLI `retrieve` paid whenever the gate opened. Its lines are
# "stem<TAB>word<TAB>synonyms<TAB>hypernyms<TAB>gloss words", the stem being text.stem(word).
INDEX_PREFIX = english.INDEX_PREFIX
WORDNET_FILE = Path(__file__).with_name("data") / "wordnet.tsv.gz"


def _chunks() -> tuple[list[str], list[tuple[int, int]], int]:
    """(first key of each member, (offset, length) of each, where the members start)."""
    return english._members(WORDNET_FILE)


def _chunk(i: int) -> dict[str, tuple[str, ...]]:
    return english.member(WORDNET_FILE, i)


def lookup(term: str) -> Optional[tuple[str, ...]]:
    """The (synonyms, hypernyms, gloss words) columns of the word whose stem is `term`."""
    return english.indexed_lookup(WORDNET_FILE, term)


class Relative(NamedTuple):
    """A word standing in for a query word: its credit (a share of the word's weight in the
    ranking) and whether it is a word used alike (english.neighbours), which also counts
    towards relevance; WordNet's relatives are too often another sense's (rank only)."""

    credit: float
    word: str
    used_alike: bool = False


def related(terms: list[str], df: dict[str, int]) -> dict[str, list[Relative]]:
    """query term -> [(credit, related word as the index holds it)], best-trusted first.

    `df`: how many facts hold each query term; only terms at most EXPAND_MAX_DF facts hold
    are expanded, the rarest first (a word no fact holds most of all)."""
    out: dict[str, list[Relative]] = {}
    # The words few facts hold first (a word no fact holds most of all): a query word the
    # memory holds often is already found by its own spelling.
    for term in sorted(terms, key=lambda t: df.get(t, 0)):
        if len(out) >= MAX_EXPANDED:
            break
        if df.get(term, 0) > EXPAND_MAX_DF or is_cjk(term) or not term.isalpha() \
                or term in STEMMED_STOPWORDS:
            continue
        columns = lookup(term) or ()
        seen = set(terms)
        found: list[Relative] = []
        for similarity, word in english.neighbours(term):
            if word not in seen and word not in STEMMED_STOPWORDS:
                seen.add(word)
                found.append(Relative(round(NEIGHBOUR_CREDIT * similarity, 3), word, True))
        for credit, column in zip(CREDITS, columns):
            for word in map(stem, column.split()):
                if word not in seen and word not in STEMMED_STOPWORDS:
                    seen.add(word)
                    found.append(Relative(credit, word))
        if found:
            # The surest first: near neighbours and synonyms, hypernyms, gloss words.
            found.sort(key=lambda r: -r.credit)
            out[term] = found[:MAX_RELATIVES]
    return out
