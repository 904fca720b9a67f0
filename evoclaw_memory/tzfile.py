"""An IANA time zone read from the system's tz database file, without zoneinfo.

MEMORY.md shows each recent event on the owner's day (tiers.hot.owner_zone). For an owner
whose zone is not the device's (a Raspberry Pi kept on UTC, an owner in Lisbon), every
per-turn `context` used to import zoneinfo, which loads sysconfig and weakref: ~2.7 ms of a
CLI run on a 2-core VM (issue 29). `system_zone(name)` reads the zone's TZif file (RFC 8536)
from the standard folders and gives a tzinfo whose `fromutc` (what
`datetime.fromtimestamp(ts, zone)` calls) follows zoneinfo's own rules step by step: the
time type before the first transition, the transitions, and past the last one the file's
footer (a POSIX TZ string: "WET0WEST,M3.5.0/1,M10.5.0"), for the UTC year, as zoneinfo does.
tests/test_tzfile.py compares the local dates with zoneinfo's for every zone on the machine.

It answers None (the caller then uses zoneinfo) for anything it does not read exactly as
zoneinfo would: PYTHONTZPATH set (zoneinfo's search path then differs), a name that is not a
plain zone key, no file in the standard folders (zoneinfo may then find the tzdata package),
a version-1 file, a footer it does not parse. Only `fromutc` is exact; `utcoffset` of a
local wall time is approximate at a gap or fold (nothing here asks for it).
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import os
import re
from typing import Optional

# zoneinfo's default search path on POSIX (CPython's configured TZPATH).
SEARCH = ("/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/usr/share/lib/zoneinfo", "/etc/zoneinfo")
_KEY = re.compile(r"[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)*")
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_FOOTER = re.compile(r"(?P<std>[^<0-9:.+-]+|<[a-zA-Z0-9+-]+>)(?:(?P<stdoff>[+-]?\d{1,3}"
                     r"(?::\d{2}(?::\d{2})?)?)(?:(?P<dst>[^0-9:.+-]+|<[a-zA-Z0-9+-]+>)"
                     r"(?P<dstoff>[+-]?\d{1,3}(?::\d{2}(?::\d{2})?)?)?)?)?", re.ASCII)
_HMS = re.compile(r"(?P<sign>[+-])?(?P<h>\d{1,3})(?::(?P<m>\d{2})(?::(?P<s>\d{2}))?)?", re.ASCII)
_MONTH_RULE = re.compile(r"M(\d{1,2})\.(\d).(\d)", re.ASCII)


def system_zone(name: str) -> Optional[dt.tzinfo]:
    """The zone `name` ("Europe/Lisbon") from the system's tz files, or None (see above)."""
    if "PYTHONTZPATH" in os.environ or not _KEY.fullmatch(name) or len(name) > 255:
        return None
    return _read_zone(name)


@functools.lru_cache(maxsize=16)
def _read_zone(name: str) -> Optional[dt.tzinfo]:
    """Read once per process (~0.2 ms), as ZoneInfo(name) caches its zones: a long-running
    `serve` renders MEMORY.md at every hot-memory change."""
    for folder in SEARCH:
        try:
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read(1 << 20)
        except OSError:
            continue
        try:
            return _TZif(data)
        except (ValueError, IndexError):
            return None
    return None


class _Rule:
    """A footer with daylight saving: its offsets and the yearly start and end."""

    def __init__(self, std: int, dst: int, start: tuple, end: tuple):
        self.std, self.dst, self.start, self.end = std, dst, start, end

    def utcoff_fromutc(self, ts: int, year: int) -> int:
        start = _year_to_epoch(self.start, year) - self.std
        end = _year_to_epoch(self.end, year) - self.dst
        if start < end:
            is_dst = start <= ts < end
        else:
            is_dst = not (end <= ts < start)
        return self.dst if is_dst else self.std


class _TZif(dt.tzinfo):
    def __init__(self, data: bytes):
        if data[:4] != b"TZif" or data[4:5] == b"\x00":
            raise ValueError("not a TZif file of version 2 or later")
        at = 44 + _block_size(data, 0, 4)           # skip the version-1 header and data
        if data[at:at + 4] != b"TZif":
            raise ValueError("no second header")
        isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt = _counts(data, at)
        at += 44
        trans = [int.from_bytes(data[at + 8 * i:at + 8 * i + 8], "big", signed=True)
                 for i in range(timecnt)]
        at += 8 * timecnt
        index = list(data[at:at + timecnt])
        at += timecnt
        utcoff, isdst = [], []
        for i in range(typecnt):
            record = data[at + 6 * i:at + 6 * i + 6]
            utcoff.append(int.from_bytes(record[:4], "big", signed=True))
            isdst.append(record[4])
        at += 6 * typecnt + charcnt + leapcnt * 12 + isstdcnt + isutcnt
        if data[at:at + 1] != b"\n":
            raise ValueError("no footer")
        footer = data[at + 1:data.index(b"\n", at + 1)].decode("ascii")
        if not typecnt or any(i >= typecnt for i in index):
            raise ValueError("bad time types")
        self._trans = trans
        self._offsets = [utcoff[i] for i in index]
        standard = [off for off, d in zip(utcoff, isdst) if not d]
        self._before = standard[0] if standard else (self._offsets[0] if trans else None)
        self._rule: Optional[_Rule] = None
        self._after: Optional[int] = None
        if footer:
            parsed = _parse_footer(footer)
            if isinstance(parsed, _Rule):
                self._rule = parsed
            else:
                self._after = parsed
        else:
            self._after = self._offsets[-1] if self._offsets else utcoff[-1]

    def _utcoff_fromutc(self, ts: int, year: int) -> int:
        """zoneinfo.ZoneInfo.fromutc's choice of time type, for a UTC timestamp."""
        trans, n = self._trans, len(self._trans)
        if n and ts < trans[0]:
            return self._before or 0
        if (n == 0 or ts > trans[-1]) and self._rule is not None:
            return self._rule.utcoff_fromutc(ts, year)
        if n == 0:
            return self._after or 0
        idx = bisect.bisect_right(trans, ts)
        if n > 1 and ts >= trans[1]:
            return self._offsets[idx - 1]
        if ts > trans[-1]:
            return self._after or 0
        return self._offsets[0]

    def fromutc(self, when: dt.datetime) -> dt.datetime:
        if not isinstance(when, dt.datetime) or when.tzinfo is not self:
            raise ValueError("fromutc: a datetime whose tzinfo is this zone")
        ts = (when.replace(tzinfo=None) - _EPOCH) // dt.timedelta(seconds=1)
        return when + dt.timedelta(seconds=self._utcoff_fromutc(ts, when.year))

    def utcoffset(self, when: Optional[dt.datetime]) -> Optional[dt.timedelta]:
        if when is None:
            return None
        local = (when.replace(tzinfo=None) - _EPOCH) // dt.timedelta(seconds=1)
        guess = self._utcoff_fromutc(local, when.year)
        return dt.timedelta(seconds=self._utcoff_fromutc(local - guess, when.year))

    def dst(self, when: Optional[dt.datetime]) -> Optional[dt.timedelta]:
        return None

    def tzname(self, when: Optional[dt.datetime]) -> Optional[str]:
        return None


