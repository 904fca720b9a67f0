"""LLM tree search (SPEC §3.1): one call per retrieval picks up to 5 existing paths.

Plugs into the Retriever through the TreeNavigator protocol. Every failure (timeout,
HTTP error, no JSON, only invented paths) raises LLMError, which makes the Retriever run
the keyword navigator in the same `retrieve` call; results are labelled `llm-tree` only
when the LLM's answer was used.
"""

from __future__ import annotations

import logging
from typing import Optional

import msgspec

from evoclaw_memory.errors import EvoclawError, LLMError
from evoclaw_memory.llm.client import LLMClient
from evoclaw_memory.llm.prompts import (NAV_MAX_PATHS, navigation_messages, navigation_schema,
                          parse_navigation, prompt_tokens)
from evoclaw_memory.models import PathChoice, TreeNode
from evoclaw_memory.retrieval.navigators import Navigation

log = logging.getLogger(__name__)

# One short JSON object: 5 paths and 6 short terms fit easily.
NAV_MAX_TOKENS = 200


class NavigationOutcome(msgspec.Struct):
    """How the last tree search went (for benchmarks, `doctor` and debugging)."""

    used: bool                        # the LLM's answer was used (even if it said "nothing")
    nothing_relevant: bool = False
    paths: list[str] = []
    terms: list[str] = []             # search terms the answer added
    dropped: int = 0                  # picks naming no existing path
    prompt_tokens_estimate: int = 0
    error: Optional[str] = None


class LLMNavigator:
    """TreeNavigator backed by an OpenAI-compatible LLM."""

    method = "llm-tree"

    def __init__(self, client: LLMClient, *, timeout: Optional[float] = None,
                 attempts: int = 1):
        # One attempt by default: a retry would double a slow retrieval, and the keyword
        # navigator is a good answer when the LLM is slow or down.
        self.client = client
        self.timeout = timeout
        self.attempts = attempts
        self.last: Optional[NavigationOutcome] = None

    def __repr__(self) -> str:
        return f"LLMNavigator({self.client!r})"

    def choose(self, query: str, nodes: list[TreeNode],
               limit: int = NAV_MAX_PATHS) -> list[PathChoice]:
        """Up to `limit` existing paths for `query`; LLMError asks for the keyword fallback."""
        return self.navigate(query, nodes, limit).choices

    def navigate(self, query: str, nodes: list[TreeNode],
                 limit: int = NAV_MAX_PATHS) -> Navigation:
        """The one call's whole answer: paths, search terms, or "nothing relevant"."""
        if not nodes:
            self.last = NavigationOutcome(used=False, error="empty tree")
            return Navigation()        # nothing to choose from: no call spent
        limit = max(1, min(limit, NAV_MAX_PATHS))
        messages = navigation_messages(query, nodes, limit)
        estimate = prompt_tokens(messages)
        try:
            value = self.client.chat_json(
                messages, navigation_schema([n.path for n in nodes], limit), name="tree_search",
                purpose="navigate", max_tokens=NAV_MAX_TOKENS, attempts=self.attempts,
                timeout=self.timeout)
            answer = parse_navigation(value, nodes, limit)
        except EvoclawError as exc:
            self.last = NavigationOutcome(used=False, prompt_tokens_estimate=estimate,
                                          error=str(exc))
            if isinstance(exc, LLMError):
                raise
            raise LLMError(str(exc)) from None
        except Exception as exc:       # a bug or an odd server must not break retrieval
            log.debug("LLM navigation failed unexpectedly", exc_info=True)
            self.last = NavigationOutcome(used=False, prompt_tokens_estimate=estimate,
                                          error=f"{type(exc).__name__}: {exc}")
            raise LLMError(f"LLM tree search failed: {type(exc).__name__}") from None
        if not answer.nothing_relevant and not answer.choices:
            self.last = NavigationOutcome(used=False, dropped=answer.dropped,
                                          prompt_tokens_estimate=estimate,
                                          error="no existing path in the answer")
            raise LLMError("the LLM named no existing tree path")
        self.last = NavigationOutcome(used=True, nothing_relevant=answer.nothing_relevant,
                                      paths=[c.path for c in answer.choices],
                                      terms=list(answer.terms), dropped=answer.dropped,
                                      prompt_tokens_estimate=estimate)
        return Navigation(choices=answer.choices, terms=list(answer.terms),
                          nothing_relevant=answer.nothing_relevant)
