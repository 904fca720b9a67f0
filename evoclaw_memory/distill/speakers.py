"""Who said it: a sentence of a conversation turned into a fact that names its speaker.

"I went to a support group" said by Caroline is stored as "Caroline went to a support
group": a later "What did Caroline do?" must find it, and the fact must still read right
when nobody remembers who was talking. The first person becomes the speaker's name (with
the verb agreeing: "I am" -> "Caroline is", "I love" -> "Caroline loves"); in a two-person
conversation "you" becomes the other speaker. A sentence with no first person is kept as
the speaker's words ("Melanie: the kids loved it"). English only: a Chinese sentence gets
the name in front ("陈莉：我昨天去了医院" reads as naturally as a rewrite, and is safe).
Pure string rules; no I/O.
"""

from __future__ import annotations

import re
from typing import Optional

# Forms that stay after a third-person subject ("Caroline went", "Caroline can").
_KEEP = set("""was were had did could would should might must may can will shall went got
made saw took came met ran said sent told thought bought brought felt kept lost paid put read
sat spent stood won wrote began became ate drove flew forgot heard held left let meant rode
sang slept spoke swam taught threw understood woke wore built caught chose drew fell fought
found gave grew hid hung hurt knew lay led lit quit shot shut sold stuck struck tried just
really also never always still often usually recently finally actually totally already even
only once sometimes definitely absolutely set cut hit cost bet fit split spread""".split())
_ADVERBS = set("""just really also never always still often usually recently finally actually
totally already even only sometimes definitely absolutely""".split())
_IRREGULAR = {"am": "is", "are": "is", "have": "has", "do": "does", "'m": "is", "'ve": "has",
              "'re": "is", "'ll": "will", "'d": "would", "don't": "doesn't", "haven't": "hasn't",
              "aren't": "isn't", "'m not": "is not"}
_FIRST_RE = re.compile(r"\b(?:I(?:'m|'ve|'ll|'d|’m|’ve|’ll|’d)?|i(?:'m|'ve|'ll|'d)?|[Mm]y|[Mm]e|[Mm]ine|[Mm]yself)\b"
                       r"(?!['’]\w)")
_SECOND_RE = re.compile(r"\b(?:you(?:'re|'ve|'ll|'d|’re|’ve|’ll|’d)?|your|yours|yourself)\b(?!['’]\w)", re.I)
_NEXT_WORD_RE = re.compile(r"\s+([A-Za-z']+)")
_CJK_RE = re.compile(r"[\u3400-\u9fff]")


def attribute(sentence: str, speaker: Optional[str], addressee: Optional[str] = None) -> str:
    """`sentence` as a fact about what `speaker` said (unchanged when speaker is None)."""
    if not speaker:
        return sentence
    if _CJK_RE.search(sentence) and not re.search(r"[A-Za-z]{3,}", sentence):
        return sentence if sentence.startswith(speaker) else f"{speaker}：{sentence}"
    out = _replace(sentence, _FIRST_RE, speaker)
    if addressee:
        out = _replace(out, _SECOND_RE, addressee)
    if out == sentence and speaker.lower() not in sentence.lower():
        return f"{speaker}: {sentence}"
    return out[0].upper() + out[1:] if out and out[0].islower() else out


def _replace(text: str, pattern: re.Pattern[str], name: str) -> str:
    parts: list[str] = []
    last = 0
    named = False
    for match in pattern.finditer(text):
        word = match.group().replace("’", "'")
        lower = word.lower()
        parts.append(text[last:match.start()])
        last = match.end()
        if lower in ("my", "your", "mine", "yours"):
            parts.append(f"{name}'s" if not named else "their" if lower in ("my", "your") else "theirs")
        elif lower in ("myself", "yourself"):
            parts.append("themself")
        elif lower == "me" or (lower == "you" and _object_position(text, match)):
            parts.append(name)                     # clearer than "them" (the kids? the speaker?)
        elif _after_auxiliary(text, match):        # "did you go", "can I come": no agreement
            parts.append(name)
        else:                                          # the subject: I, I'm, you, you've...
            contraction = lower[len("i"):] if lower.startswith("i") else lower[len("you"):]
            subject, rest, last = _agree(text, last, contraction)
            parts.append(name + subject + rest)
        named = True
    parts.append(text[last:])
    return "".join(parts)


# Words that are not verbs: after the subject they take no agreement ("Nate then went", not
# "thens"), and after "you" they make it an object ("with you if", "with you soon").
_NOT_VERBS = set("""if soon when then there here now too again and or but so as than that who whom
whose which while because though although once before after later tomorrow today tonight yet
either neither alone first last both all each""".split())
_OBJECT_NEXT = set("""about with for to from at in on of by and or but so the a an this that these
those too guys all both back again so much very more up out off over down""".split()) | _NOT_VERBS
# -ly words that are verbs, not adverbs ("Caroline replies", "Caroline flies").
_LY_VERBS = {"rely", "reply", "apply", "supply", "imply", "comply", "multiply", "fly", "ally", "bully",
             "rally", "tally"}
_TAKES_OBJECT = set("""give gave gives tell told tells help helped show showed send sent ask asked
thank let make made see saw love miss call called meet met keep got get invite invited bring brought
teach taught want wanted remind reminded""".split())
_AUXILIARIES = set("""did do does can could will would should shall may might must have has had are
were was is to""".split())


def _object_position(text: str, match: re.Match[str]) -> bool:
    """"you" before punctuation, a preposition or an article is an object ("I told you about
    it", "for you."); before a verb it is the subject ("the people you work with")."""
    after = re.match(r"\s*([A-Za-z']+)", text[match.end():])
    if after is None or match.end() < len(text) and not text[match.end()].isspace():
        return True
    before = re.search(r"([A-Za-z']+)\s+$", text[:match.start()])
    return after.group(1).lower() in _OBJECT_NEXT or (
        before is not None and before.group(1).lower() in _TAKES_OBJECT)


def _after_auxiliary(text: str, match: re.Match[str]) -> bool:
    before = re.search(r"([A-Za-z']+)\s+$", text[:match.start()])
    return before is not None and before.group(1).lower() in _AUXILIARIES


def _agree(text: str, end: int, contraction: str) -> tuple[str, str, int]:
    """(the verb after the name, skipped words, where the rest of the text starts)."""
    if contraction:
        return " " + _IRREGULAR.get(contraction, contraction.lstrip("'")), "", end
    skipped = ""
    position = end
    while True:
        after = _NEXT_WORD_RE.match(text, position)
        if after is None:
            return skipped, "", position
        word = after.group(1)
        if word.lower() in _ADVERBS or _is_adverb(word):
            skipped += text[position:after.end()]
            position = after.end()
            continue
        lower = word.lower()
        if lower in _IRREGULAR:
            verb = _IRREGULAR[lower]
        elif lower in _KEEP or lower in _NOT_VERBS or lower.endswith(("ed", "n't")) or not word.isalpha() \
                or word[0].isupper():
            verb = word
        else:
            verb = _third_person(word)
        return skipped + text[position:after.start(1)] + verb, "", after.end()


def _is_adverb(word: str) -> bool:
    """"completely", "truly": skipped like "really" (not made "completelies")."""
    lower = word.lower()
    return lower.endswith("ly") and len(lower) > 3 and lower not in _LY_VERBS


def _third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
