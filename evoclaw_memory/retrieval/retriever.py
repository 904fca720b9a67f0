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
   dropped, so a query that shares no telling word with the memory returns nothing. When
   no candidate holds much of the query, WordNet relatives of its words no fact holds that
   few facts hold join, weakly and for rank only (related.py), and the ranking runs again.
Results found under a chosen path carry the navigator's method and that path; the others
`fts-warm` or `cold`, after the tier they live in. Superseded facts never come back.
"""

from __future__ import annotations

import math
import time
from typing import Optional

from evoclaw_memory import english
from evoclaw_memory.errors import EvoclawError
from evoclaw_memory.limits import TIER_HOT
from evoclaw_memory.models import PathChoice, RetrievalResult, TreeNode
from evoclaw_memory.retrieval.navigators import (KeywordNavigator, Navigation, TreeNavigator,
                                                 navigate, path_terms)
from evoclaw_memory.retrieval.wording import (MAX_EXTRA_TERMS, alias_alternatives, alias_closure,
                                              name_ngrams, navigator_terms, only_asks,
                                              yield_to_updates)
from evoclaw_memory.retrieval.crosslang import translations
from evoclaw_memory.retrieval.entities import EntityHook
from evoclaw_memory.tiers.scoring import score
from evoclaw_memory.store.local import LocalStore, fact_from_row
from evoclaw_memory.text import STEMMED_STOPWORDS, fts_match_expression, fts_phrase, is_cjk, query_terms

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
TRANSLATION_CREDIT = 0.7      # a word-list translation (other script) counts this much of it
BM25_K1, BM25_B = 1.2, 0.5    # k1 as FTS5; b lower: short facts, length says little
FEEDBACK_RELEVANCE = 0.5      # the first result holds this share of the query's weight ...
FEEDBACK_MARGIN = 1.3         # ... and outranks the second this much: then feedback runs
FEEDBACK_TERMS = 3            # words it adds (the first result's rarest)
FEEDBACK_LOOKUPS = 12         # words of the first result whose counts are looked up
FEEDBACK_MAX_DF = RANK_BUDGET // 4   # a feedback word held by more says little
FEEDBACK_CREDIT = 0.3         # × a query word's bm25 credit
FEEDBACK_CEILING = 0.999      # × the source's rank: the most a fact ranked up by it reaches
QUESTION_FACTOR = 0.6         # × rank of a fact that only asks ("What do you play?")
RELATED_GATE = 0.75           # no result holds this share of the query's weight: expand
RELATED_MAX_DF = 2            # a WordNet relative held by more facts says little
COORDINATION = 0.5            # rank × (this + the rest × relevance): holding more of the query
ENGLISH_CEILING = 7.2         # Zipf frequency of the commonest words ("the" 7.7 is a stopword)
ENGLISH_MIDDLE = 4.5          # a word this common in English counts as the memory's counts say
ENGLISH_MIN, ENGLISH_MAX = 0.35, 1.0
RELATED_RELEVANCE = 1.0       # × a used-alike word's credit: the share of relevance it holds
UPDATE_POOL = 20              # how many of the best candidates are compared for updates
DF_REFRESH = 0.05             # cached counts of common words are kept until the index grows 5%

_path_terms = path_terms      # the old private name, kept for callers and tests


class _Corpus:
    """Per-store cache of the counts of common words (they barely move as facts arrive)."""

    def __init__(self) -> None:
        self.rows = 0
        self.common: dict[str, int] = {}


class _Candidate:
    """A fact row being ranked: row = (rowid, *fact columns, index body, pinned)."""

    __slots__ = ("row", "body", "words", "category", "created_at", "rank", "relevance", "choice")

    def __init__(self, row: tuple):
        self.row = row
        self.body = row[12].split()          # the index body is pre-tokenised text
        self.words = frozenset(self.body)    # for the stand-ins' membership tests
        self.category: str = row[3]
        self.created_at: float = row[5]
        self.rank = 0.0
        self.relevance = 0.0
        self.choice: Optional[PathChoice] = None


class _Query:
    """A query's words and what may stand in for them."""

    def __init__(self, terms: list[str], extra: list[str],
                 stand_ins: list[tuple[float, dict[str, list[tuple[str, ...]]]]],
                 words: frozenset[str] = frozenset()):
        self.terms = terms                        # the query's own words
        self.extra = extra                        # a navigator's search terms
        # (credit, word -> phrases standing for it), most trusted first: stated aliases,
        # translations into the other script.
        self.stand_ins = [(credit, table) for credit, table in stand_ins if table]
        self.words = words                        # CJK query bigrams known to be words
        standing = {t for _, table in self.stand_ins for phrases in table.values() for p in phrases
                    for t in p}
        self.searched = list(dict.fromkeys([*terms, *extra, *sorted(standing)]))
        self.related: list[str] = []             # WordNet relatives that joined (related.py)
        # (credit, word -> them, share of the word's weight towards relevance)
        self.weak: list[tuple[float, dict[str, list[tuple[str, ...]]], float]] = []
        self.feedback: list[str] = []            # words of a confident first result
        self.feedback_from = -1                  # ... and its rowid


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
        aliases = alias_closure(self.store.aliases_of, name_ngrams(query))
        translated = translations(query, terms)
        q = _Query(terms, navigator_terms(nav.terms, terms)[:MAX_EXTRA_TERMS],
                   [(ALIAS_CREDIT, alias_alternatives(aliases, terms)),
                    (TRANSLATION_CREDIT, translated)],
                   frozenset(translated))
        rows, avg_len = self.store.corpus_stats()
        df = self._frequencies(q.searched, rows)
        known = sorted((t for t in q.searched if df.get(t)), key=lambda t: (df[t], t))
        expanded = False
        if not known and not (understood and choices):
            # No query word is in any fact ("Which vehicle do I own?"): only words used
            # alike or related ("car", "drive") can find something, or nothing is there.
            if not self._related([], q, df):
                return []
            expanded = True
        rowids = self._candidate_rowids(known, df, choices if understood else [], nodes)
        if expanded:
            rowids += self.store.match_rowids(_any(q.related), limit=CANDIDATES)
        entities = EntityHook(self.store, query)         # the entity graph's candidates
        rowids = list(dict.fromkeys(rowids + entities.candidates()))
        if not rowids:
            return []
        pool = [_Candidate(r) for r in self.store.live_rows_with_bodies(rowids)]

        boost: dict[int, float] = {}
        asked: set[int] = set()             # rowids whose entity boost is known

        def rank() -> list[_Candidate]:
            self._score(pool, q, df, rows, avg_len, choices, understood, now)
            fresh = [c.row[0] for c in pool if c.row[0] not in asked]
            boost.update(entities.boost(fresh))
            asked.update(fresh)
            for c in pool:
                c.rank *= boost.get(c.row[0], 1.0)
            source = next((c for c in pool if c.row[0] == q.feedback_from), None)
            if source is not None:
                # Feedback reorders what follows its source, never overtakes it: the source
                # was confidently first, and the words it lends are its own.
                for c in pool:
                    if c is not source:
                        c.rank = min(c.rank, source.rank * FEEDBACK_CEILING)
            return sorted((c for c in pool if c.relevance >= self.min_relevance), key=_order)

        candidates = rank()
        if not understood and not expanded and self._related(candidates, q, df):
            # The query's own words matched little: WordNet's relatives of those no fact
            # holds join as weak stand-ins, with the facts holding them as candidates.
            seen = {c.row[0] for c in pool}
            more = [r for r in self.store.match_rowids(_any(q.related), limit=CANDIDATES)
                    if r not in seen]
            pool += [_Candidate(r) for r in self.store.live_rows_with_bodies(more)]
            candidates = rank()
        if not understood and self._feedback(candidates, q, df, rows):
            # A second round with the confident first result's telling words: the other
            # turns about the same thing (multi-hop questions) rank up; it adds no relevance,
            # so nothing that shares no word with the query comes back.
            seen = {c.row[0] for c in pool}
            more = [r for r in self.store.match_rowids(_any(q.feedback), limit=RECENT_CANDIDATES)
                    if r not in seen]
            pool += [_Candidate(r) for r in self.store.live_rows_with_bodies(more)]
            candidates = rank()
        yield_to_updates(candidates[:UPDATE_POOL], set(q.searched) - set(q.feedback),
                         {c.category: path_terms(c.category) for c in candidates[:UPDATE_POOL]})
        candidates.sort(key=_order)
        results = []
        # The figure an agent reads (and may sort or threshold on) follows the ranking: the
        # smallest share of the query held by this result or any ranked above it. A result
        # with more of the query's words can rank lower (decay, the tree, feedback, the
        # entity graph): its own share stays in `coverage`.
        floor = 1.0
        for c in candidates[:limit]:
            fact = fact_from_row(c.row[1:12])
            if c.choice is not None:
                how, path = method, c.choice.path
            else:
                how, path = ("fts-warm" if fact.tier == "warm" else "cold"), fact.category
            floor = min(floor, c.relevance)
            results.append(RetrievalResult(fact=fact, method=how, path=path,
                                           relevance=round(floor, 4), score=round(c.rank, 6),
                                           coverage=round(c.relevance, 4)))
        return results

    # -- steps ---------------------------------------------------------------------------

    def _feedback(self, ranked: list[_Candidate], q: _Query, df: dict[str, int], rows: int) -> bool:
        """Gated pseudo-relevance feedback (RM3-like, one document): when the first result is
        confident — it holds at least FEEDBACK_RELEVANCE of the query's weight and outranks the
        second by FEEDBACK_MARGIN — its rarest words (held by 2 facts or more, a bounded
        number) join the query, weakly. Ungated, feedback from a wrong first result cost the
        dev set's paraphrase queries; with a navigator that understood the query (an LLM) its
        own search terms are the expansion, so it is not done."""
        if not ranked or ranked[0].relevance < FEEDBACK_RELEVANCE:
            return False
        if len(ranked) > 1 and ranked[0].rank < FEEDBACK_MARGIN * ranked[1].rank:
            return False
        have = set(q.searched)
        fresh = [t for t in dict.fromkeys(ranked[0].body) if t not in have and t.isalpha()
                 and len(t) > 2 and t not in STEMMED_STOPWORDS]
        counts = self._frequencies(fresh[:FEEDBACK_LOOKUPS], rows)
        words = sorted((t for t in counts if 2 <= counts[t] <= FEEDBACK_MAX_DF),
                       key=lambda t: (counts[t], t))[:FEEDBACK_TERMS]
        if not words:
            return False
        df.update(counts)
        q.feedback, q.feedback_from = words, ranked[0].row[0]
        q.searched = list(dict.fromkeys([*q.searched, *words]))
        return True

    def _related(self, ranked: list[_Candidate], q: _Query, df: dict[str, int]) -> bool:
        """Gated expansion from WordNet (related.py): only when no result holds RELATED_GATE of
        the query's weight (a query with a direct match is left as it is), for the query words
        no fact holds, and only with their relatives that at most RELATED_MAX_DF facts hold:
        WordNet does not know which sense the query means, and a common relative ("dinner" ->
        "party") matches the wrong facts, while a rare one a fact shares is telling. Rank
        only, like feedback: a relative adds no relevance."""
        if ranked and ranked[0].relevance >= RELATED_GATE:
            return False
        # Imported here, past the gate: most queries have a direct match and never get here,
        # and a CLI run then skips loading it (issue 29).
        from evoclaw_memory.retrieval.related import related
        found = related(q.terms, df)
        words = sorted({r.word for rels in found.values() for r in rels} - set(q.searched))
        if not words:
            return False
        # Only "few or not" matters: each count stops after RELATED_MAX_DF + 1 rows, so a
        # common relative costs no more than a rare one.
        counts = self.store.document_frequencies(words, cap=RELATED_MAX_DF + 1)
        rare = {w: n for w, n in counts.items() if n <= RELATED_MAX_DF}
        if not rare:
            return False
        df.update(rare)
        by_credit: dict[tuple[float, bool], dict[str, list[tuple[str, ...]]]] = {}
        for term, rels in found.items():
            for rel in rels:
                if rel.word in rare:
                    by_credit.setdefault((rel.credit, rel.used_alike), {}) \
                        .setdefault(term, []).append((rel.word,))
        # The surest first; a word used alike also counts towards relevance, at its credit.
        q.weak = [(credit, table, credit * RELATED_RELEVANCE if alike else 0.0)
                  for (credit, alike), table in sorted(by_credit.items(), reverse=True)]
        q.related = sorted(rare)
        q.searched = list(dict.fromkeys([*q.searched, *q.related]))
        return True

    def _frequencies(self, terms: list[str], rows: int) -> dict[str, int]:
        """Facts holding each term: exact for rare words, cached estimates for common ones."""
        corpus = self.store.corpus_cache
        if not isinstance(corpus, _Corpus):
            corpus = self.store.corpus_cache = _Corpus()
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
               * math.sqrt(_english(t)) for t in q.searched}
        weight = {t: _weight(t, df.get(t, 0), n, t in q.words) * _english(t) for t in q.searched}
        total_weight = sum(weight[t] for t in q.terms) or 1.0
        extra = q.extra
        stand_ins = [(credit, table, credit) for credit, table in q.stand_ins]
        stand_ins += q.weak          # relatives: rank at their credit, some relevance too
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
                    continue
                for credit, table, share in stand_ins:
                    # A stated alias ("Lily" for "Chen Li"), the word in the other script
                    # ("地铁" for "metro"), a WordNet relative: credited at the rarer of the two
                    # weights, below the word itself (a relative adds rank, not relevance).
                    phrases = table.get(t)
                    phrase = phrases and next((p for p in phrases if c.words.issuperset(p)), None)
                    if phrase:
                        a_idf = min(idf[t], min(idf[w] for w in phrase))
                        bm25 += credit * a_idf * (k1 + 1) / (1 + norm)
                        held += share * weight[t]
                        break
            for t in extra:
                tf = body.count(t)
                if tf:
                    bm25 += TERM_CREDIT * idf[t] * tf * (k1 + 1) / (tf + norm)
                    held += TERM_CREDIT * weight[t]
            for t in (q.feedback if c.row[0] != q.feedback_from else ()):
                # Rank only: feedback words add no relevance. The result they came from keeps
                # its rank (it holds them all, and would only pull further ahead).
                tf = body.count(t)
                if tf:
                    bm25 += FEEDBACK_CREDIT * idf[t] * tf * (k1 + 1) / (tf + norm)
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
            c.rank = bm25 * (0.6 + 0.4 * min(1.0, value / TIER_HOT)) \
                * (COORDINATION + (1 - COORDINATION) * c.relevance)
            if only_asks(row[2]):
                # A stored question is rarely its own answer, yet it repeats the words of
                # the question being asked; it stays a candidate, below the statements.
                c.rank *= QUESTION_FACTOR


