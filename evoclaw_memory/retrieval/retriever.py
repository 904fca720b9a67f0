"""Retrieval (SPEC §3): tree navigation, a bounded full-text candidate search, ranking.

1. A TreeNavigator picks up to 5 category paths (the keyword one here; the LLM one plugs in
   through the same protocol and falls back to the keyword one when it fails). The tree is a
   boost, not a filter: a fact under a chosen path ranks higher and is labelled with the
   navigator's method and the path; a fact elsewhere can still win on its words.
2. Candidates come from the full-text index, over every tier at once, in two or three
   queries whose cost does not grow with the store: the index's bm25 ranking of the rows
   holding the query's rarer words (words held by more than RANK_BUDGET facts are left out
   of that MATCH: the index would score every row they hit); the newest facts holding a rare
   word and a common one (or, when every word is common, all of them); and, for a navigator
   that is not the keyword one, the newest matching facts under each path it chose.
3. Each candidate is scored from its stored index body, already tokenised: BM25 over all the
   query's words (common ones count, weakly) × a softened decay score × the tree boost. An
   older fact that a newer, similar fact in the same category probably updates is put just
   below it. Candidates holding less than `min_relevance` of the query's IDF weight are
   dropped, so a query that shares no telling word with the memory returns nothing.
Results found under a chosen path carry the navigator's method and that path; the others
`fts-warm` or `cold`, after the tier they live in. Superseded facts never come back.
"""

from __future__ import annotations

import math
import time
import weakref
from typing import Optional

from evoclaw_memory.errors import EvoclawError
from evoclaw_memory.limits import TIER_HOT
from evoclaw_memory.models import PathChoice, RetrievalResult, TreeNode
from evoclaw_memory.retrieval.navigators import (KeywordNavigator, Navigation, TreeNavigator,
                                                 navigate, path_terms)
from evoclaw_memory.retrieval.wording import (MAX_EXTRA_TERMS, alias_alternatives, name_ngrams,
                                              navigator_terms, yield_to_updates)
from evoclaw_memory.retrieval.entities import EntityHook
from evoclaw_memory.tiers.scoring import score
from evoclaw_memory.store.local import LocalStore, fact_from_row
from evoclaw_memory.text import fts_match_expression, fts_phrase, is_cjk, query_terms

__all__ = ["KeywordNavigator", "Navigation", "Retriever", "TreeNavigator"]

DEFAULT_MIN_RELEVANCE = 0.1   # IDF-weighted share of the query's words a result must hold
RANK_BUDGET = 1_000           # rows the index may bm25-rank in one query (bounds latency)
EXACT_COUNT = 2_000           # words in more facts than this have their count estimated
CACHE_COUNT = 200             # counts from this up are cached between queries
CANDIDATES = 48               # best bm25 matches on the rarer words
RECENT_CANDIDATES = 24        # newest facts holding a rarer and a common word
PATH_CANDIDATES = 12          # newest matches under each path a non-keyword navigator chose
PATH_FACTS = 8                # newest facts of each (tier, category) under such a path
PATH_CATEGORIES = 4           # categories of each chosen path's subtree read that way
PATH_PRIOR = 4              # bm25-like credit of being under a path a navigator chose
PATH_RELEVANCE = 0.5          # × path relevance: the relevance such a fact has at least
TREE_BOOST = 0.2              # × path relevance: a fact under a chosen path ranks higher
UNKNOWN_WEIGHT = 0.6          # share of its weight a query word no fact holds still counts
ALIAS_CREDIT = 0.8            # a stated alias of a query word counts this much of the word
TERM_CREDIT = 0.5             # a navigator's search term counts this much of a query word
BM25_K1, BM25_B = 1.2, 0.5    # k1 as FTS5; b lower: short facts, length says little
UPDATE_POOL = 20              # how many of the best candidates are compared for updates
DF_REFRESH = 0.05             # cached counts of common words are kept until the index grows 5%

_path_terms = path_terms      # the old private name, kept for callers and tests


