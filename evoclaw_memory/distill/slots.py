"""The owner's attributes that hold one value at a time, read from a statement (SPEC §4).

"I live in Leeds" then "We moved to Bristol last weekend": the second changes the first, and
the two share no word a similarity could go by. Some things about a person hold one value at
a time — where they live, their job, their employer, their diet, a code or password, a
favourite thing, "my phone / my car" — and the way people state them is regular enough to
read with a few patterns. A statement names (kind, key, value): ("home", "", "bristol"),
("job", "", "paramedic"), ("secret", "gym locker", "4417"), ("favourite", "band",
"radiohead"), ("my", "phone", "fairphone"). Two live statements of the owner with the same
kind and key and different values: the newer one supersedes the older. With the same value
they say the same thing, however differently worded.

Only first-person statements count (the owner's own facts are stored in the first person;
another speaker's are rewritten to name them, "Caroline lives in Boston"), so a sister's city
never replaces the owner's. English only: other languages fall back to word overlap
(sameness.py). Pure; no I/O.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from evoclaw_memory.text import FIRST_PERSON, STEMMED_STOPWORDS, stem, tokens


class Slot(NamedTuple):
    kind: str          # home | job | employer | diet | secret | favourite | birthday | my
    key: str           # what within the kind ("gym locker", "band"); "" for one-per-person kinds
    value: str         # the value as comparable tokens ("bristol", "4417", "jollof rice")

    def same_slot(self, other: "Slot") -> bool:
        """The same attribute: same kind, and keys that name the same thing."""
        if self.kind != other.kind:
            return False
        if self.key == other.key:
            return True
        if self.kind != "secret":
            return False
        # "gym locker code" and "the locker code at the gym"; "wifi password", "home wifi
        # password": one key's words within the other's.
        mine, theirs = set(self.key.split()), set(other.key.split())
        return bool(mine) and bool(theirs) and (mine <= theirs or theirs <= mine)


@functools.cache
def _words() -> dict[str, frozenset[str]]:
    # Imported here, not at the top: the lexicon reads its own data files when imported
    # (~1 ms), and a question only asks which attribute it is about (asked_kinds), which
    # needs none of these words; `context` and `retrieve` import this module every turn.
    from evoclaw_memory.distill.lexicon import read_sections
    sections = read_sections("slots.txt")
    return {name: frozenset(" ".join(lines).split()) for name, lines in sections.items()}


def occupations() -> frozenset[str]:
    return _words()["occupations"]


@functools.cache
def _occupation_stems() -> frozenset[str]:
    return frozenset(stem(w) for w in occupations())


def diets() -> frozenset[str]:
    return _words()["diets"]


def change_cues() -> frozenset[str]:
    return _words()["change_cues"]


_PLACE = r"(?P<place>[A-Z][\w'’.-]*(?:\s+(?:[A-Z][\w'’.-]*|upon|on|de|la)){0,3})"
_ORG = r"(?P<org>[A-Z][\w&'’.-]*(?:\s+(?:[A-Z][\w&'’.-]*|of|and|&)){0,4})"
_ADV = r"(?:(?:now|still|currently|actually|just|recently|finally|also|happily)\s+)?"
# A job's words after its frame: "a nurse", "an ICU nurse", "nursing", "a qualified nurse".
_JOB = r"(?i:(?P<job>(?:an?\s+)?[A-Za-z-]+(?:\s+[A-Za-z-]+){0,2}))"


_GATE_WORDS: dict[re.Pattern[str], tuple[str, ...]] = {}    # filled by _patterns()


@functools.cache
def _patterns() -> dict[str, list[tuple[re.Pattern[str], re.Pattern[str]]]]:
    """The statement patterns of each kind, compiled on first use, each after a quick test
    of a word it cannot match without (the same sub-expression, so the test never says no
    where the pattern says yes): the decision reads the slots of every candidate fact, and
    most hold none of these words, so their ~20 patterns need not run."""
    i = r"(?i:\b(?:i|we)\b)"
    i_we, my_our = re.compile(i), re.compile(r"(?i:\b(?:my|our)\b)")
    home = re.compile(r"(?i:\bhome\b)")
    job_word = re.compile(r"(?i:\b(?:job|role|position|profession|career)\b)")
    working = re.compile(r"(?i:\b(?:working|being)\b)")
    secret_word = re.compile(r"(?i:code|password|passcode|pin|passphrase|combination|combo|"
                             r"passkey)")
    favourite = re.compile(r"(?i:favou?rite)")
    birthday, born = re.compile(r"(?i:\bbirthday\b)"), re.compile(r"(?i:\bborn\b)")
    is_my_birthday = re.compile(r"(?i:\s+is\s+my\s+birthday)")
    # A gate cannot match an ASCII text that holds none of its words in lower case.
    _GATE_WORDS.update({
        my_our: ("my", "our"), home: ("home",),
        job_word: ("job", "role", "position", "profession", "career"),
        working: ("working", "being"),
        secret_word: ("code", "password", "pin", "passphrase", "combination", "combo",
                      "passkey"),
        favourite: ("favorite", "favourite"), birthday: ("birthday",), born: ("born",),
        is_my_birthday: ("birthday",)})
    return {
        "home": [
            (i_we,
             re.compile(rf"{i}(?i:(?:['’](?:ve|m|re)|\s+(?:have|am|are))?\s+{_ADV}(?:been\s+)?"
                        r"(?:live|lived|living|reside|resided|staying|based|settled)\s+in\s+)"
                        + _PLACE)),
            (i_we,
             re.compile(rf"{i}(?i:(?:['’]ve|\s+have)?\s+{_ADV}(?:moved|relocated|emigrated|"
                        r"settled)\s+(?:back\s+|over\s+)?(?:to|into|in)\s+)" + _PLACE)),
            (my_our,
             re.compile(r"(?i:\b(?:my|our)\s+(?:new\s+)?(?:home|house|flat|apartment|place|"
                        r"address)\s+is\s+(?:now\s+)?in\s+)" + _PLACE)),
            (home,
             re.compile(r"(?i:\bhome\s+(?:for\s+(?:me|us)\s+)?is\s+(?:now\s+)?)" + _PLACE)),
        ],
        "job": [
            # (?P<explicit>): a frame that says "job" itself, where any -er/-ist word counts
            (i_we,
             re.compile(rf"{i}(?i:\s+{_ADV}(?P<explicit>work|worked|am\s+working|['’]m\s+working|"
                        r"started|have\s+been\s+working|['’]ve\s+been\s+working)\s+as\s+)" + _JOB)),
            (job_word,
             re.compile(r"(?i:\b(?P<explicit>job|role|position|profession|career)\s+(?:is|as)\s+)"
                        + _JOB)),
            (i_we,
             re.compile(rf"{i}(?i:(?:['’]m|\s+am)\s+{_ADV}(?:working\s+as\s+)?)" + _JOB)),
            (working,
             re.compile(r"(?i:\b(?:working|being)\s+(?:as\s+)?)" + _JOB)),
            (i_we,
             re.compile(rf"{i}(?i:\s+(?:became|become|trained\s+as|qualified\s+as|"
                        r"retrained\s+as)\s+)" + _JOB)),
        ],
        "employer": [
            (i_we,
             re.compile(rf"{i}(?i:\s+{_ADV}(?:work|am\s+working|['’]m\s+working)\s+(?:at|for)\s+)"
                        + _ORG)),
            (i_we,
             re.compile(rf"{i}(?i:(?:['’]ve|\s+have)?\s+{_ADV}joined\s+)" + _ORG)),
        ],
        "secret": [
            (secret_word,
             re.compile(r"(?i:(?P<key>(?:[a-z][\w'’-]*\s+){0,3}?)(?P<what>code|password|passcode|"
                        r"pin|passphrase|combination|combo|passkey)(?:\s+(?:for|to|at|of|on)\s+"
                        r"(?:the\s+|my\s+|our\s+)?(?P<key2>[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*)?))?"
                        r"\s+(?:is|was|=|:)\s+(?:now\s+|still\s+)?)(?P<value>[^\s,;!?]+)")),
        ],
        "favourite": [
            (favourite,
             re.compile(r"(?i:\b(?:my|our)\s+(?:all-time\s+|absolute\s+|new\s+)?favou?rite\s+)"
                        r"(?P<thing>[A-Za-z-]+(?:\s+[A-Za-z-]+)?)(?i:\s+(?:is|are)\s+(?:now\s+)?)"
                        r"(?P<value>[^,.;!?]+)")),
            (favourite,
             re.compile(r"^(?:(?i:oh|and|also|so|well)[,\s]+)?(?P<value>[^,.;!?]+?)(?i:\s+(?:is|are)\s+"
                        r"(?:now\s+)?(?:still\s+)?my\s+(?:all-time\s+|absolute\s+|new\s+)?favou?rite\s+)"
                        r"(?P<thing>[A-Za-z-]+)")),
        ],
        "birthday": [
            (birthday,
             re.compile(r"(?i:\bmy\s+birthday\s+is\s+(?:on\s+|in\s+)?)(?P<value>[^,.;!?]+)")),
            (born,
             re.compile(r"(?i:\bI\s+was\s+born\s+(?:on|in)\s+)(?P<value>[^,.;!?]+)")),
            (is_my_birthday,
             re.compile(r"^(?P<value>[^,.;!?]+?)(?i:\s+is\s+my\s+birthday)")),
        ],
        "my": [
            (my_our,
             re.compile(r"(?i:\bmy\s+(?:new\s+)?)(?P<thing>[a-z][a-z-]+)(?i:\s+(?:is|are)\s+"
                        r"(?:now\s+)?(?:an?\s+|the\s+)?)(?P<value>[^,.;!?]+)")),
        ],
    }


# "a nurse on the ward", "a paramedic now": what ends the value of a job.
_JOB_SUFFIX = re.compile(r"(?:er|or|ist|ian|ant|ent|man|woman|smith|wright|maker|keeper)$")
_STOP_VALUE = {"the", "a", "an", "my", "our", "now", "still", "really", "so", "very", "just"}
_NEGATION = re.compile(r"\b(?:not|never|no\s+longer|n['’]t)\s+(?:\w+\s+){0,2}$", re.I)
# "my X is" where X says nothing one-valued ("my day is", "my back is sore").
_MY_THINGS = frozenset("""phone car bike bicycle laptop computer partner husband wife boyfriend
girlfriend fiance fiancee spouse address email number surname name age dentist doctor gp vet
therapist landlord boss manager employer school university gym bank doctor's""".split())