def _weight(term: str, df: int, n: int, word: bool = False) -> float:
    """How much a query word counts towards relevance (its IDF; less when no fact holds it).

    `word`: the term is known to be a real word (the word list translates it), so a CJK
    bigram no fact holds is not a mere straddle of two words."""
    if df:
        return math.log(1 + n / (1 + df))
    if is_cjk(term) and not word:
        # A CJK bigram no fact holds is almost always one that straddles two words: it says
        # nothing about whether the memory knows the answer, so it does not count.
        return 0.0
    # A word found nowhere ("satay") is the rarest of all, and counted in full it would sink
    # every fact below the threshold; it counts a little, so a query whose other words are
    # all weak still returns nothing.
    return UNKNOWN_WEIGHT * math.log(1 + n)


def _english(term: str) -> float:
    """How much a word says by how rare it is in English, not only in this memory: in a young
    memory every word is rare, and "gives", "called" or "outside" would outweigh "joint",
    "mother" or "vegetables" (english.zipf). Common words count less; a word of middling
    frequency or rarer counts as the memory's own counts say (1.0): a name the memory holds
    everywhere is common here, whatever English says."""
    if not term.isalpha() or not term.isascii():
        return 1.0                  # numbers, codes, CJK: the memory's own counts decide
    return max(ENGLISH_MIN, min(ENGLISH_MAX, (ENGLISH_CEILING - english.zipf(term))
                                / (ENGLISH_CEILING - ENGLISH_MIDDLE)))


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
