"""Entities a fact mentions (issue 18), by rules: no I/O, English and Chinese.

What is found, each with a kind (limits.ENTITY_KINDS) and a role:
- a speaker's label ("Melanie: ..." as a turn is stored) is the fact's *speaker*; a name
  the fact opens with ("Melanie went camping", "陈莉每周...") is its *subject*;
- "my wife Sarah" / "我老婆王芳": Sarah (people), related to the owner as "wife";
- "Chen Li (Lily)": one entity with an alias;
- other proper names (signals.find_people): people; "in Seattle", "moved to Paris": places;
  "project Apollo": projects; "using SQLite": tools.
The store then also links the entities it already knows whose names the text holds
(`store.entities.lookup_keys`), which is how a name seen once as a speaker is found in later facts.
"""

from __future__ import annotations

import functools
import re
from typing import Optional

import msgspec

from evoclaw_memory.distill.metadata import compiled
from evoclaw_memory.distill.signals import find_people
from evoclaw_memory.store.entities import OWNER, norm

_CJK = "\u4e00-\u9fff"
_CAP = r"[A-Z][a-z]+(?:['’-][A-Za-z]?[a-z]+)*"
_NAME = rf"{_CAP}(?: {_CAP}){{0,2}}"


# The patterns with a CJK character class compile on first use (each class ~0.5 ms, which a
# CLI `store` paid at import), and run only on texts holding what they need to match: a
# colon (a speaker label), a parenthesis (an alias), 我 (a Chinese kinship phrase), a
# non-ASCII character (a Chinese name). The results are the same; most texts skip them.
@functools.cache
def _speaker_re() -> re.Pattern[str]:
    return re.compile(rf"^\s*({_NAME}|[{_CJK}]{{2,4}})\s*[:：]\s")


@functools.cache
def _alias_re() -> re.Pattern[str]:
    return re.compile(rf"({_NAME}|[{_CJK}]{{2,4}})\s*[(（]\s*({_NAME}|[{_CJK}]{{2,4}})\s*[)）]")


_OPENING_RE = re.compile(rf"^\s*({_NAME})(?:['’]s)?\b")

# "my wife Sarah", "my friend, Tom", "my dog named Coco": the relation word, then the name.
_KIN_PEOPLE = ("wife husband partner girlfriend boyfriend fiancee fiance son daughter kid child "
               "mother mom mum father dad brother sister grandma grandmother grandpa grandfather "
               "aunt uncle cousin niece nephew friend boss colleague coworker manager doctor "
               "dentist teacher therapist neighbor neighbour roommate mentor coach").split()
_KIN_PETS = "dog cat puppy kitten pet turtle parrot rabbit hamster horse".split()
# These compile on first use too (metadata.compiled), and three run only on texts holding
# their literal words ("my ", "project", a tool verb): ~8 ms of compiling most CLI `store`
# runs skip.
_MY = (rf"\b(?i:my (?:(?:best|old|new|little|big|older|younger) )?({'|'.join(_KIN_PEOPLE + _KIN_PETS)})"
       rf"(?:,| is| named| called| whose name is)?) ({_NAME})\b")
_ZH_KIN = {"老婆": "wife", "妻子": "wife", "太太": "wife", "老公": "husband", "丈夫": "husband",
           "女儿": "daughter", "儿子": "son", "妈妈": "mother", "母亲": "mother", "爸爸": "father",
           "父亲": "father", "哥哥": "brother", "姐姐": "sister", "弟弟": "brother",
           "妹妹": "sister", "朋友": "friend", "同事": "colleague", "老板": "boss",
           "男朋友": "boyfriend", "女朋友": "girlfriend", "医生": "doctor", "老师": "teacher"}


@functools.cache
def _zh_my_re() -> re.Pattern[str]:
    return re.compile(rf"我(?:的)?({'|'.join(sorted(_ZH_KIN, key=len, reverse=True))})"
                      rf"(?:叫|是|名叫)?([{_CJK}]{{2,3}})")


_ZH_STOP = set("的了在是和跟说去来很也都就要会每今昨明最")
_PLACE = rf"\b(?:in|to|from|visited|visiting|near|around) ({_NAME})\b"
_PROJECT = rf"\b(?:project|the) ({_CAP}) project\b|\bproject ({_CAP})\b"
_TOOL = (r"\b(?:using|uses|use|switched to|installed|runs on|with) "
         r"([A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*|[A-Z][a-z]+(?:DB|SQL|JS|OS))\b")
_TOOL_WORDS = ("use", "using", "switched to", "installed", "runs on", "with")   # "use": uses too


# Capitalised words that are not names when they stand alone.
_NOT_NAMES = frozenset("""I I'm I've I'd I'll Me My Mine We Our You Your He She They It This That
These Those The A An And But Or So If Then When Where What Who Why How Yes No Not Oh Hey Hi
Hello Thanks Thank Wow Yeah Ok Okay Sure Well Also Just Really Great Good Nice Cool Awesome
Sounds Glad Sorry Love Congrats Congratulations Monday Tuesday Wednesday Thursday Friday
Saturday Sunday January February March April May June July August September October November
December Today Tomorrow Yesterday Tonight Last Next Mr Mrs Ms Dr Lol Haha Omg Btw""".split())