class _Corpus:
    """Per-store cache of the counts of common words (they barely move as facts arrive)."""

    def __init__(self) -> None:
        self.rows = 0
        self.common: dict[str, int] = {}


_CORPORA: "weakref.WeakKeyDictionary[LocalStore, _Corpus]" = weakref.WeakKeyDictionary()


class _Candidate:
    """A fact row being ranked: row = (rowid, *fact columns, index body, pinned)."""

    __slots__ = ("row", "body", "category", "created_at", "rank", "relevance", "choice")

    def __init__(self, row: tuple):
        self.row = row
        self.body = row[12].split()          # the index body is pre-tokenised text
        self.category: str = row[3]
        self.created_at: float = row[5]
        self.rank = 0.0
        self.relevance = 0.0
        self.choice: Optional[PathChoice] = None


class _Query:
    """A query's words and what may stand in for them."""

    def __init__(self, terms: list[str], alternatives: dict[str, list[tuple[str, ...]]],
                 extra: list[str]):
        self.terms = terms                        # the query's own words
        self.alternatives = alternatives          # word -> stated aliases (token tuples)
        self.extra = extra                        # a navigator's search terms
        alias_words = {t for phrases in alternatives.values() for p in phrases for t in p}
        self.searched = list(dict.fromkeys([*terms, *sorted(alias_words), *extra]))


