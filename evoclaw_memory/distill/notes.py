"""Daily notes (SPEC §5): find them, turn them into facts, check them for gaps.

A daily note is the markdown file an agent keeps per day in `<workspace>/memory/`, named
`YYYY-MM-DD.md` or `YYYY-MM-DD-<anything>.md`. Only `find_daily_notes` touches the disk.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path
from typing import Iterator, NamedTuple

import msgspec

from evoclaw_memory.distill.rules import Block, facts_from_blocks
from evoclaw_memory.limits import DISTILLED_FACT_MAX_CHARS
from evoclaw_memory.distill.metadata import extract_metadata, looks_like_command, merge_metadata
from evoclaw_memory.models import FactDraft, Metadata

NOTE_SOURCE = "daily-note"
# A note is written to be remembered, so a bullet needs less evidence than a chat line.
NOTE_MIN_SCORE = 1

_NOTE_NAME_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2}).*\.md\Z")


class NoteWarning(msgspec.Struct):
    """Something a daily note leaves incomplete, at a 1-based line, with what to add."""

    line: int
    kind: str  # "missing-link" | "missing-command" | "missing-next-step"
    message: str
    suggestion: str


# ---------------------------------------------------------------------------------------
# Finding notes
# ---------------------------------------------------------------------------------------


def find_daily_notes(workspace: Path, days: int = 2, today: date | None = None) -> list[Path]:
    """`workspace/memory/YYYY-MM-DD*.md` files of the last `days` days (today included), by date."""
    folder = Path(workspace) / "memory"
    if days <= 0 or not folder.is_dir():
        return []
    last = today or date.today()
    first = last - timedelta(days=days - 1)
    found = []
    for path in folder.iterdir():
        day = _note_date(path.name)
        if day is not None and first <= day <= last and path.is_file():
            found.append((day, path.name, path))
    return [path for _, _, path in sorted(found)]


def _note_date(name: str) -> date | None:
    match = _NOTE_NAME_RE.match(name)
    if not match:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:  # 2025-02-30.md
        return None


# ---------------------------------------------------------------------------------------
# Reading markdown
# ---------------------------------------------------------------------------------------

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE_RE = re.compile(r"^ {0,3}(```|~~~)")
_BULLET_RE = re.compile(r"^(\s*)(?:[-*+•]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_DATE_ONLY_RE = re.compile(r"^[\d\s./-]+\Z")
_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")


class _Line(NamedTuple):
    number: int  # 1-based
    text: str
    kind: str  # "heading" | "fence" | "code" | "bullet" | "text" | "blank" | "front-matter"


def _classify_lines(text: str) -> Iterator[_Line]:
    """Each line of a markdown note with what it is (fences and front matter tracked)."""
    # Split on line breaks only (not on the rarer separators str.splitlines knows), so line
    # numbers match what an editor shows.
    lines = _LINE_BREAK_RE.split(text) if text else []
    in_front_matter = bool(lines) and lines[0].strip() == "---"
    in_fence = False
    for number, line in enumerate(lines, start=1):
        if in_front_matter:
            yield _Line(number, line, "front-matter")
            if number > 1 and line.strip() in ("---", "..."):
                in_front_matter = False
            continue
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            yield _Line(number, line, "fence")
        elif in_fence:
            yield _Line(number, line, "code")
        elif not line.strip():
            yield _Line(number, line, "blank")
        elif _HEADING_RE.match(line):
            yield _Line(number, line, "heading")
        elif _BULLET_RE.match(line):
            yield _Line(number, line, "bullet")
        else:
            yield _Line(number, line, "text")


# ---------------------------------------------------------------------------------------
# Facts from a note
# ---------------------------------------------------------------------------------------


def extract_note_facts(text: str, known_categories: list[str]) -> list[FactDraft]:
    """Facts of a daily note: its bullets and sentences, headings hinting at the category."""
    return facts_from_blocks(
        list(_note_blocks(text)), known_categories, NOTE_SOURCE, min_score=NOTE_MIN_SCORE
    )


class _BlockDraft:
    """A bullet or paragraph being read, with the code fences that follow it."""

    def __init__(self, text: str, hints: tuple[str, ...], bullet: bool = False) -> None:
        self.lines, self.hints, self.bullet, self.extra = [text], hints, bullet, Metadata()

    def block(self) -> Block:
        text = " ".join(line.strip() for line in self.lines)
        # A short bullet is one fact as written; paragraphs and long bullets are split.
        whole = self.bullet and len(text) <= DISTILLED_FACT_MAX_CHARS
        return Block(text, self.hints, whole=whole, extra=self.extra)


def _note_blocks(text: str) -> Iterator[Block]:
    headings: list[tuple[int, str]] = []  # (level, text) of the headings above
    current: _BlockDraft | None = None
    code: list[str] = []
    after_blank = False
    for line in _classify_lines(text):
        if line.kind == "blank":
            # Ends a paragraph, but the block stays open to own a code fence that follows.
            after_blank = True
            continue
        starts_paragraph, after_blank = after_blank, False
        if line.kind == "heading":
            if current:
                yield current.block()
                current = None
            level, title = _heading(line.text)
            headings = [h for h in headings if h[0] < level] + [(level, title)]
        elif line.kind == "bullet":
            if current:
                yield current.block()
            current = _BlockDraft(_BULLET_RE.sub("", line.text, count=1), _hints(headings), bullet=True)
        elif line.kind == "text":
            if current is None or starts_paragraph:
                if current:
                    yield current.block()
                current = _BlockDraft(line.text, _hints(headings))
            else:
                current.lines.append(line.text)  # a wrapped bullet or paragraph line
        elif line.kind == "code":
            code.append(line.text)
        elif line.kind == "fence" and code:
            # The closing fence: the commands in it belong to the bullet or paragraph above,
            # or, with none, to the heading.
            metadata = _code_metadata(code)
            code = []
            if current is None:
                current = _BlockDraft(headings[-1][1] if headings else "", _hints(headings))
            current.extra = merge_metadata(current.extra, metadata)
    if code:  # an unclosed fence at the end of the note
        if current is None:
            current = _BlockDraft(headings[-1][1] if headings else "", _hints(headings))
        current.extra = merge_metadata(current.extra, _code_metadata(code))
    if current:
        yield current.block()


def _heading(line: str) -> tuple[int, str]:
    match = _HEADING_RE.match(line)
    assert match is not None
    return len(match.group(1)), match.group(2)


def _hints(headings: list[tuple[int, str]]) -> tuple[str, ...]:
    # "## 2025-11-30" says nothing about a category.
    return tuple(title for _, title in headings if not _DATE_ONLY_RE.match(title))


def _code_metadata(code: list[str]) -> Metadata:
    """Links, paths and commands of a code fence; each line that reads as a command counts."""
    commands = []
    for line in code:
        stripped = line.strip()
        if stripped.startswith("$ "):
            stripped = stripped[2:].strip()
        if stripped and not stripped.startswith("#") and looks_like_command(stripped):
            commands.append(stripped)
    found = extract_metadata("\n".join(code))
    return merge_metadata(Metadata(commands=commands), found)


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------

# Words that introduce a tool, before its name ("installed Grafana") or after it ("the Foo app").
_TOOL_VERBS_RE = re.compile(
    r"\b(?:using|use|used|uses|installed|install|installing|set up|setting up|deployed|deploy|deploying"
    r"|configured|configure|tried|trying|switched to|migrated to|moved to|signed up for|subscribed to"
    r"|adopted|added)\b"
    r"|用了|使用|安装了?|部署了?|配置了?|装了|试了|换成|迁移到|改用",
    re.IGNORECASE,
)
_TOOL_NOUNS_RE = re.compile(
    r"\b(?:tool|tools|service|services|library|libraries|lib|app|apps|api|apis|plugin|plugins|extension"
    r"|package|framework|platform|server|cli|sdk|dashboard|bot)\b|工具|服务|库|应用|插件|平台|框架",
    re.IGNORECASE,
)
# Capitalised or CamelCase tokens (Grafana, GitHub, PostgreSQL, iCloud, AWS, Home Assistant).
_PRODUCT_TOKEN_RE = re.compile(
    r"(?<![A-Za-z0-9_./@-])"
    r"(?:[A-Z][A-Za-z0-9+#.-]*[A-Za-z0-9+#]|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z])"
    r"(?![A-Za-z0-9_])"
)
_CAMEL_CASE_RE = re.compile(r"^(?:[A-Z][a-z0-9]+[A-Z]|[a-z]+[A-Z])")
# Capitalised words that are not products.
_NOT_PRODUCTS = frozenset("""
    I A An The We You He She They It My Our Your This That These Those Today Tomorrow Yesterday
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May
    June July August September October November December Also And But Or So Then Next Now New
    TODO FIXME NOTE OK API APIs CLI SDK UI URL HTTP HTTPS SSH DNS VPN TLS SSL JSON YAML CSV SQL
    CPU GPU RAM USB OS PR CI CD VM IP TCP UDP App Apps Tool Tools Service Library Plugin Server
    """.split())
# How far (in characters) a tool word may be from the name it introduces.
_TOOL_WORD_REACH = 16

_ACTION_RE = re.compile(
    r"\b(?:install(?:ed|ing|s)?|deploy(?:ed|ing|s)?|configur(?:e|ed|es|ing)|set(?:ting)? up|setup|"
    r"upgrad(?:e|ed|es|ing)|migrat(?:e|ed|es|ing))\b|安装|部署|配置|设置|升级|迁移|搭建",
    re.IGNORECASE,
)
_DECISION_RE = re.compile(
    r"\b(?:decided|decide to|we will|we'll|agreed|chose|chosen|settled on|going with)\b|决定|确定|选择了|同意",
    re.IGNORECASE,
)
_NEXT_STEP_RE = re.compile(
    r"\bnext\b|\btodo\b|- \[ \]|\bwill\b|'ll\b|\bfollow[- ]up\b|\baction items?\b|\bdeadline\b"
    r"|\bdue\b|\bowner:|\bby (?:mon|tue|wed|thu|fri|sat|sun|tomorrow|tonight|end of|the end|\d)"
    r"|\btomorrow\b|\btonight\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+\d"
    r"|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|"
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|\d{4}-\d{2}-\d{2}|"
    r"下一步|待办|明天|后天|下周|接下来|之后|截止|\d+月\d+[日号]|周[一二三四五六日天]|星期[一二三四五六日天]",
    re.IGNORECASE,
)
_COMMAND_HINT_RE = re.compile(r"`[^`]+`|^\s*\$\s")


def validate_note(text: str) -> list[NoteWarning]:
    """Gaps in a daily note: tools without links, actions without commands, decisions without next steps."""
    lines = list(_classify_lines(text))
    warnings: list[NoteWarning] = []
    for index, line in enumerate(lines):
        if line.kind not in ("bullet", "text"):
            continue
        warnings.extend(_check_link(lines, index))
        warnings.extend(_check_command(lines, index))
        warnings.extend(_check_next_step(lines, index))
    return warnings


def _following(lines: list[_Line], index: int, count: int) -> list[_Line]:
    return lines[index + 1 : index + 1 + count]


def _check_link(lines: list[_Line], index: int) -> list[NoteWarning]:
    line = lines[index]
    names = product_names(line.text)
    if not names:
        return []
    if any(extract_metadata(other.text).urls for other in [line, *_following(lines, index, 1)]):
        return []
    listed = ", ".join(names)
    return [
        NoteWarning(
            line=line.number,
            kind="missing-link",
            message=f"{listed} mentioned without a link",
            suggestion=f"Add the URL of {names[0]} (homepage, docs, repository or dashboard) "
            "on this line or the next.",
        )
    ]


def product_names(line: str) -> list[str]:
    """Names that read as a tool or service: capitalised words beside 'using', 'installed', 'app'..."""
    # Links and code are not names (and a linked name is handled by the caller).
    masked = _mask(line, extract_metadata(line).urls) if ("/" in line or "." in line) else line
    masked = re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), masked)
    verbs = [m.span() for m in _TOOL_VERBS_RE.finditer(masked)]
    nouns = [m.span() for m in _TOOL_NOUNS_RE.finditer(masked)]
    if not verbs and not nouns:
        return []
    # The tool words themselves ("Using", "App") are not part of a name.
    masked = _blank(masked, verbs + nouns)
    verb_ends = [end for _, end in verbs]
    noun_starts = [start for start, _ in nouns]
    names: list[str] = []
    for start, end, name in _capitalised_runs(masked):
        after_verb = any(0 <= start - verb_end <= _TOOL_WORD_REACH for verb_end in verb_ends)
        before_noun = any(0 <= noun_start - end <= _TOOL_WORD_REACH for noun_start in noun_starts)
        camel = any(_CAMEL_CASE_RE.match(word) for word in name.split())
        if (after_verb or before_noun or camel) and name not in names:
            names.append(name)
    return names


def _capitalised_runs(text: str) -> list[tuple[int, int, str]]:
    """(start, end, words) of capitalised tokens, neighbours joined: "Home Assistant" is one name."""
    runs: list[list] = []
    for match in _PRODUCT_TOKEN_RE.finditer(text):
        token = match.group()
        if token in _NOT_PRODUCTS or len(token) < 2:
            continue
        if runs and text[runs[-1][1] : match.start()] == " ":
            runs[-1][1], runs[-1][2] = match.end(), f"{runs[-1][2]} {token}"
        else:
            runs.append([match.start(), match.end(), token])
    return [(start, end, name) for start, end, name in runs]


def _mask(text: str, values: list[str]) -> str:
    for value in values:
        text = text.replace(value, " " * len(value))
    return text


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _check_command(lines: list[_Line], index: int) -> list[NoteWarning]:
    line = lines[index]
    action = _ACTION_RE.search(line.text)
    if not action or re.match(r"^\s*[-*+]\s+\[ \]", line.text):
        return []  # an unchecked task has not been done yet: no command to record
    for other in [line, *_following(lines, index, 2)]:
        if (
            other.kind in ("fence", "code")
            or _COMMAND_HINT_RE.search(other.text)
            or extract_metadata(other.text).commands
        ):
            return []
    verb = action.group()
    return [
        NoteWarning(
            line=line.number,
            kind="missing-command",
            message=f"'{verb}' without the command that did it",
            suggestion="Add the exact command in backticks (or a `$ ` line or a code block) "
            "on this line or the next two.",
        )
    ]


def _check_next_step(lines: list[_Line], index: int) -> list[NoteWarning]:
    line = lines[index]
    decision = _DECISION_RE.search(line.text)
    if not decision:
        return []
    # The decision's own words ("we will") do not count as its next step.
    rest = line.text[: decision.start()] + " " + line.text[decision.end() :]
    if _NEXT_STEP_RE.search(rest) or any(_NEXT_STEP_RE.search(o.text) for o in _following(lines, index, 3)):
        return []
    return [
        NoteWarning(
            line=line.number,
            kind="missing-next-step",
            message=f"decision ('{decision.group()}') without a next step",
            suggestion="Add what happens next, who does it and by when "
            "(e.g. '- [ ] next: ... by Friday') within three lines.",
        )
    ]