def slots_of(text: str) -> list[Slot]:
    """The one-valued attributes a first-person statement states (often none)."""
    return list(_slots_of(text))


@functools.lru_cache(maxsize=2048)
def _slots_of(text: str) -> tuple[Slot, ...]:
    # Cached: the decision reads the same live facts' slots for every statement of a
    # conversation.
    found: list[Slot] = []
    first_person = re.search(r"\b(?:I|I['’](?:m|ve|d|ll)|[Mm]y|[Ww]e|[Ww]e['’](?:re|ve)|[Oo]ur|"
                             r"[Mm]e)\b", text) is not None
    # Several patterns share a gate (most start with "I"/"we"): each gate is tested once,
    # and in an ASCII text only when one of its words is there at all (a substring test is
    # ~50 times cheaper than a case-blind regex search; non-ASCII text, where a case-blind
    # "s" also matches "ſ", always runs the regex).
    lowered = text.lower() if text.isascii() else ""
    opened = {gate for gate in _gates() if _gate_open(gate, text, lowered)}
    for kind, gated in _patterns().items() if opened else ():
        for gate, pattern in gated:
            if gate not in opened:
                continue
            for match in pattern.finditer(text):
                if _NEGATION.search(text[:match.start(_group(kind))]):
                    continue
                slot = _slot(kind, match, first_person)
                if slot is not None and slot not in found:
                    found.append(slot)
    diet = _diet(text) if first_person else None
    if diet is not None:
        found.append(diet)
    return tuple(found)


