"""What a sentence is worth and where it belongs: keep or drop, importance, category.

Pure rules over analysed sentences (signals.Sentence) and the known category paths.
"""

from __future__ import annotations

import functools
import re
from typing import Iterable, Sequence

from evoclaw_memory.distill.lexicon import (STOPWORDS, TOPIC_ORDER, TOPIC_PATHS, WH_WORDS, keyword_regex, stem,
                                            variants)
from evoclaw_memory.distill.sentences import QUESTION_TAG_RE, REQUEST_RE, drop_question_tag
from evoclaw_memory.distill.signals import WORD_RE, Sentence, analyse, starts_word

# Signal points (see `info_score`) a sentence needs to become a fact.
CONVERSATION_MIN_SCORE = 2


def is_informative(sentence: Sentence, min_score: int) -> bool:
    """Whether a sentence says enough to become a fact (questions need more)."""
    if sentence.filler or not sentence.substantive:
        return False
    score = sentence.score
    if sentence.question:
        # A question is worth keeping only for what it carries: "can you save https://..." or
        # "remind me that Maya's dentist is on 8 December?"; "what's the weather?" is not.
        carries = sentence.names or {"date", "number"} & sentence.flags
        return bool(sentence.items) or (bool(carries) and score >= min_score + 1)
    return score >= min_score


# Words of a reaction, not a statement: "Wow, that's awesome!", "Sounds great, thanks!"
_REACTIONS = frozenset("""wow whoa awesome great cool amazing nice sounds sound good glad hear thanks
thank congrats congratulations lovely wonderful fantastic incredible beautiful sweet fun haha lol yay
aww omg true totally agree exactly same really hope hopefully luck care bye see soon later talk
night morning chat chatting catch take welcome problem worries sure okay yes yeah yep absolutely
definitely right indeed love proud happy awesome inspiring impressive stunning cute gorgeous super
keep going mate friend wish best thing things that's it's glad hey hi hello wonderful brilliant
excited exciting interesting cheers enjoy enjoyed help pleasure anytime""".split())


_ZH_REACTION_RE = re.compile(r"祝(?:你|您|你们)?|旅途|愉快|顺利|加油|太好了|真棒|真好|不客气|没问题|好的|谢谢|"
                             r"哈哈+|厉害|恭喜|开心|一切|你们|再见|晚安")


# A request for the assistant to do something now ("Give me a word of the day", "Play something
# to cheer me up", "Remind me what bills are coming up"): like a question, it asks, it does
# not state. "Remind me to call mum on Friday" states a task and is kept.
_REQUEST_NOW = re.compile(
    r"^\W*(?:(?:please|ok|okay|hey|so|now|and)[,\s]+)*(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
    r"(?:(?:give|show|tell|teach|find|get|read|write|send|bring|pick|make|fetch|sing|play)\s+(?:me|us)\b"
    r"|(?:play|suggest|recommend|find|pick|choose|put\s+on|put)\s+(?:me\s+|us\s+)?"
    r"(?:something|some|a|an|one)\b"
    r"|(?:help\s+(?:me|us)|cheer\s+(?:me|us)\s+up|explain|summari[sz]e|translate|look\s+up)\b"
    r"|remind\s+(?:me|us)\s+(?:what|when|where|who|how|which|about|of)\b)", re.I)


def is_worth_keeping(sentence: Sentence) -> bool:
    """Inclusive (a conversation turn): everything but greetings, thanks, reactions,
    questions and requests for the assistant to do something now (SPEC §4); a question or a
    request is kept only for the link, command or path it carries."""
    if sentence.items:
        return True
    if sentence.filler or not sentence.substantive:
        return False
    if _REQUEST_NOW.match(sentence.text):
        return False
    if sentence.question and not REQUEST_RE.match(sentence.text) and not _tagged_statement(sentence):
        return False
    if sentence.cjk_chars >= 4:
        left = _ZH_REACTION_RE.sub("", sentence.text)
        return sum(1 for ch in left if "\u3400" <= ch <= "\u9fff") - sentence.filler_chars >= 4
    said = drop_question_tag(sentence.text)     # the tag's words say nothing
    words = {w.lower().replace("’", "'") for w in WORD_RE.findall(said)} - STOPWORDS
    return bool(words - _REACTIONS) and len(words) >= 2


def _tagged_statement(sentence: Sentence) -> bool:
    """"Sunflowers mean warmth and happiness, right?" states something; "What is it, right?"
    does not."""
    return sentence.first_word not in WH_WORDS and QUESTION_TAG_RE.search(sentence.text) is not None


def is_minor_statement(sentence: Sentence) -> bool:
    """A statement of one telling word ("We made pizza!", "I won't quit."): too little for a
    fact of its own, worth keeping beside the sentence next to it (rules._FactBuilder)."""
    if sentence.items or sentence.filler or sentence.question or sentence.cjk_chars:
        return False
    words = {w.lower().replace("’", "'") for w in WORD_RE.findall(sentence.text)} - STOPWORDS
    return len(words - _REACTIONS) == 1 and _SUBJECT_RE.match(sentence.text) is not None


# A statement starts with its subject: "We made ...", "I won't ...", "Oscar is ..." (not
# "Wow, nice band!", whose one word is a reaction's object).
_SUBJECT_RE = re.compile(r"(?:(?:and|but|so|yeah|yes|yep|yup|well|oh)[,!]?\s+)?"
                         r"(?:i|we|he|she|they|my|our|his|her|their|it|this|that)\b(?!\s*[,!?])", re.I)