def _counts(data: bytes, at: int) -> tuple[int, ...]:
    """isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt of the header at `at`."""
    return tuple(int.from_bytes(data[at + 20 + 4 * i:at + 24 + 4 * i], "big") for i in range(6))


def _block_size(data: bytes, at: int, time_size: int) -> int:
    isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt = _counts(data, at)
    return (timecnt * (time_size + 1) + typecnt * 6 + charcnt + leapcnt * (time_size + 4)
            + isstdcnt + isutcnt)


def _seconds(text: str, limit: int) -> int:
    """[+-]hh[:mm[:ss]] as seconds, hours at most `limit`."""
    match = _HMS.fullmatch(text)
    if match is None:
        raise ValueError(f"bad time {text!r}")
    h, m, s = (int(v or 0) for v in match.group("h", "m", "s"))
    if h > limit:
        raise ValueError(f"hours over {limit}: {text!r}")
    total = h * 3600 + m * 60 + s
    return -total if match.group("sign") == "-" else total


def _parse_footer(footer: str) -> "int | _Rule":
    """A fixed UTC offset, or a rule with daylight saving (zoneinfo's _parse_tz_str)."""
    offsets, *rules = footer.split(",", 1)
    match = _FOOTER.fullmatch(offsets)
    if match is None:
        raise ValueError(f"bad TZ string {footer!r}")
    # POSIX offsets count west of Greenwich: "+5" is UTC-5.
    std = -_seconds(match.group("stdoff"), 24) if match.group("stdoff") else 0
    if match.group("dst") is None:
        if rules:
            raise ValueError(f"rule without daylight saving: {footer!r}")
        return std
    dst = -_seconds(match.group("dstoff"), 24) if match.group("dstoff") else std + 3600
    if not rules:
        raise ValueError(f"no rules: {footer!r}")
    start_end = rules[0].split(",", 1)
    if len(start_end) != 2:
        raise ValueError(f"bad rules: {footer!r}")
    return _Rule(std, dst, _parse_day(start_end[0]), _parse_day(start_end[1]))


def _parse_day(text: str) -> tuple:
    """("M", month, week, weekday, seconds) or ("J"/"N", day, seconds) of one rule."""
    date, *time = text.split("/", 1)
    seconds = _seconds(time[0], 167) if time else 7200
    if date[:1] == "M":
        match = _MONTH_RULE.fullmatch(date)
        if match is None:
            raise ValueError(f"bad rule {text!r}")
        month, week, weekday = map(int, match.groups())
        if not (1 <= month <= 12 and 1 <= week <= 5 and 0 <= weekday <= 6):
            raise ValueError(f"bad rule {text!r}")
        return ("M", month, week, weekday, seconds)
    julian = date[:1] == "J"
    day = int(date[1:] if julian else date)
    if not (int(julian) <= day <= 365):
        raise ValueError(f"bad day {text!r}")
    return ("J" if julian else "N", day, seconds)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_before_year(year: int) -> int:
    y = year - 1
    return y * 365 + y // 4 - y // 100 + y // 400 - _EPOCH_ORDINAL


_DAYS_BEFORE_MONTH = (-1, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)


def _year_to_epoch(rule: tuple, year: int) -> int:
    """The rule's moment in `year`, in seconds of local wall time since 1970 (zoneinfo's
    _DayOffset and _CalendarOffset)."""
    if rule[0] == "M":
        _, month, week, weekday, seconds = rule
        first = dt.date(year, month, 1)
        following = dt.date(year + 1, 1, 1) if month == 12 else dt.date(year, month + 1, 1)
        days_in_month = (following - first).days
        # POSIX weekdays count from Sunday = 0; date.weekday() from Monday = 0.
        day = (weekday - (first.weekday() + 1)) % 7 + 1 + (week - 1) * 7
        if day > days_in_month:
            day -= 7
        ordinal = (_days_before_year(year) + _DAYS_BEFORE_MONTH[month]
                   + (month > 2 and _is_leap(year)) + day)
        return ordinal * 86400 + seconds
    kind, day, seconds = rule
    if kind == "J" and day >= 59 and _is_leap(year):
        day += 1
    return (_days_before_year(year) + day) * 86400 + seconds
