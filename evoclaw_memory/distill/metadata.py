"""Pull links, shell commands and file paths out of free text (SPEC §4 "Metadata extraction").

Everything here is a pure function over strings. Each regex scans the text once (no
nested quantifiers that could backtrack, start positions limited by look-behinds), and the
scans a text cannot need are skipped by a substring test, so a 1 MB input stays linear.

Extraction order matters: URLs are found first and blanked out, so that the path finder
does not see `/foo` inside `https://x.org/foo`; backticked code is blanked out before
looking for bare domains and prose commands, so `logger.info` in code is not a link.

The link and path patterns compile on first use (`compiled`), after their substring test:
every CLI `store` is a fresh process, and most facts hold no link and no path.
"""

from __future__ import annotations

import functools
import re
from typing import Callable, Iterable

from evoclaw_memory.limits import METADATA_MAX_COMMANDS, METADATA_MAX_PATHS, METADATA_MAX_URLS
from evoclaw_memory.models import Metadata


def words_regex(words: Iterable[str]) -> str:
    """A regex alternation of `words` as a prefix tree, so matching costs one branch per letter."""
    tree: dict = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}
    return _tree_regex(tree)


def _tree_regex(node: dict) -> str:
    branches = [re.escape(ch) + _tree_regex(child) for ch, child in sorted(node.items()) if ch]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    # Longest match first: the optional end of a word is tried before stopping here.
    return f"(?:{body})?" if "" in node else body


# Longer than any real link/command/path: such a match is junk (or an attack on our caps).
_MAX_ITEM_CHARS = 2_048
_MAX_COMMAND_CHARS = 300

# Characters a URL may contain (RFC 3986), minus the apostrophe, which in prose is far more
# often a closing quote than part of a link.
_URL_CHARS = r"A-Za-z0-9\-._~:/?#\[\]@!$&()*+,;=%"
# A pattern compiled once, when first needed (the sources below are plain strings); the
# distiller's other rules (distill.entities) compile theirs through it too.
compiled = functools.cache(re.compile)

# Not after a letter or digit, but after Chinese it may start: "见https://..." is a link.
_URL = (rf"(?<![A-Za-z0-9])https?://[{_URL_CHARS}]+", re.IGNORECASE)
_WWW = (rf"(?<![A-Za-z0-9_@./-])www\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?:[/?#][{_URL_CHARS}]*)?", 0)

# Top-level domains we accept for bare domains like `docs.python.org`. Deliberately left
# out, because they collide with file extensions: py, md, sh, rs, pl, so, cc, zip, mov.
_KNOWN_TLDS = frozenset("""
    com org net edu gov mil int io dev app ai co me info biz xyz tech cloud site online store
    blog news page tv fm gg ly to us uk de fr es it nl be ch at se dk fi no is ru cn jp kr in
    au nz ca br mx ar za ie pt cz hu gr tr il sg hk tw eu asia top club link wiki art design
    live email id vn th ph my ua ro bg sk si hr lt lv ee pw ws la im
    """.split())
# The last label must be lowercase, so `ASP.NET` or `Foo.IO` in prose are not links while
# `GitHub.com` is; whether it is a known TLD is checked afterwards (a regex alternation of
# TLDs would be retried at every dot of a long dotted run). Not after `@` (emails) or `/`,
# `.` (inside paths), not before `(` or `=` (code such as `logger.info(`).
_BARE_DOMAIN = (
    r"(?<![A-Za-z0-9_@./:-])"
    r"(?P<host>(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[a-z]{2,6})"
    r"(?![A-Za-z0-9_(=-])"
    rf"(?::\d{{1,5}})?(?:/[{_URL_CHARS}]*)?"
)

