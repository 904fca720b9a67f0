"""Retrieval (SPEC §3): tree navigation, then full-text ranking, then fallbacks.

1. A TreeNavigator picks up to 5 category paths (the keyword one here; the LLM one plugs in
   through the same protocol and falls back to the keyword one when it fails).
2. Facts under those paths are ranked by text relevance × decay score.
3. When that finds too little: full-text over all warm facts, then over cold facts.
Every result says how it was found (method) and through which path.
"""

from __future__ import annotations

import math
import time
from typing import Optional, Protocol

from .errors import EvoclawError
from .limits import TIER_HOT
from .models import Fact, PathChoice, RetrievalResult, TreeNode
from .scoring import score
from .store import LocalStore
from .text import fts_match_expression, query_terms, tokens
from .tree import subtree_counts

CANDIDATES_PER_STEP = 60
DEFAULT_MIN_RELEVANCE = 0.2
TREE_BOOST = 0.15        # a fact found under a chosen path ranks a little higher


class TreeNavigator(Protocol):
    """Chooses the category paths worth searching for a query."""

    method: str          # how results found through it are labelled, e.g. "keyword-tree"

    def choose(self, query: str, nodes: list[TreeNode], limit: int = 5) -> list[PathChoice]:
        """Up to `limit` existing paths, most relevant first. May raise to ask for fallback."""
        ...


class KeywordNavigator:
    """Deterministic tree search: query words against path segments and descriptions."""

    method = "keyword-tree"

    def __init__(self, now: Optional[float] = None):
        self._now = now

    def choose(self, query: str, nodes: list[TreeNode], limit: int = 5) -> list[PathChoice]:
        terms = set(query_terms(query))
        if not terms or not nodes:
            return []
        now = self._now or time.time()
        totals = subtree_counts(nodes)
        biggest = max((w + c for w, c in totals.values()), default=0) or 1
        choices = []
        for node in nodes:
            node_terms = set(tokens(node.path.replace("/", " ").replace("-", " ")
                                    .replace("_", " ") + " " + node.description))
            hits = terms & node_terms
            if not hits:
                continue
            overlap = len(hits) / len(terms)
            w, c = totals[node.path]
            size_boost = 0.1 * math.log1p(w + c) / math.log1p(biggest)
            idle_days = max(0.0, (now - node.last_access) / 86_400)
            recency_boost = 0.05 * math.exp(-idle_days / 30)
            relevance = min(1.0, overlap * 0.85 + size_boost + recency_boost)
            choices.append(PathChoice(path=node.path, relevance=round(relevance, 3),
                                      reason="matches " + ", ".join(sorted(hits))))
        choices.sort(key=lambda c: (-c.relevance, c.path.count("/") * -1, c.path))
        # A chosen path already covers its descendants: keep the most specific useful ones.
        return choices[:limit]


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
        match = fts_match_expression(terms)
        weights = self._term_weights(terms)
        method, choices = self.navigate(query, self.store.tree_nodes())
        found: dict[str, RetrievalResult] = {}

        def collect(rows, how: str, path: Optional[str], boost: float) -> None:
            for fact, _bm25 in rows:
                if fact.id in found:
                    continue
                relevance = _coverage(weights, fact)
                if relevance < self.min_relevance:
                    continue
                value = score(fact.importance, fact.created_at, fact.access_count, now,
                              self.decay_days, self.access_boost)
                found[fact.id] = RetrievalResult(fact=fact, method=how, path=path or fact.category,
                                                 relevance=round(relevance, 4),
                                                 score=self._rank(relevance, value, boost))

        if choices:
            paths = [c.path for c in choices]
            for tier in ("warm", "cold"):
                rows = self.store.search(match, tier=tier, categories=paths,
                                         limit=CANDIDATES_PER_STEP)
                for fact, bm in rows:
                    via = next((c for c in choices if fact.category == c.path
                                or fact.category.startswith(c.path + "/")), choices[0])
                    collect([(fact, bm)], method, via.path, TREE_BOOST * via.relevance)
        if len(found) < limit:
            collect(self.store.search(match, tier="warm", exclude=found,
                                      limit=CANDIDATES_PER_STEP), "fts-warm", None, 0.0)
        if len(found) < limit:
            collect(self.store.search(match, tier="cold", exclude=found,
                                      limit=CANDIDATES_PER_STEP), "cold", None, 0.0)
        ranked = sorted(found.values(), key=lambda r: -r.score)
        return ranked[:limit]

    def _rank(self, relevance: float, value: float, boost: float) -> float:
        """Final order: text relevance times a softened decay score, plus the tree boost.

        A raw `relevance × score` would bury every fact older than a few months (the decay
        reaches ~0), yet the archive is there to be found; so the score moves the rank by
        at most 40%, which is enough for a newer fact to beat the one it replaces.
        """
        return round(relevance * (0.6 + 0.4 * min(1.0, value / TIER_HOT)) + boost * relevance, 6)

    def _term_weights(self, terms: list[str]) -> dict[str, float]:
        """IDF weight of each query term over all stored facts (rare words count more)."""
        total = max(1, self.store.conn.execute("SELECT max(rowid) FROM facts").fetchone()[0] or 1)
        df = self.store.document_frequencies(terms)
        return {t: math.log(1 + total / (1 + df.get(t, 0))) for t in terms}


def _coverage(weights: dict[str, float], fact: Fact) -> float:
    """IDF-weighted share of the query's terms that the fact contains (0..1)."""
    fact_tokens = set(tokens(f"{fact.text} {fact.category.replace('/', ' ')} "
                             f"{' '.join(fact.metadata.urls + fact.metadata.paths + fact.metadata.commands)}"))
    total = sum(weights.values()) or 1.0
    return sum(w for t, w in weights.items() if t in fact_tokens) / total