class Retriever:
    """Runs the retrieval pipeline over one LocalStore."""

    def __init__(self, store: LocalStore, navigator: TreeNavigator, fallback: TreeNavigator,
                 *, decay_days: float = 30.0, access_boost: float = 0.1,
                 min_relevance: float = DEFAULT_MIN_RELEVANCE):
        self.store = store
        self.navigator = navigator
        self.fallback = fallback
        self.decay_days = decay_days
        self.access_boost = access_boost
        self.min_relevance = min_relevance

    def navigate(self, query: str, nodes: list[TreeNode]) -> tuple[str, list[PathChoice]]:
        """(method, paths) from the navigator, or from the fallback when it fails."""
        method, nav = self._navigate(query, nodes)
        return method, nav.choices

    def _navigate(self, query: str, nodes: list[TreeNode]) -> tuple[str, Navigation]:
        if self.navigator is not self.fallback:
            try:
                return self.navigator.method, navigate(self.navigator, query, nodes)
            except EvoclawError:
                pass
        return self.fallback.method, Navigation(choices=self.fallback.choose(query, nodes))

    def retrieve(self, query: str, limit: int = 5, now: Optional[float] = None) -> list[RetrievalResult]:
        """Ranked results for `query`, best first (does not reinforce: the caller does)."""
        now = now or time.time()
        terms = query_terms(query)
        if not terms:
            return []
        nodes = self.store.tree_nodes()
        method, nav = self._navigate(query, nodes)
        if nav.nothing_relevant:
            return []                       # the navigator read the tree: nothing there
        understood = method != self.fallback.method
        choices = nav.choices
        q = _Query(terms, alias_alternatives(self.store.aliases_of(name_ngrams(query)), terms),
                   navigator_terms(nav.terms, terms)[:MAX_EXTRA_TERMS])
        rows, avg_len = self.store.corpus_stats()
        df = self._frequencies(q.searched, rows)
        known = sorted((t for t in q.searched if df.get(t)), key=lambda t: (df[t], t))
        if not known and not (understood and choices):
            return []                       # no query word is in any fact: nothing to find
        rowids = self._candidate_rowids(known, df, choices if understood else [], nodes)
        entities = EntityHook(self.store, query)         # the entity graph's candidates
        rowids = list(dict.fromkeys(rowids + entities.candidates()))
        if not rowids:
            return []
        candidates = [_Candidate(r) for r in self.store.live_rows_with_bodies(rowids)]
        self._score(candidates, q, df, rows, avg_len, choices, understood, now)
        boost = entities.boost([c.row[0] for c in candidates])
        for c in candidates:
            c.rank *= boost.get(c.row[0], 1.0)
        candidates = [c for c in candidates if c.relevance >= self.min_relevance]
        candidates.sort(key=_order)
        yield_to_updates(candidates[:UPDATE_POOL], set(q.searched),
                         {c.category: path_terms(c.category) for c in candidates[:UPDATE_POOL]})
        candidates.sort(key=_order)
        results = []
        for c in candidates[:limit]:
            fact = fact_from_row(c.row[1:12])
            if c.choice is not None:
                how, path = method, c.choice.path
            else:
                how, path = ("fts-warm" if fact.tier == "warm" else "cold"), fact.category
            results.append(RetrievalResult(fact=fact, method=how, path=path,
                                           relevance=round(c.relevance, 4),
                                           score=round(c.rank, 6)))
        return results

    # -- steps ---------------------------------------------------------------------------

    def _frequencies(self, terms: list[str], rows: int) -> dict[str, int]:
        """Facts holding each term: exact for rare words, cached estimates for common ones."""
        corpus = _CORPORA.get(self.store)
        if corpus is None:
            corpus = _CORPORA[self.store] = _Corpus()
        if abs(rows - corpus.rows) > DF_REFRESH * max(corpus.rows, 1):
            corpus.rows, corpus.common = rows, {}
        common = corpus.common
        df = {t: common[t] for t in terms if common.get(t) is not None}
        fresh = self.store.document_frequencies([t for t in terms if t not in df],
                                                cap=EXACT_COUNT)
        for term, count in fresh.items():
            if count >= CACHE_COUNT:
                if len(corpus.common) > 4096:
                    corpus.common.clear()
                corpus.common[term] = count
        df.update(fresh)
        return df

    def _candidate_rowids(self, known: list[str], df: dict[str, int],
                          choices: list[PathChoice], nodes: list[TreeNode]) -> list[int]:
        """Rowids worth scoring, from a few queries of bounded cost."""
        rare, total = [], 0
        for term in known:                  # rarest first
            if total + df[term] > RANK_BUDGET:
                break
            rare.append(term)
            total += df[term]
        common = known[len(rare):]
        found: dict[int, None] = {}
        search = self.store.match_rowids
        if rare:
            # The index ranks every row the MATCH hits: only words it can rank cheaply.
            found.update(dict.fromkeys(search(_any(rare), limit=CANDIDATES)))
            if common:
                found.update(dict.fromkeys(search(f"({_any(rare)}) AND ({_any(common)})",
                                                  order="recent", limit=RECENT_CANDIDATES)))
        elif common:
            # Only common words: the newest facts holding all of them (or, failing that,
            # the rarest ones) form the pool; scoring then prefers the best of them.
            found.update(dict.fromkeys(search(_all(common), order="recent", limit=CANDIDATES)))
            if len(found) < RECENT_CANDIDATES and len(common) > 1:
                found.update(dict.fromkeys(search(_any(common[:2]), order="recent",
                                                  limit=CANDIDATES)))
        if choices:
            # A navigator that understands the query may pick a path whose facts share none
            # of its words ("satay" -> health/allergies -> "allergic to peanuts"): the
            # chosen categories are a source of candidates (SPEC §3.2), read newest first
            # through the (tier, category) index so the cost does not grow with the store,
            # plus the newest word matches anywhere under the path (older ones that share a
            # word with the query). The keyword navigator only picks paths whose words the
            # query holds, which the searches above already cover.
            categories = _subtree_categories(choices, nodes)
            found.update(dict.fromkeys(self.store.newest_in_categories(categories, PATH_FACTS)))
            for choice in choices:
                words = sorted(path_terms(choice.path))
                if words and known:
                    found.update(dict.fromkeys(search(f"{_all(words)} AND ({_any(known)})",
                                                      order="recent", limit=PATH_CANDIDATES)))
        return list(found)

    def _score(self, candidates: list[_Candidate], q: _Query, df: dict[str, int],
               rows: int, avg_len: float, choices: list[PathChoice], understood: bool,
               now: float) -> None:
        """Set each candidate's relevance (0..1), rank and chosen path."""
        n = max(rows, 1)
        # Lucene's BM25 idf: like FTS5's, but never zero or negative, so a word held by half of
        # a young agent's few facts still counts a little.
        idf = {t: math.log(1 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5))
               for t in q.searched}
        weight = {t: _weight(t, df.get(t, 0), n) for t in q.searched}
        total_weight = sum(weight[t] for t in q.terms) or 1.0
        alternatives, extra = q.alternatives, q.extra
        k1, b, avg = BM25_K1, BM25_B, max(avg_len, 1.0)
        for c in candidates:
            body = c.body
            norm = k1 * (1 - b + b * len(body) / avg)
            bm25 = held = 0.0
            for t in q.terms:
                tf = body.count(t)
                if tf:
                    bm25 += idf[t] * tf * (k1 + 1) / (tf + norm)
                    held += weight[t]
                elif t in alternatives:
                    # A stated alias stands for the word ("Lily" for "Chen Li"): credited
                    # at the rarer of the two weights, a little below the word itself.
                    phrase = next((p for p in alternatives[t] if all(w in body for w in p)), None)
                    if phrase is not None:
                        a_idf = min(idf[t], min(idf[w] for w in phrase))
                        bm25 += ALIAS_CREDIT * a_idf * (k1 + 1) / (1 + norm)
                        held += ALIAS_CREDIT * weight[t]
            for t in extra:
                tf = body.count(t)
                if tf:
                    bm25 += TERM_CREDIT * idf[t] * tf * (k1 + 1) / (tf + norm)
                    held += TERM_CREDIT * weight[t]
            c.relevance = min(1.0, held / total_weight)
            row = c.row
            # A pinned fact (the vault) never decays: a year old, it ranks as if fresh.
            value = score(row[4], row[5], row[7], now, self.decay_days, self.access_boost,
                          pinned=bool(row[13]))
            c.choice = next((ch for ch in choices if c.category == ch.path
                             or c.category.startswith(ch.path + "/")), None)
            if c.choice is not None:
                path_relevance = max(0.0, min(1.0, c.choice.relevance))
                if understood:
                    # Being under a path the navigator chose is evidence by itself, worth
                    # about one telling word; the facts there compete on words and score.
                    bm25 += PATH_PRIOR * path_relevance
                    c.relevance = max(c.relevance, PATH_RELEVANCE * path_relevance)
                bm25 *= 1 + TREE_BOOST * path_relevance
            c.rank = bm25 * (0.6 + 0.4 * min(1.0, value / TIER_HOT))