# Path characters: ASCII only, so a path glued to Chinese text ("/etc/hosts里") stops at
# the Chinese. `<` `>` keep placeholders such as /opt/stacks/<name>/compose.yaml whole.
# The absolute-path pattern starts with the literal "/" and checks what precedes it
# afterwards, so the engine can jump from slash to slash.
_PATH_CHARS = r"A-Za-z0-9_.~<>@%+=*/-"
# (pattern source, substrings of which one must be in the text for the pattern to match at
# all: without any, its scan is skipped and the pattern never compiled)
_PATH_PATTERNS = (
    # /x (absolute): not after a word character, so `and/or`, `1/2`, `km/h` are not paths
    (rf"/(?<![A-Za-z0-9_./~<>-]/)[A-Za-z0-9_.~<>@%+=*-][{_PATH_CHARS}]*", ("/",)),
    # ~/x, ./x, ../x
    (rf"(?<![A-Za-z0-9_./~-])(?:~|\.\.?)/[{_PATH_CHARS}]*", ("~/", "./")),
    # src/main.cpp (relative, with a file extension at the end)
    (
        r"(?<![A-Za-z0-9_./~<>@-])[A-Za-z0-9_-][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.<>-]+)+"
        r"\.[A-Za-z][A-Za-z0-9]{0,7}(?![A-Za-z0-9_/-])",
        ("/",),
    ),
    # C:\Users\x (Windows)
    (r"(?<![A-Za-z0-9_])[A-Z]:\\[A-Za-z0-9_.\\-]*[A-Za-z0-9_]", (":\\",)),
)

# Command names common enough to recognise in prose. Not an inventory of anyone's tools:
# unknown tools are still found inside backticks and on `$ ` lines.
_KNOWN_COMMANDS = frozenset("""
    git gh pip pip3 pipx uv poetry conda python python3 pytest ruff mypy black npm npx yarn pnpm
    node deno bun docker docker-compose podman kubectl helm k9s minikube kind terraform ansible
    vagrant systemctl journalctl service curl wget ssh scp sftp rsync sudo su apt apt-get dpkg
    yum dnf pacman zypper snap flatpak brew port cargo rustup rustc gcc g++ clang cmake ninja
    java javac mvn gradle dotnet ruby gem bundle php composer perl go make chmod chown chgrp
    mkdir rmdir rm cp mv ln ls cat tar zip unzip gzip gunzip grep rg sed awk find xargs tee
    echo export source env crontab ufw iptables nft ip ifconfig ping dig nslookup traceroute
    nc netstat ss lsof ps kill pkill htop top df du free mount umount lsblk fdisk mkfs dd
    openssl gpg ssh-keygen ssh-copy-id certbot nginx psql mysql sqlite3 redis-cli mongosh
    ffmpeg aws gcloud az tailscale wg restic rclone borg tmux screen vim nano code
    """.split())
# Words that are also everyday English: in prose they only count with a technical argument
# ("make build" or "go test ./..." yes, "go home" or "make dinner" no).
_AMBIGUOUS_COMMANDS = frozenset(
    "go make find cat kill top free echo source export code screen service port env ip "
    "bundle ping mount ln dd su".split()
)
_AMBIGUOUS_SUBCOMMANDS = frozenset(
    "build run test get install mod vet fmt generate tidy clean all check lint deploy release "
    "dev serve start stop restart status".split()
)
# Without a technical argument (a flag, a path, a host), a prose command needs one of these
# right after its name: "pip install requests" is a command, "python scripts are" is not.
_COMMON_SUBCOMMANDS = _AMBIGUOUS_SUBCOMMANDS | frozenset("""
    uninstall add remove rm pull push clone commit checkout switch merge rebase log diff fetch
    init reload enable disable update upgrade exec logs ps up down apply describe delete create
    list ls show config login logout publish compose bisect stash tag branch reset revert
    cherry-pick version help search info sync set unset import export format serve watch
    attach inspect rollout scale port-forward edit patch daemon-reload is-active freeze venv
    """.split())
# A prose command ends at the first of these words ("run git pull and then restart").
_PROSE_STOP_WORDS = frozenset("""
    and then to so because which that if when before after but or in on for with from is are
    was were it this the a an will would should can could again first once every daily also
    instead until while since as where like
    """.split())
# In prose a command counts at the start of a line, after a colon, or after one of these.
# ("use"/"with" are left out: "I use docker containers" names a tool, it runs nothing.)
_COMMAND_TRIGGERS = frozenset(
    "run ran running runs execute executed type typed try tried then command 运行 执行 输入".split()
)
# First tokens in backticks that are code, not commands.
_CODE_KEYWORDS = frozenset(
    "def class import from return if elif else for while let const var function fn pub "
    "async await lambda yield with try except raise new true false none null self this "
    "is a an the of".split()
)

