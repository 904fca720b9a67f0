"""Tree navigators (SPEC §3.1): what a navigator answers, and the keyword one.

A TreeNavigator picks up to 5 category paths for a query. One that understands the query
(the LLM one) may also implement `navigate`, answering in the same single call with search
terms (synonyms, the other language, the names behind a description) and "nothing
relevant", which makes the retrieval's result empty.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Optional, Protocol

import msgspec

from evoclaw_memory.models import PathChoice, TreeNode
from evoclaw_memory.text import category_tokens, query_terms, tokens
from evoclaw_memory.tiers.tree import subtree_counts


class Navigation(msgspec.Struct):
    """A navigator's whole answer: paths, extra search terms, or an explicit "nothing"."""

    choices: list[PathChoice] = []
    terms: list[str] = []
    nothing_relevant: bool = False


class TreeNavigator(Protocol):
    """Chooses the category paths worth searching for a query."""

    method: str          # how results found through it are labelled, e.g. "keyword-tree"

    def choose(self, query: str, nodes: list[TreeNode], limit: int = 5) -> list[PathChoice]:
        """Up to `limit` existing paths, most relevant first. May raise to ask for fallback."""
        ...


def navigate(navigator: TreeNavigator, query: str, nodes: list[TreeNode]) -> Navigation:
    """The navigator's full answer: its `navigate` when it has one, else its paths."""
    full = getattr(navigator, "navigate", None)
    if callable(full):
        answer = full(query, nodes)
        if isinstance(answer, Navigation):
            return answer
    return Navigation(choices=navigator.choose(query, nodes))


@functools.lru_cache(maxsize=2048)
def path_terms(path: str, description: str = "") -> frozenset[str]:
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
        matched = [(node, terms & path_terms(node.path, node.description)) for node in nodes]
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
