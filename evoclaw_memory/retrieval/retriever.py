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

import functools
import math
import time
import weakref
from typing import Optional, Protocol

from evoclaw_memory.errors import EvoclawError
from evoclaw_memory.limits import TIER_HOT
from evoclaw_memory.models import PathChoice, RetrievalResult, TreeNode
from evoclaw_memory.retrieval.entities import EntityHook
from evoclaw_memory.tiers.scoring import score
from evoclaw_memory.store.local import LocalStore, fact_from_row
from evoclaw_memory.text import (STEMMED_STOPWORDS, category_tokens, fts_match_expression, fts_phrase,
                   is_cjk, query_terms, tokens)
from evoclaw_memory.tiers.tree import subtree_counts

DEFAULT_MIN_RELEVANCE = 0.1   # IDF-weighted share of the query's words a result must hold
RANK_BUDGET = 1_000           # rows the index may bm25-rank in one query (bounds latency)
EXACT_COUNT = 2_000           # words in more facts than this have their count estimated
CACHE_COUNT = 200             # counts from this up are cached between queries
CANDIDATES = 48               # best bm25 matches on the rarer words
RECENT_CANDIDATES = 24        # newest facts holding a rarer and a common word
PATH_CANDIDATES = 12          # newest matches under each path a non-keyword navigator chose
TREE_BOOST = 0.2              # × path relevance: a fact under a chosen path ranks higher
BM25_K1, BM25_B = 1.2, 0.75   # FTS5's own constants
UPDATE_SIMILARITY = 0.3       # share of content words a newer fact shares with one it updates
UPDATE_MARGIN = 1.6           # ... and an older fact scoring up to this much more still yields
UPDATE_POOL = 20              # how many of the best candidates are compared for updates
DF_REFRESH = 0.05             # cached counts of common words are kept until the index grows 5%


class TreeNavigator(Protocol):
    """Chooses the category paths worth searching for a query."""

    method: str          # how results found through it are labelled, e.g. "keyword-tree"

    def choose(self, query: str, nodes: list[TreeNode], limit: int = 5) -> list[PathChoice]:
        """Up to `limit` existing paths, most relevant first. May raise to ask for fallback."""
        ...


@functools.lru_cache(maxsize=2048)
def _path_terms(path: str, description: str = "") -> frozenset[str]:
    """Search tokens of a tree path's segments (and description); cached: trees change rarely."""
    return frozenset(category_tokens(path)) | frozenset(tokens(description))


class KeywordNavigator:
    """Deterministic tree search: query words against path segments and descriptions."""

    method = "keyword-tree"

    def __init__(self, now: Optional[float] = None):
        self._now = now

    def choose(self, query: str, nodes: list[TreeNode], limit: int = 5) -> list[PathChoice]:
        terms = set(query_terms(query))
        if not terms or not nodes:
            return []
        matched = [(node, terms & _path_terms(node.path, node.description)) for node in nodes]
        matched = [(node, hits) for node, hits in matched if hits]
        if not matched:
            return []
        now = self._now or time.time()
        totals = subtree_counts(nodes)
        biggest = max((w + c for w, c in totals.values()), default=0) or 1
        choices = []
        for node, hits in matched:
            overlap = len(hits) / len(terms)
            w, c = totals[node.path]
            size_boost = 0.1 * math.log1p(w + c) / math.log1p(biggest)
            idle_days = max(0.0, (now - node.last_access) / 86_400)
            recency_boost = 0.05 * math.exp(-idle_days / 30)
            relevance = min(1.0, overlap * 0.85 + size_boost + recency_boost)
            choices.append(PathChoice(path=node.path, relevance=round(relevance, 3),
                                      reason="matches " + ", ".join(sorted(hits))))
        choices.sort(key=lambda c: (-c.relevance, c.path.count("/") * -1, c.path))
        return choices[:limit]


class _Corpus:
    """Per-store cache of the counts of common words (they barely move as facts arrive)."""

    def __init__(self) -> None:
        self.rows = 0
        self.common: dict[str, int] = {}


_CORPORA: "weakref.WeakKeyDictionary[LocalStore, _Corpus]" = weakref.WeakKeyDictionary()