@functools.cache
def _cjk_run_re() -> re.Pattern[str]:
    return re.compile(rf"[{_CJK}]+")


def _is_cjk_run(name: str) -> bool:
    """All of `name` is Chinese (an ASCII name never is: no pattern needed)."""
    return not name.isascii() and _cjk_run_re().fullmatch(name) is not None


_RANK = {"mention": 0, "subject": 1, "speaker": 2}
__all__ = ["OWNER", "Mention", "extract"]     # OWNER lives in store.entities (the table's vocabulary)


class Mention(msgspec.Struct):
    """One entity a text mentions."""

    name: str
    kind: str
    role: str = "mention"                # or "subject", "speaker" (strongest)
    relation: Optional[str] = None       # to the owner: "wife" (she is the owner's wife)
    aliases: list[str] = []


def _clean(name: str) -> Optional[str]:
    words = name.split()
    while words and words[0] in _NOT_NAMES:
        words = words[1:]
    while words and words[-1] in _NOT_NAMES:
        words = words[:-1]
    name = " ".join(words)
    if name.endswith(("'s", "’s")):
        name = name[:-2]
    return name if len(name) >= 2 else None


def _zh(name: str) -> Optional[str]:
    for i, ch in enumerate(name):
        if i >= 2 and ch in _ZH_STOP:
            return name[:i]
        if i < 2 and ch in _ZH_STOP:
            return None
    return name


def extract(text: str) -> list[Mention]:
    """The entities `text` mentions, subject first; one Mention per name (aliases joined)."""
    found: dict[str, Mention] = {}
    alias_of: dict[str, str] = {}

    def add(name: Optional[str], kind: str, role: str = "mention",
            relation: Optional[str] = None) -> None:
        if not name:
            return
        key = alias_of.get(norm(name), norm(name))
        m = found.get(key)
        if m is None:
            found[key] = Mention(name=name, kind=kind, role=role, relation=relation)
            return
        if _RANK[role] > _RANK[m.role]:
            m.role = role
        if relation and not m.relation:
            m.relation = relation
        if m.kind == "other" and kind != "other" and m.relation not in _KIN_PETS:
            m.kind = kind

    aliases = _alias_re().findall(text) if "(" in text or "（" in text else []
    for full, short in aliases:
        full, short = _clean(full) or "", _clean(short) or ""
        if full and short and norm(full) != norm(short):
            add(full, "people")
            found[norm(full)].aliases.append(short)
            alias_of[norm(short)] = norm(full)
    speaker = _speaker_re().match(text) if ":" in text or "：" in text else None
    body = text
    if speaker:
        add(_clean(speaker.group(1)), "people", "speaker")
        body = text[speaker.end():]
    people = find_people(body)          # once: it is most of what this function costs
    if not speaker:
        opening = _OPENING_RE.match(text)
        if opening and opening.group(1).split()[0] not in _NOT_NAMES:
            name = _clean(opening.group(1))
            # A lone capitalised first word is a name only when the text reads it as one
            # elsewhere or it is followed by a verb-like word (find_people skips first words).
            if name and (" " in name or name in people or _looks_like_subject(text, opening.end())):
                add(name, "people", "subject")
    for match in (compiled(_MY).finditer(body) if "my " in body.lower() else ()):
        word = match.group(1).lower()
        add(_clean(match.group(2)), "other" if word in _KIN_PETS else "people", relation=word)
    zh_people = [n for n in people if _is_cjk_run(n)]
    for match in (_zh_my_re().finditer(body) if "我" in body else ()):
        # The regex takes up to three characters; a name the scanner read there is exact
        # (王芳喜欢 -> 王芳), else two characters, the commonest length of a given name.
        taken = match.group(2)
        name = next((n for n in zh_people if taken.startswith(n) or n.startswith(taken)),
                    _zh(taken[:2]))
        add(name, "people", relation=_ZH_KIN[match.group(1)])
    for match in compiled(_PLACE).finditer(body):
        add(_clean(match.group(1)), "places")
    for match in (compiled(_PROJECT).finditer(body) if "project" in body else ()):
        add(_clean(match.group(1) or match.group(2)), "projects")
    for match in (compiled(_TOOL).finditer(body) if any(w in body for w in _TOOL_WORDS) else ()):
        add(match.group(1), "tools")
    for name in people:
        if _is_cjk_run(name):
            add(_zh(name), "people", "subject" if text.lstrip().startswith(name) else "mention")
        else:
            add(_clean(name), "people")
    return sorted(found.values(), key=lambda m: -_RANK[m.role])


_VERBS = (r"(?:\s+(?:now|still|also|just|always|never|often|usually|really|"
          r"recently|finally|only))?\s+(?:is|was|has|had|went|goes|likes|loves|hates|"
          r"wants|works|lives|said|says|got|gets|started|finished|made|makes|bought|moved|plays|played|"
          r"visited|joined|met|took|prefers|needs|can|will|and|\w+ed|\w+s)\b")


def _looks_like_subject(text: str, end: int) -> bool:
    return bool(compiled(_VERBS).match(text, end))