_BACKTICK_RE = re.compile(r"`([^`\n]{1,300})`")
# A dot before two lowercase letters: without one there is no bare domain to look for.
_DOT_WORD_RE = re.compile(r"\.[a-z]{2}")
_DOLLAR_LINE_RE = re.compile(r"^[ \t]*\$[ \t]+(\S[^\n]*)", re.MULTILINE)
# Where a command may start in prose: at a line start (after a bullet or a prompt), after a
# colon, or after a trigger word; the word there must then be a known command followed by a
# space or tab. Each kind of start is its own small pattern and the name a set lookup: one
# pattern with the ~230 names as an alternation cost ~6 ms to compile in every CLI `store`.
_COMMAND_STARTS = (
    re.compile(r"^[ \t]*(?:[-*+>$]|\d+[.)])?[ \t]*", re.MULTILINE),
    re.compile(r"[:：][ \t]*"),
    re.compile(rf"(?<![A-Za-z])(?:{words_regex(_COMMAND_TRIGGERS)})[ \t]+"),
)
_RUN_RE = re.compile(r"\S+")
_TOKEN_RE = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|\S+")
# A flag, a path, an assignment, a host, a pipe... or a dotted name such as `app.py`, `a.com`
# (but not ".2", which in "pip .2, atlas .20" is the end of an IP address).
_TECHNICAL_ARG_RE = re.compile(r"^--?[A-Za-z0-9]|[/=@~$|&<>]|[A-Za-z0-9][.:][A-Za-z]")
_ENV_ASSIGNMENT_RE = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*\Z")
_PLAIN_WORD_RE = re.compile(r"^[a-z][a-z0-9._+-]*\Z")

# Trailing characters that end a sentence rather than a link or a path.
_TRAILING_PUNCTUATION = ".,;:!?'\"`*_]}>，。；：！？、）」』】"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}


def extract_metadata(text: str) -> Metadata:
    """Find the URLs, shell commands and file paths in `text`, deduplicated and capped."""
    return metadata_from_items(locate_metadata(text))


def locate_metadata(text: str) -> list[tuple[int, str, str]]:
    """Every (offset, kind, value) found in `text`, in order; kind is "urls", "commands" or "paths".

    Not deduplicated nor capped: callers that split a text (into sentences, for instance)
    use the offsets to give each piece its own items, then `metadata_from_items`.
    """
    if not text:
        return []
    code_spans = _backtick_spans(text) if "`" in text else []
    urls = _find_urls(text, code_spans)
    commands = _find_commands(text, code_spans)
    without_urls = _blank_spans(text, [span for span, _ in urls])
    # `./install.sh` in backticks is something to run, not a file to remember.
    command_set = {command for _, command in commands}
    items = [(start, "urls", url) for (start, _), url in urls]
    items += [(start, "commands", command) for start, command in commands]
    items += [(start, "paths", path) for start, path in _find_paths(without_urls) if path not in command_set]
    items.sort(key=lambda item: item[0])
    return items


def metadata_from_items(items: Iterable[tuple[int, str, str]]) -> Metadata:
    """A Metadata of located items, each kind deduplicated in order and capped."""
    by_kind: dict[str, list[str]] = {"urls": [], "commands": [], "paths": []}
    for _, kind, value in items:
        by_kind[kind].append(value)
    return Metadata(
        urls=_dedupe(by_kind["urls"], _url_key, METADATA_MAX_URLS),
        commands=_dedupe(by_kind["commands"], _command_key, METADATA_MAX_COMMANDS),
        paths=_dedupe(by_kind["paths"], str, METADATA_MAX_PATHS),
    )


def merge_metadata(a: Metadata, b: Metadata) -> Metadata:
    """Union of two metadata records, `a` first, deduplicated and within the caps."""
    return Metadata(
        urls=_dedupe([*a.urls, *b.urls], _url_key, METADATA_MAX_URLS),
        commands=_dedupe([*a.commands, *b.commands], _command_key, METADATA_MAX_COMMANDS),
        paths=_dedupe([*a.paths, *b.paths], str, METADATA_MAX_PATHS),
    )


