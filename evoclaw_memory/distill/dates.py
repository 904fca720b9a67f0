"""Relative dates into absolute ones, inside the text of a fact (SPEC §4, issue 13).

A fact is read long after the conversation: "yesterday" then means nothing, "7 May 2023"
still does. `resolve_dates(text, when)` rewrites the relative expressions of English and
Chinese against the time the words were said, and says which dates it found and whether
they lie ahead (a dated plan: "the vet on Friday 3pm").

Anchored periods keep their anchor ("last week" -> "in the week before 8 May 2023"): the
exact days are unknown, the anchor is not. A weekday alone is past or future by the
sentence's tense ("I went on Friday" / "the vet on Friday"). Pure; no I/O.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import NamedTuple

_MONTHS = ("January February March April May June July August September October November "
           "December").split()
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_ZH_WEEKDAYS = "一二三四五六日"
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2}
_ZH_NUMBERS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
               "九": 9, "十": 10}
# Words after which the date stands bare ("since 7 May", not "since on 7 May").
_PREPOSITIONS = {"on", "since", "until", "till", "by", "from", "before", "after", "for", "of",
                 "in", "at", "as"}
_FUTURE_RE = re.compile(r"\b(?:will|won't|shall|going to|gonna|plan(?:s|ning)? to|booked|scheduled"
                        r"|appointment|due|need to|have to|must|remind|planning|can't wait)\b|'ll\b"
                        r"|要|打算|计划|准备|约|安排|记得", re.I)
# Past tense: a weekday alone then lies behind ("I won on Friday"); irregular forms listed.
_PAST_RE = re.compile(r"\b(?:was|were|went|did|had|got|took|made|saw|came|met|ago|last|won|ran|left|bought"
                      r"|found|told|felt|kept|lost|paid|sat|spent|stood|wrote|began|became|ate|drove|flew"
                      r"|forgot|heard|held|rode|sang|slept|spoke|swam|taught|threw|woke|wore|built|caught"
                      r"|chose|drew|fell|fought|gave|grew|hung|knew|led|quit|sold|brought|thought|sent|said"
                      r"|finished|just)\b"
                      r"|\b[a-z]{3,}ed\b|了|过", re.I)

_NUM = r"(?:\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of)"
# A weekday by name or its usual short form ("last Fri", "last Tues"), after an anchor word.
_ABBREVIATED = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4,
                "sat": 5, "sun": 6}
_WD = "|".join(_WEEKDAYS)
_WD_SHORT = "|".join(sorted(_ABBREVIATED, key=len, reverse=True))
_EN_RE = re.compile(
    r"\b(?:(?P<dby>the day before yesterday)|(?P<dat>the day after tomorrow)"
    r"|(?P<yday>yesterday)(?:\s+(?P<ypart>morning|afternoon|evening|night))?"
    r"|(?P<today>today)|(?P<tonight>tonight|this evening)|(?P<lastnight>last night)"
    r"|this\s+(?P<todaypart>morning|afternoon)"
    r"|(?P<tmrw>tomorrow)(?:\s+(?P<tpart>morning|afternoon|evening|night))?"
    rf"|(?P<about>(?:about|around|almost|nearly|over|roughly)\s+)?(?P<n>{_NUM})\s+(?P<unit>day|week|month|year)s?\s+ago"
    r"|(?P<few>a few|several)\s+(?P<funit>day|week)s\s+ago"
    r"|(?P<rel>last|next|this|this past|this coming|coming)\s+"
    rf"(?P<what>week(?:end)?|month|year|{_WD}|{_WD_SHORT})"
    rf"|(?P<on>on\s+)?(?P<wd>{_WD})(?![-\w])"
    r")(?![-\w])", re.I)
_ZH_RE = re.compile(
    r"(?P<zday>大前天|前天|昨天|昨晚|今天|今晚|明天|后天|大后天)"
    r"|(?P<zrel>上上|上|下下|下|这|本)(?:个)?(?:周|星期|礼拜)(?P<zwd>[一二三四五六日天])?"
    r"|(?:周|星期|礼拜)(?P<zbare>[一二三四五六日天])"
    r"|(?P<zm>上|下|这|本)个?月|(?P<zy>去年|前年|今年|明年)"
    r"|(?P<zn>\d{1,2}|[一两二三四五六七八九十])(?P<zunit>天|周|个星期|个月|年)(?:前|以前)")


class Resolved(NamedTuple):
    text: str
    dates: list[dt.date]     # the days named (the anchor of a period)
    future: bool             # some date lies after the day the words were said


def format_date(day: dt.date) -> str:
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def _zh(day: dt.date) -> str:
    return f"{day.year}年{day.month}月{day.day}日"


def _shift_months(day: dt.date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def resolve_dates(text: str, when: dt.datetime) -> Resolved:
    """`text` with relative dates made absolute against `when` (the words' local time)."""
    today = when.date()
    found: list[dt.date] = []
    if _EN_RE.search(text) is None and _ZH_RE.search(text) is None:
        return Resolved(text, [], False)
    tense_future = _FUTURE_RE.search(text) is not None
    tense_past = _PAST_RE.search(text) is not None and not tense_future

    def english(match: re.Match[str]) -> str:
        g = match.groupdict()
        if _ABSOLUTE_NEXT_RE.match(text, match.end()) or _habitual(text, match):
            # "Wednesday 14 January 2026" is already absolute (resolved once, never again:
            # a restated or pasted fact came back "... 14 January 2026 14 January 2026");
            # "every Saturday morning", "Saturday mornings" name no one day.
            return match.group()
        # "since yesterday", "yesterday was fun": the date stands bare (no "on" before it)
        bare = _bare(text, match.start()) or _SUBJECT_NEXT_RE.match(text, match.end()) is not None
        on = "" if bare else "on "
        if g["dby"] or g["dat"]:
            day = today + dt.timedelta(days=-2 if g["dby"] else 2)
            found.append(day)
            return on + format_date(day)
        if g["yday"] or g["tmrw"]:
            day = today + dt.timedelta(days=-1 if g["yday"] else 1)
            found.append(day)
            part = g["ypart"] or g["tpart"]
            return (f"{'' if bare else 'on '}the {part} of {format_date(day)}" if part
                    else on + format_date(day))
        if g["lastnight"]:
            day = today - dt.timedelta(days=1)
            found.append(day)
            return f"{'' if bare else 'on '}the night of {format_date(day)}"
        if g["todaypart"]:
            found.append(today)
            return f"{'' if bare else 'on '}the {g['todaypart'].lower()} of {format_date(today)}"
        if g["today"] or g["tonight"]:
            found.append(today)
            return (f"{'' if bare else 'on '}the evening of {format_date(today)}" if g["tonight"]
                    else on + format_date(today))
        if g["n"] or g["few"]:
            unit = (g["unit"] or g["funit"]).lower()
            n = _NUMBERS.get(g["n"].lower(), 0) if g["n"] and not g["n"].isdigit() else int(g["n"] or 0)
            if g["few"]:
                found.append(today)
                return f"a few {unit}s before {format_date(today)}"
            if g["about"]:          # "about a year ago": roughly, so not "in 2022" as if exact
                day = _back(today, n, unit)
                found.append(day)
                rough = g["about"].strip()
                if unit == "year":                  # "nearly a year ago" -> "around 2022"
                    return f"around {day.year}"
                if unit == "month":
                    return f"around {_MONTHS[day.month - 1]} {day.year}"
                return f"{rough} {g['n']} {unit}{'s' if n != 1 else ''} before {format_date(today)}"
            return _ago(n, unit, today, found, bare)
        if g["what"]:
            what = g["what"].lower().rstrip(".")
            if what in _ABBREVIATED:
                what = _WEEKDAYS[_ABBREVIATED[what]]
            return _period(g["rel"].lower(), what, today, found, bare)
        if g["wd"]:
            if not g["on"] and not _weekday_context(text, match):
                return match.group()          # "Friday" as a name ("Friday the cat") stays
            day = _weekday(today, _WEEKDAYS.index(g["wd"].lower()), future=not tense_past)
            found.append(day)
            return f"{'on ' if g['on'] or not bare else ''}{g['wd'].capitalize()} {format_date(day)}"
        return match.group()

    def chinese(match: re.Match[str]) -> str:
        g = match.groupdict()
        if g["zday"]:
            offset = {"大前天": -3, "前天": -2, "昨天": -1, "昨晚": -1, "今天": 0, "今晚": 0,
                      "明天": 1, "后天": 2, "大后天": 3}[g["zday"]]
            day = today + dt.timedelta(days=offset)
            found.append(day)
            return _zh(day) + ("晚上" if g["zday"].endswith("晚") else "")
        if g["zrel"] or g["zbare"]:
            weeks = {"上上": -2, "上": -1, "下下": 2, "下": 1, "这": 0, "本": 0}.get(g["zrel"] or "这", 0)
            monday = today - dt.timedelta(days=today.weekday()) + dt.timedelta(weeks=weeks)
            wd = g["zwd"] or g["zbare"]
            if wd:
                day = monday + dt.timedelta(days=_ZH_WEEKDAYS.index("日" if wd == "天" else wd))
                found.append(day)
                return f"{_zh(day)}（周{wd}）"
            found.append(monday)
            return f"{_zh(monday)}那周"
        if g["zm"]:
            year, month = _shift_months(today, {"上": -1, "下": 1}.get(g["zm"], 0))
            found.append(dt.date(year, month, 1))
            return f"{year}年{month}月"
        if g["zy"]:
            year = today.year + {"前年": -2, "去年": -1, "今年": 0, "明年": 1}[g["zy"]]
            found.append(dt.date(year, 1, 1))
            return f"{year}年"
        if g["zn"]:
            n = int(g["zn"]) if g["zn"].isdigit() else _ZH_NUMBERS[g["zn"]]
            unit = {"天": "day", "周": "week", "个星期": "week", "个月": "month", "年": "year"}[g["zunit"]]
            day = _back(today, n, unit)
            found.append(day)
            return {"day": _zh(day), "week": f"{_zh(day)}前后", "month": f"{day.year}年{day.month}月",
                    "year": f"{day.year}年"}[unit]
        return match.group()

    out = _EN_RE.sub(english, text)
    out = _ZH_RE.sub(chinese, out)
    if text[:1].isupper() and out[:1].islower():      # "Last night was ..." -> "The night of ..."
        out = out[0].upper() + out[1:]
    return Resolved(out, found, any(day > today for day in found))


_ABSOLUTE_NEXT_RE = re.compile(
    r",?\s+(?:the\s+)?\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:" + "|".join(_MONTHS) + r")\b"
    r"|,?\s+(?:" + "|".join(_MONTHS) + r")\s+\d{1,2}\b|\s+\d{4}-\d{2}-\d{2}", re.I)
_HABITUAL_BEFORE_RE = re.compile(r"\b(?:every|each|most|all|usual|other|alternate)\s+$", re.I)
_HABITUAL_AFTER_RE = re.compile(r"s?\s+(?:mornings|afternoons|evenings|nights)\b", re.I)


def _habitual(text: str, match: re.Match[str]) -> bool:
    """A weekday that names a habit, not a day: "every Friday", "Saturday mornings"."""
    if not match.groupdict().get("wd") and (match.groupdict().get("what") or "").lower() not in _WEEKDAYS:
        return False
    return _HABITUAL_BEFORE_RE.search(text, 0, match.start()) is not None \
        or _HABITUAL_AFTER_RE.match(text, match.end()) is not None


_SUBJECT_NEXT_RE = re.compile(r"\s+(?:was|were|is|has been|had been)\b", re.I)


def _bare(text: str, start: int) -> bool:
    previous = re.search(r"([A-Za-z]+)\W*$", text[:start])
    return bool(previous and previous.group(1).lower() in _PREPOSITIONS)


def _weekday_context(text: str, match: re.Match[str]) -> bool:
    # A weekday after "by", "until", "since"..., or before a time ("Friday 3pm"), is a date.
    return _bare(text, match.start()) or re.match(r"\s*(?:at\s+)?\d", text[match.end():]) is not None \
        or re.match(r"\s*(?:morning|afternoon|evening|night)", text[match.end():], re.I) is not None


def _weekday(today: dt.date, weekday: int, future: bool) -> dt.date:
    ahead = (weekday - today.weekday()) % 7
    if future:
        return today + dt.timedelta(days=ahead or 7)
    return today - dt.timedelta(days=(today.weekday() - weekday) % 7 or 7)


def _back(today: dt.date, n: int, unit: str) -> dt.date:
    if unit == "day":
        return today - dt.timedelta(days=n)
    if unit == "week":
        return today - dt.timedelta(weeks=n)
    if unit == "month":
        year, month = _shift_months(today, -n)
        return dt.date(year, month, min(today.day, 28))
    return dt.date(today.year - n, 1, 1)


def _ago(n: int, unit: str, today: dt.date, found: list[dt.date], bare: bool) -> str:
    day = _back(today, n, unit)
    found.append(day)
    if unit == "day":
        return ("" if bare else "on ") + format_date(day)
    if unit == "week":
        return f"{'' if bare else 'in '}the week of {format_date(day)}"
    if unit == "month":
        return f"{'' if bare else 'in '}{_MONTHS[day.month - 1]} {day.year}"
    return f"{'' if bare else 'in '}{day.year}"


def _period(rel: str, what: str, today: dt.date, found: list[dt.date], bare: bool) -> str:
    step = -1 if rel in ("last", "this past") else 1 if rel in ("next", "this coming", "coming") else 0
    pre = "" if bare else ("on " if what == "weekend" or what in _WEEKDAYS else "in ")
    if what in _WEEKDAYS:
        weekday = _WEEKDAYS.index(what)
        day = _weekday(today, weekday, future=step >= 0) if step else _weekday(today, weekday, True)
        if step == 0 and (weekday - today.weekday()) % 7 == 0:
            day = today
        found.append(day)
        return f"{'' if bare else 'on '}{what.capitalize()} {format_date(day)}"
    if what == "week":
        found.append(today + dt.timedelta(weeks=step))
        anchor = {-1: "the week before", 1: "the week after", 0: "the week of"}[step]
        return f"{pre}{anchor} {format_date(today)}"
    if what == "weekend":
        found.append(today + dt.timedelta(days=7 * step or 1))
        anchor = {-1: "the weekend before", 1: "the weekend after", 0: "the weekend of"}[step]
        return f"{pre}{anchor} {format_date(today)}"
    if what == "month":
        year, month = _shift_months(today, step)
        found.append(dt.date(year, month, 1) if step else today)
        return f"{pre}{_MONTHS[month - 1]} {year}"
    found.append(dt.date(today.year + step, 1, 1) if step else today)
    return f"{pre}{today.year + step}"
