"""Retrieval across wording: query expansion (stated aliases, a navigator's terms) and the
rule that puts an older fact below the newer one that updates it."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Callable, Iterable

from evoclaw_memory.text import STEMMED_STOPWORDS, query_terms, tokens

if TYPE_CHECKING:
    from evoclaw_memory.retrieval.retriever import _Candidate

UPDATE_SHARE = 0.5            # share of the shorter fact's own content words the two share
UPDATE_MIN_SHARED = 2         # ... and at least this many of them
UPDATE_MARGIN = 1.6           # an older fact scoring up to this much more still yields
MAX_NGRAM = 3                 # names of up to three words ("Mary Ann Lee") are looked up
MAX_EXTRA_TERMS = 12          # expansion terms per query (aliases + a navigator's terms)
ASK_MIN_WORDS = 3             # sentences shorter than this ("Cool!", "Hey Mel!") say nothing



@functools.cache
def _patterns() -> tuple["re.Pattern[str]", "re.Pattern[str]"]:
    """(a sentence, a stored turn's speaker label: "Nate: ", "Mary Ann: ", "陈莉：", not
    "Retro decision: "), compiled on first use: ~3 ms at import, on a slow VM, that a CLI
    `store`, `hot` or a retrieve of facts without labels or questions never needed."""
    return (re.compile(r"[^.!?。！？]+[.!?。！？]*"),
            re.compile(r"^(?:[A-Z][\w'’-]*(?: [A-Z][\w'’-]*){0,2}|[\u4e00-\u9fff]{2,4})[:：]\s?"))


def name_ngrams(query: str) -> list[str]:
    """Token strings of the query's 1- to 3-word runs: the keys an alias can have."""
    toks = [t for t in tokens(query)]
    out: dict[str, None] = {}
    for n in range(1, MAX_NGRAM + 1):
        for i in range(len(toks) - n + 1):
            gram = toks[i:i + n]
            if gram[0] in STEMMED_STOPWORDS or gram[-1] in STEMMED_STOPWORDS:
                continue
            out.setdefault(" ".join(gram), None)
    return list(out)[:48]


def alias_closure(lookup: Callable[[list[str]], dict[str, list[str]]],
                  names: list[str]) -> dict[str, list[str]]:
    """name -> its stated aliases, and theirs: one more hop.

    Facts state aliases pairwise ("Chen Li (Lily)" in one, "Chen Li (陈莉)" in another), so
    the query's "Lily" reaches "陈莉" only through "chen li". One hop more is one more
    indexed lookup; it stops there (chains of nicknames are rare, and each hop dilutes)."""
    direct = lookup(names)
    if not direct:
        return direct
    others = sorted({o for found in direct.values() for o in found} - set(direct))
    second = lookup(others[:48]) if others else {}
    out: dict[str, list[str]] = {}
    for name, found in direct.items():
        merged = list(dict.fromkeys(found + [a for o in found for a in second.get(o, [])]))
        out[name] = [a for a in merged if a != name]
    return out


def alias_alternatives(aliases: dict[str, list[str]], terms: list[str]) -> dict[str, list[tuple[str, ...]]]:
    """query term -> the alias phrases (token tuples) that stand for it.

    A multi-word name's aliases stand for each of its words: a fact saying "Lily" holds
    "Chen" and "Li" of the query "Chen Li" as far as relevance goes."""
    wanted = set(terms)
    out: dict[str, list[tuple[str, ...]]] = {}
    for name, others in aliases.items():
        for word in name.split():
            if word not in wanted:
                continue
            for other in others:
                phrase = tuple(t for t in other.split() if t not in STEMMED_STOPWORDS)
                if phrase and phrase not in out.setdefault(word, []):
                    out[word].append(phrase)
    return out


def navigator_terms(raw: Iterable[str], terms: list[str]) -> list[str]:
    """A navigator's search terms as index tokens, minus the query's own."""
    seen = set(terms)
    out: list[str] = []
    for text in raw:
        for tok in query_terms(text):
            if tok not in seen:
                seen.add(tok)
                out.append(tok)
    return out[:MAX_EXTRA_TERMS]


def only_asks(text: str) -> bool:
    """True when every sentence of the text that says something is a question.

    "Melanie: Cool! What type of music do you play?" only asks; "I went to the parade last
    week. How about you?" tells something first. A speaker's label ("Name: ") is not part of
    what was said."""
    if "?" not in text and "？" not in text:
        return False                      # the common case, one scan
    sentence, speaker = _patterns()
    said = [s.strip() for s in sentence.findall(speaker.sub("", text, count=1))]
    said = [s for s in said if len(s.split()) >= ASK_MIN_WORDS or (s and not s.isascii())]
    return bool(said) and all(s.endswith(("?", "？")) for s in said)


def _speaker(text: str) -> str:
    """The speaker's label a stored turn opens with ("Nate: ..."), or ""."""
    m = _patterns()[1].match(text)
    return m.group().rstrip(": ：") if m else ""


def yield_to_updates(pool: list["_Candidate"], query: set[str],
                     path_words: "dict[str, frozenset[str]]") -> None:
    """Put an older fact just below a newer one in the same category that updates it.

    Agents write updates as new facts ("Biscuit now gets 100 g", "the dentist is now Dr
    Okafor") and old facts are not always marked superseded; the two share most of their
    words, so on words alone the older one often wins. Only a real update of the same thing
    counts: the words the two share must be their own, not the query's (every candidate
    holds those) nor the category's, and cover half of the shorter one's content. Two
    conversation turns that merely name the same speakers (LoCoMo: "Caroline: ...") or
    answer the same question are not updates of each other.
    """
    by_category: dict[str, list["_Candidate"]] = {}
    for c in pool:
        by_category.setdefault(c.category, []).append(c)
    for category, group in by_category.items():
        if len(group) < 2:
            continue
        group.sort(key=lambda c: c.created_at)
        drop = path_words.get(category, frozenset()) | STEMMED_STOPWORDS | query
        content = [frozenset(t for t in c.body if t not in drop and not t.isdigit()) for c in group]
        asks = [only_asks(c.row[2]) for c in group]   # a question updates nothing
        speakers = [_speaker(c.row[2]) for c in group]
        for i in reversed(range(len(group) - 1)):     # newest first: chains keep their order
            old = group[i]
            for j in range(i + 1, len(group)):
                new = group[j]
                if (asks[j] or new.created_at <= old.created_at
                        or (speakers[i] and speakers[j] and speakers[i] != speakers[j])
                        or not new.rank <= old.rank <= UPDATE_MARGIN * new.rank):
                    continue
                a, b = content[i], content[j]
                shared = len(a & b)
                if a and b and shared >= UPDATE_MIN_SHARED \
                        and shared >= UPDATE_SHARE * min(len(a), len(b)):
                    old.rank = new.rank * 0.99