class _Candidate:
    """A fact row being ranked: row = (rowid, *fact columns, index body)."""

    __slots__ = ("row", "body", "category", "created_at", "rank", "relevance", "choice")

    def __init__(self, row: tuple):
        self.row = row
        self.body = row[12].split()          # the index body is pre-tokenised text
        self.category: str = row[3]
        self.created_at: float = row[5]
        self.rank = 0.0
        self.relevance = 0.0
        self.choice: Optional[PathChoice] = None


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
        if self.navigator is not self.fallback:
            try:
                return self.navigator.method, self.navigator.choose(query, nodes)
            except EvoclawError:
                pass
        return self.fallback.method, self.fallback.choose(query, nodes)

    def retrieve(self, query: str, limit: int = 5, now: Optional[float] = None) -> list[RetrievalResult]:
        """Ranked results for `query`, best first (does not reinforce: the caller does)."""
        now = now or time.time()
        terms = query_terms(query)
        if not terms:
            return []
        rows, avg_len = self.store.corpus_stats()
        df = self._frequencies(terms, rows)
        known = sorted((t for t in terms if df.get(t)), key=lambda t: (df[t], t))
        if not known:
            return []                       # no query word is in any fact: nothing to find
        method, choices = self.navigate(query, self.store.tree_nodes())
        rowids = self._candidate_rowids(known, df, choices, method)
        entities = EntityHook(self.store, query)         # the entity graph's candidates
        rowids = list(dict.fromkeys(rowids + entities.candidates()))
        if not rowids:
            return []
        candidates = [_Candidate(r) for r in self.store.live_rows_with_bodies(rowids)]
        self._score(candidates, terms, df, rows, avg_len, choices, now)
        boost = entities.boost([c.row[0] for c in candidates])
        for c in candidates:
            c.rank *= boost.get(c.row[0], 1.0)
        candidates = [c for c in candidates if c.relevance >= self.min_relevance]
        candidates.sort(key=_order)
        _yield_to_updates(candidates[:UPDATE_POOL])
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
                          choices: list[PathChoice], method: str) -> list[int]:
        """Rowids worth scoring, from a few full-text queries of bounded cost."""
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
        else:
            # Only common words: the newest facts holding all of them (or, failing that,
            # the rarest ones) form the pool; scoring then prefers the best of them.
            found.update(dict.fromkeys(search(_all(common), order="recent", limit=CANDIDATES)))
            if len(found) < RECENT_CANDIDATES and len(common) > 1:
                found.update(dict.fromkeys(search(_any(common[:2]), order="recent",
                                                  limit=CANDIDATES)))
        if choices and method != self.fallback.method:
            # A navigator that understands the query may pick a path whose facts share few
            # of its words: look there too (the keyword navigator only picks paths whose
            # words the query holds, which the searches above already cover).
            for choice in choices:
                words = sorted(_path_terms(choice.path))
                if words:
                    found.update(dict.fromkeys(search(f"{_all(words)} AND ({_any(known)})",
                                                      order="recent", limit=PATH_CANDIDATES)))
        return list(found)

    def _score(self, candidates: list[_Candidate], terms: list[str], df: dict[str, int],
               rows: int, avg_len: float, choices: list[PathChoice], now: float) -> None:
        """Set each candidate's relevance (0..1), rank and chosen path."""
        n = max(rows, 1)
        # Lucene's BM25 idf: like FTS5's, but never zero or negative, so a word held by half of
        # a young agent's few facts still counts a little.
        idf = {t: math.log(1 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}
        weight = {t: 0.0 if not df.get(t) and is_cjk(t) else math.log(1 + n / (1 + df.get(t, 0)))
                  for t in terms}
        # A CJK bigram no fact holds is almost always one that straddles two words: it says
        # nothing about whether the memory knows the answer, so it does not count.
        total_weight = sum(weight.values()) or 1.0
        k1, b, avg = BM25_K1, BM25_B, max(avg_len, 1.0)
        for c in candidates:
            body = c.body
            norm = k1 * (1 - b + b * len(body) / avg)
            bm25 = held = 0.0
            for t in terms:
                tf = body.count(t)
                if tf:
                    bm25 += idf[t] * tf * (k1 + 1) / (tf + norm)
                    held += weight[t]
            c.relevance = held / total_weight
            row = c.row
            value = score(row[4], row[5], row[7], now, self.decay_days, self.access_boost)
            rank = bm25 * (0.6 + 0.4 * min(1.0, value / TIER_HOT))
            c.choice = next((ch for ch in choices if c.category == ch.path
                             or c.category.startswith(ch.path + "/")), None)
            if c.choice is not None:
                rank *= 1 + TREE_BOOST * max(0.0, min(1.0, c.choice.relevance))
            c.rank = rank


def _order(c: _Candidate) -> tuple:
    """Best rank first; on a tie the newer fact, then the later-stored one."""
    return (-c.rank, -c.created_at, -c.row[0])


def _yield_to_updates(pool: list[_Candidate]) -> None:
    """Put an older fact just below a newer, similar one in the same category.

    Agents write updates as new facts ("Biscuit now gets 100 g", "the dentist is now Dr
    Okafor") and old facts are not always marked superseded; the two share most of their
    words, so on words alone the older one often wins. When a newer fact in the same
    category shares at least UPDATE_SIMILARITY of the content words of the shorter one and
    the older fact does not beat it by more than UPDATE_MARGIN, the newer one goes first.
    """
    by_category: dict[str, list[_Candidate]] = {}
    for c in pool:
        by_category.setdefault(c.category, []).append(c)
    for group in by_category.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda c: c.created_at)
        content = [frozenset(c.body) - _path_terms(c.category) - STEMMED_STOPWORDS
                   for c in group]
        for i in reversed(range(len(group) - 1)):     # newest first: chains keep their order
            old = group[i]
            for j in range(i + 1, len(group)):
                new = group[j]
                if (new.created_at <= old.created_at
                        or not new.rank <= old.rank <= UPDATE_MARGIN * new.rank):
                    continue
                a, b = content[i], content[j]
                if a and b and len(a & b) >= UPDATE_SIMILARITY * min(len(a), len(b)):
                    old.rank = new.rank * 0.99


_any = fts_match_expression


def _all(terms: list[str]) -> str:
    return " AND ".join(map(fts_phrase, terms))