def _weight(term: str, df: int, n: int) -> float:
    """How much a query word counts towards relevance (its IDF; less when no fact holds it)."""
    if df:
        return math.log(1 + n / (1 + df))
    if is_cjk(term):
        # A CJK bigram no fact holds is almost always one that straddles two words: it says
        # nothing about whether the memory knows the answer, so it does not count.
        return 0.0
    # A word found nowhere ("satay") is the rarest of all, and counted in full it would sink
    # every fact below the threshold; it counts a little, so a query whose other words are
    # all weak still returns nothing.
    return UNKNOWN_WEIGHT * math.log(1 + n)


def _subtree_categories(choices: list[PathChoice], nodes: list[TreeNode]) -> list[str]:
    """The categories to read under each chosen path: itself, then its biggest descendants."""
    sizes = {node.path: node.warm_count + node.cold_count for node in nodes}
    out: dict[str, None] = {}
    for choice in choices:
        below = sorted((p for p in sizes if p.startswith(choice.path + "/") and sizes[p]),
                       key=lambda p: (-sizes[p], p))
        for path in [choice.path, *below][:PATH_CATEGORIES]:
            out.setdefault(path, None)
    return list(out)


def _order(c: _Candidate) -> tuple:
    """Best rank first; on a tie the newer fact, then the later-stored one."""
    return (-c.rank, -c.created_at, -c.row[0])


_any = fts_match_expression


def _all(terms: list[str]) -> str:
    return " AND ".join(map(fts_phrase, terms))