def metadata_search_text(m: Metadata) -> str:
    """A flat string of the metadata and its fragments (host, path parts) for full-text search."""
    pieces: list[str] = []
    for url in m.urls:
        pieces.append(url)
        host, _, rest = re.sub(r"^[a-z]+://", "", url, flags=re.IGNORECASE).partition("/")
        host = host.split("@")[-1].split(":")[0].lower()
        pieces.append(host.removeprefix("www."))
        # Word-like fragments so a token-based index finds "garden-bot" or "runbooks" too.
        pieces.extend(part for part in re.split(r"[/?#&=.:]+", rest) if part)
    pieces.extend(m.commands)
    for path in m.paths:
        pieces.append(path)
        pieces.extend(part for part in re.split(r"[/\\]+", path) if part not in ("", "~", ".", ".."))
    return " ".join(_dedupe(pieces, str, None))


# --- URLs ---------------------------------------------------------------------------------


def _find_urls(text: str, code_spans: list[tuple[int, int]]) -> list[tuple[tuple[int, int], str]]:
    """((start, end), url) for every link, in order of appearance, without overlaps."""
    found = _cleaned_matches(compiled(*_URL), text) if "://" in text else []
    if "www." in text:
        found += _cleaned_matches(compiled(*_WWW), text)
    # Bare domains are looked for only where no link and no code is, so `logger.info` in
    # backticks or the host inside a found URL is never reported twice.
    if _DOT_WORD_RE.search(text):
        masked = _blank_spans(text, [span for span, _ in found] + code_spans)
        found.extend(
            item
            for item, match in _cleaned_matches(compiled(_BARE_DOMAIN), masked, with_match=True)
            if match.group("host").rsplit(".", 1)[1] in _KNOWN_TLDS
        )
    found.sort(key=lambda item: item[0][0])
    return [item for item in found if len(item[1]) <= _MAX_ITEM_CHARS]


def _cleaned_matches(pattern: re.Pattern[str], text: str, with_match: bool = False) -> list:
    """Matches of `pattern` as ((start, end), text) with trailing punctuation removed."""
    matches = []
    for match in pattern.finditer(text):
        cleaned = strip_trailing_punctuation(match.group())
        if cleaned and not cleaned.endswith(("://", "www.")):
            item = ((match.start(), match.start() + len(cleaned)), cleaned)
            matches.append((item, match) if with_match else item)
    return matches


def strip_trailing_punctuation(item: str) -> str:
    """Drop sentence punctuation glued to a link or path; keep a `)` that closes a `(` inside."""
    while item:
        last = item[-1]
        if last in _TRAILING_PUNCTUATION and not (last == ">" and "<" in item):
            item = item[:-1]
        elif last in _CLOSERS and item.count(last) > item.count(_CLOSERS[last]):
            item = item[:-1]
        else:
            break
    return item


# --- paths --------------------------------------------------------------------------------


def _find_paths(text: str) -> list[tuple[int, str]]:
    found = []
    for source, needed in _PATH_PATTERNS:
        if not any(part in text for part in needed):
            continue
        for (start, _), path in _cleaned_matches(compiled(source), text):
            # "~/", "./" or "/x" alone say nothing.
            if len(path.strip("/.~")) >= (1 if path[0] in "~." else 2) and len(path) <= _MAX_ITEM_CHARS:
                found.append((start, path))
    found.sort(key=lambda item: item[0])
    return found


# --- commands -----------------------------------------------------------------------------