@functools.cache
def _gates() -> tuple[re.Pattern[str], ...]:
    """The patterns' gates, each once."""
    return tuple(dict.fromkeys(gate for gated in _patterns().values() for gate, _ in gated))


def _gate_open(gate: re.Pattern[str], text: str, lowered: str) -> bool:
    """Whether `gate` matches `text`; `lowered`: the text in lower case if it is ASCII."""
    words = _GATE_WORDS.get(gate) if lowered else None
    if words is not None and not any(word in lowered for word in words):
        return False
    return gate.search(text) is not None


def _group(kind: str) -> str:
    return {"home": "place", "job": "job", "employer": "org"}.get(kind, "value")


def _slot(kind: str, match: re.Match[str], first_person: bool) -> Slot | None:
    if kind == "home":
        place = _proper(match.group("place"))
        return Slot("home", "", place) if place else None
    if kind == "employer":
        org = _proper(match.group("org"))
        return Slot("employer", "", org) if org else None
    if kind == "job":
        return _job(match)
    if kind == "secret":
        if not first_person and not re.search(r"(?i)\b(?:the|our|home|house)\b", match.group(0)):
            return None
        value = match.group("value").strip("\"'`’”.")
        if len(value) < 3 or value.lower() in _STOP_VALUE or not re.search(r"[\d]|[A-Za-z]{4}", value):
            return None
        key = " ".join(sorted(_terms(" ".join(filter(None, (match.group("key"),
                                                            match.group("key2")))))))
        return Slot("secret", key, value.lower())
    if kind == "favourite":
        if not first_person:
            return None
        value = " ".join(_terms(match.group("value")))
        thing = " ".join(_terms(match.group("thing"))[:1])
        return Slot("favourite", thing, value) if value and thing else None
    if kind == "birthday":
        value = " ".join(_terms(match.group("value"))[:3])
        return Slot("birthday", "", value) if value and re.search(r"\d", value) else None
    if kind == "my":
        thing = match.group("thing").lower()
        if thing not in _MY_THINGS:
            return None
        value = " ".join(_terms(match.group("value"))[:3])
        return Slot("my", stem(thing), value) if value else None
    return None