def importance_of(sentence: Sentence, from_assistant: bool = False) -> float:
    """0..1: explicit 'remember'/'always', health, family and credentials weigh most."""
    flags = sentence.flags
    value = 0.4
    value += 0.3 if "remember" in flags else 0.0
    value += 0.2 if {"credential", "contact"} & flags else 0.0
    value += 0.15 if "health" in sentence.topics else 0.0
    value += 0.1 if "family" in sentence.topics else 0.0
    value += 0.1 if "preference" in flags else 0.0
    value += 0.1 if "decision" in flags else 0.0
    value += 0.05 if sentence.items else 0.0
    value += 0.05 if "date" in flags else 0.0
    value += 0.05 if sentence.names else 0.0
    value -= 0.1 if sentence.score <= CONVERSATION_MIN_SCORE else 0.0  # chit-chat
    value -= 0.1 if from_assistant else 0.0
    return round(min(1.0, max(0.05, value)), 2)


_SEGMENT_RE = re.compile(r"[^a-z0-9_-]+")
_PROJECT_RE = re.compile(
    r"\bproject\s+(?:called\s+|named\s+)?[\"“']?(?P<after>[A-Za-z0-9][\w-]{1,30})"
    r"|\b(?P<before>[A-Z][\w-]{1,30})\s+project\b"
)


class CategoryIndex:
    """Known category paths indexed by the word forms of their segments.

    Its tables are built once per list of paths (`_indexed`), so that matching a sentence
    is one regex call and a few look-ups, not a loop over every path and segment.
    """

    def __init__(self, known_categories: Sequence[str]) -> None:
        self.paths = list(known_categories)
        self.segment_counts, self.forms, self.surface, self.surface_re = \
            _indexed(tuple(self.paths))

    def named_in(self, text: str) -> set[str]:
        """The segment forms that `text` names as words."""
        if self.surface_re is None:
            return set()
        lowered = text.lower().replace("’", "'")
        found = set()
        for match in self.surface_re.finditer(lowered):
            if starts_word(lowered, match.start()):
                word = match.group()
                found.add(self.surface.get(word) or self.surface[word[:-2]])
        return found

    def best(self, words: Iterable[str], derived: Iterable[str]) -> str | None:
        """2 per segment named in the text, 1 per segment implied, -0.25 per other segment."""
        weights: dict[tuple[int, int], int] = {}
        for form in derived:
            for key in self.forms.get(form, ()):
                weights[key] = 1
        for form in words:
            for key in self.forms.get(form, ()):
                weights[key] = 2
        if not weights:
            return None
        totals: dict[int, list[int]] = {}
        for (path_index, _), weight in weights.items():
            total = totals.setdefault(path_index, [0, 0])
            total[0] += weight
            total[1] += 1
        # Highest score; on a tie the path listed first (deterministic).
        best_index = max(
            totals, key=lambda i: (totals[i][0] - 0.25 * (self.segment_counts[i] - totals[i][1]), -i)
        )
        return self.paths[best_index]


@functools.lru_cache(maxsize=8)
def _indexed(paths: tuple[str, ...]) -> tuple[list[int], dict[str, list[tuple[int, int]]],
                                               dict[str, str], re.Pattern[str] | None]:
    """CategoryIndex's tables for one list of paths (read-only once built). Kept: every
    conversation indexes the agent's tree again, and a full 50-node tree took ~1.5 ms each
    time on an old agent, while its paths change a few times a month."""
    segment_counts: list[int] = []
    forms: dict[str, list[tuple[int, int]]] = {}
    for path_index, path in enumerate(paths):
        segments = path.lower().split("/")
        segment_counts.append(len(segments))
        for segment_index, segment in enumerate(segments):
            found = {stem(segment)} | {
                stem(part) for part in re.split(r"[-_]", segment) if len(part) > 2
            }
            for form in found - STOPWORDS:
                forms.setdefault(form, []).append((path_index, segment_index))
    # Surface forms ("pets", "allergies", "biscuit's") of every segment form, to find
    # the segments a sentence names with one regex call.
    surface = {variant: form for form in forms for variant in variants(form)}
    return segment_counts, forms, surface, keyword_regex(surface) if surface else None


def choose_category(text: str, known_categories: Sequence[str], hints: Iterable[str] = ()) -> str:
    """The known category whose path segments best match `text`, else a new path from its topic."""
    sentence = analyse(text, [(0, len(text))]).sentences[0]
    return category_for(sentence, CategoryIndex(known_categories), terms_of_hints(hints))


def terms_of_hints(hints: Iterable[str]) -> set[str]:
    """What hints (a markdown heading, say) imply: their word stems and their lexicon terms."""
    terms: set[str] = set()
    for hint in hints:
        terms.update(stem(word.lower()) for word in WORD_RE.findall(hint))
        if hint.strip():
            terms.update(analyse(hint, [(0, len(hint))]).sentences[0].terms)  # 家人 -> family
    return terms - STOPWORDS


def category_for(sentence: Sentence, index: CategoryIndex, hint_terms: set[str]) -> str:
    derived = sentence.terms | hint_terms | (sentence.flags & {"preference", "profile"})
    return index.best(index.named_in(sentence.text), derived) or _new_category(sentence)


def _new_category(sentence: Sentence) -> str:
    project = _PROJECT_RE.search(sentence.text) if "roject" in sentence.text else None
    if project:
        name = slug(project.group("after") or project.group("before"))
        if name and name not in STOPWORDS:
            return f"projects/{name}"
    if "preference" in sentence.flags:
        return "owner/preferences"
    if "profile" in sentence.flags:
        return "owner/profile"
    for topic in TOPIC_ORDER:
        if topic in sentence.topics:
            return TOPIC_PATHS[topic]
    return "general"


def slug(segment: str) -> str:
    """One category segment: lowercase `[a-z0-9_-]`, at most 32 characters."""
    return _SEGMENT_RE.sub("-", segment.lower()).strip("-_")[:32].strip("-_")