def _find_commands(text: str, code_spans: list[tuple[int, int]]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for start, end in code_spans:
        code = text[start + 1 : end - 1].strip()
        if looks_like_command(code):
            found.append((start, code))
    if "$" in text:
        for match in _DOLLAR_LINE_RE.finditer(text):
            found.append((match.start(), _clip(match.group(1).strip())))
    # Prose commands are looked for outside backticks, which were handled above in full.
    masked = _blank_spans(text, code_spans)
    for start in _prose_command_names(masked):
        command = _read_prose_command(masked, start)
        if command:
            found.append((start, command))
    found.sort(key=lambda item: item[0])
    return [(start, command) for start, command in found if command]


def _prose_command_names(text: str) -> list[int]:
    """Where a known command's name starts right after a command start, in text order."""
    starts: set[int] = set()
    for pattern in _COMMAND_STARTS:
        for match in pattern.finditer(text):
            run = _RUN_RE.match(text, match.end())
            # The whole run of non-space characters is the name (a known one never holds a
            # space), and a space or tab must follow it.
            if run and run.group() in _KNOWN_COMMANDS and text[run.end():run.end() + 1] in (" ", "\t"):
                starts.add(match.end())
    return sorted(starts)


def looks_like_command(code: str) -> bool:
    """Whether a backticked snippet reads as a shell command rather than code or a name."""
    tokens = code.split()
    if not tokens or "\n" in code:
        return False
    while tokens and _ENV_ASSIGNMENT_RE.match(tokens[0]):  # FOO=1 make build
        tokens = tokens[1:]
    if not tokens:
        return False
    first = tokens[0]
    if first in _KNOWN_COMMANDS or first.startswith("./"):
        return True
    if first.startswith(("/", "~/")):
        return len(tokens) >= 2  # `/etc/hosts` alone is a path, `/opt/x/run.sh --once` a command
    if not _PLAIN_WORD_RE.match(first) or first in _CODE_KEYWORDS:
        return False
    if len(tokens) == 1:
        return False  # `foo` is a name, not something to run
    second = tokens[1]
    if second in ("=", "==", ":=", "+=", "-=", "->", "=>", "is", "are", "of") or "(" in code:
        return False
    return True


def _read_prose_command(text: str, start: int) -> str | None:
    """Read `git pull --rebase` out of "run git pull --rebase, then ..." up to a clause end."""
    line_end = text.find("\n", start)
    line = text[start : line_end if line_end != -1 else len(text)][:_MAX_COMMAND_CHARS]
    tokens = [m.group() for m in _TOKEN_RE.finditer(line)]
    name, kept = tokens[0], [tokens[0]]
    for token in tokens[1:16]:
        if token.lower().strip(",.;:!?") in _PROSE_STOP_WORDS or token.startswith(("(", "—", "–")):
            break
        if _has_cjk(token):
            break
        core = strip_trailing_punctuation(token) if not token.startswith(("'", '"')) else token
        ends_clause = core != token and token[-1] in ".,;:!?。，；：！？"
        if core:
            kept.append(core)
        if ends_clause:
            break
    args = kept[1:]
    if not args:
        return None  # "git is great": the name alone, in prose, is a word, not a command
    if not any(_is_technical(arg) for arg in args):
        subcommands = _AMBIGUOUS_SUBCOMMANDS if name in _AMBIGUOUS_COMMANDS else _COMMON_SUBCOMMANDS
        runs_another = name == "sudo" and args[0] in _KNOWN_COMMANDS
        if args[0] not in subcommands and not runs_another:
            return None
    return _clip(" ".join(kept))


def _is_technical(arg: str) -> bool:
    return bool(_TECHNICAL_ARG_RE.search(arg))


def _clip(command: str) -> str:
    return command if len(command) <= _MAX_COMMAND_CHARS else ""


# --- helpers ------------------------------------------------------------------------------


def _backtick_spans(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in _BACKTICK_RE.finditer(text)]


def _blank_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` with the spans replaced by spaces, so offsets of everything else are unchanged."""
    if not spans:
        return text
    pieces, position = [], 0
    for start, end in sorted(spans):
        if start < position:
            start = position
        if start >= end:
            continue
        pieces.append(text[position:start])
        pieces.append(" " * (end - start))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _has_cjk(token: str) -> bool:
    return any("\u2e80" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" for ch in token)


def _url_key(url: str) -> str:
    # The same link written with or without a trailing slash or in another case of the
    # scheme/host is one link; the first spelling seen is the one kept.
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}{sep}{host.lower()}{slash}{path}".rstrip("/")


def _command_key(command: str) -> str:
    return " ".join(command.split())


def _dedupe(items: Iterable[str], key: Callable[[str], str], cap: int | None) -> list[str]:
    """Items in first-seen order without duplicates (by `key`), at most `cap` of them."""
    seen: set[str] = set()
    kept: list[str] = []
    for item in items:
        k = key(item)
        if not item or k in seen:
            continue
        seen.add(k)
        kept.append(item)
        if cap is not None and len(kept) >= cap:
            break
    return kept