def _job(match: re.Match[str]) -> Slot | None:
    """The job a job pattern names: the first occupation among its words ("a qualified nurse"
    -> nurse); after an explicit frame ("work as", "job is") a first -er/-ist word will do."""
    words = [w.lower() for w in match.group("job").split()]
    if words and words[0] in ("a", "an"):
        words = words[1:]
    for word in words:
        if word in occupations() or stem(word) in _occupation_stems():     # "nursing" -> nurse
            return Slot("job", "", stem(word))
        if len(word) > 6 and any(word.endswith(job) for job in occupations() if len(job) > 4):
            return Slot("job", "", stem(word))                # "headteacher", "firefighter"
    explicit = "explicit" in match.re.groupindex and match.group("explicit")
    if explicit and words and _JOB_SUFFIX.search(words[0]) and words[0] not in _STOP_VALUE:
        return Slot("job", "", stem(words[0]))
    return None


# "Tom is vegan", "my sister went vegan": someone else's diet.
_OTHER_SUBJECT = re.compile(r"(?:\b(?:he|she|they)|\b(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er|[Tt]heir)\s+(?!diet\b)[a-z]+"
                            r"|\b[A-Z][a-z]+|(?<!\bI)['’]s)\s+"
                            r"(?:(?:is|was|are|were|has|have|had|went|gone|been|turned|became)\s+)+"
                            r"(?:\w+\s+)?$")


def _diet(text: str) -> Slot | None:
    lowered = text.lower()
    # A word can only be a diet word where one occurs as text: one search, then the word
    # scan for the (rare) statements holding one.
    if _diet_hint().search(lowered) is None:
        return None
    for word in re.findall(r"[a-z]+(?:-[a-z]+)?", lowered):
        if word in diets():
            at = lowered.find(word)
            if _NEGATION.search(lowered[:at]) or _OTHER_SUBJECT.search(text[:at]):
                return None
            value = {"pescetarian": "pescatarian", "ketogenic": "keto"}.get(word, word)
            return Slot("diet", "", value)
    return None


@functools.cache
def _diet_hint() -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, sorted(diets(), key=len, reverse=True))))


def _proper(phrase: str) -> str:
    """A place or organisation's name as comparable tokens ("St Mary's" -> "st mary")."""
    words = phrase.split()
    while words and words[-1].lower() in {"upon", "on", "de", "la", "of", "and", "&"}:
        words.pop()
    return " ".join(tokens(" ".join(words)))


def _terms(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STEMMED_STOPWORDS and t not in _STOP_VALUE]


# Words a stored statement of each kind holds, to find it again (stemmed by text.tokens).
_FRAMES = {
    "home": "live lived living home house flat apartment place moved relocated based settled",
    "employer": "work working joined",
    "secret": "code password passcode pin passphrase combination combo passkey",
    "favourite": "favourite favorite",
    "birthday": "birthday born",
}


def frame_terms(slot: Slot) -> list[str]:
    """Search tokens that any stored statement of `slot`'s attribute holds (job: the
    occupations; my X: X), to find the live facts a new value may replace."""
    if slot.kind == "job":
        words = " ".join(sorted(occupations())) + " job"
    elif slot.kind == "diet":
        words = " ".join(sorted(diets()))
    elif slot.kind == "my":
        return [slot.key]
    else:
        words = _FRAMES.get(slot.kind, "")
    return list(dict.fromkeys(tokens(words)))


def has_change_cue(text: str) -> bool:
    """Whether a statement says it replaces something ("now", "new", "switched", "anymore")."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    return bool(words & change_cues()) or "these days" in text.lower()


# What a question about each one-valued attribute of the owner says ("What do I do for a
# living?", "Which town is my home these days?", "Do I eat meat?"), matched on its words.
_ASKED = {
    "job": re.compile(r"\b(?:jobs?|occupation|profession|career|for\s+a\s+living|do\s+for\s+work"
                      r"|work\s+as|what\s+do\s+i\s+do|line\s+of\s+work|trade|what\s+i\s+do\s+for"
                      r"|earn\s+(?:my\s+|a\s+)?(?:money|living|wage|salary)|pays\s+(?:my|the)\s+bills)\b",
                      re.I),
    "employer": re.compile(r"\b(?:employer|work\s+for|company\s+do\s+i|who\s+do\s+i\s+work"
                           r"|where\s+do\s+i\s+work)\b", re.I),
    "home": re.compile(r"\b(?:where\s+(?:do|did)\s+(?:i|we)\s+(?:live|move|stay)|where\s+(?:am\s+i|are\s+we)"
                       r"\s+(?:based|living|staying)|(?:which|what)\s+(?:town|city|country|place|area)"
                       r"|(?:my|our)\s+(?:current\s+)?(?:home\s*town|address|city|town)"
                       r"|where(?:['’]s|\s+is)\s+(?:my\s+|our\s+)?home|where\s+(?:i|we)\s+live)\b",
                       re.I),
    "diet": re.compile(r"\b(?:diet|vegan|vegetarian|eat\s+meat|animal\s+products|meat\s+or"
                       r"|dairy|plant-based|pescatarian|what\s+(?:do|can|should|don['’]t)\s+i\s+eat"
                       r"|eating\s+habits|foods?\s+(?:do\s+)?i\s+avoid)\b", re.I),
    "birthday": re.compile(r"\b(?:birthday|born|(?:a\s+)?year\s+older|how\s+old\s+(?:am\s+i|will\s+i)"
                           r"|my\s+age)\b", re.I),
    "favourite": re.compile(r"\b(?:favou?rite|(?:love|like|enjoy)\s+(?:\w+\s+){0,3}(?:most|best)"
                            r"|most\s+(?:love|like|enjoy))\b", re.I),
}
# "my sister", "my other half", "my brother's son": a question about someone else.
_SOMEONE_ELSE = re.compile(
    r"\b(?:my|our)\s+(?:other\s+half|sister|brother|mum|mom|mother|dad|father|parents?|partner"
    r"|wife|husband|boyfriend|girlfriend|son|daughter|kids?|children|child|friend|boss|colleague"
    r"|nephew|niece|cousin|aunt|uncle|gran\w*|grand\w+|neighbou?r|flatmate|roommate|dog|cat|pet)\b",
    re.I)


def asked_kinds(question: str) -> list[str]:
    """The one-valued attributes of the owner a question asks about (often none)."""
    if _SOMEONE_ELSE.search(question) or not FIRST_PERSON.search(question):
        return []
    return [kind for kind, pattern in _ASKED.items() if pattern.search(question)]


def frame_query_terms(kind: str) -> list[str]:
    """Search tokens any stored statement of attribute `kind` holds (see frame_terms)."""
    return frame_terms(Slot(kind, "", ""))
