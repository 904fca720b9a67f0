"""The `evoclaw-memory` command: a thin skin over `Memory` (like sqlite-utils' cli.py).

Start-up time matters (one run per agent turn on a Raspberry Pi), so the library is
imported lazily inside the commands; only click and the tiny errors module load up front.

Output is human-readable by default; `--json` prints exactly one JSON document on stdout.
Errors are one line on stderr (`error: ...`) and a non-zero exit status, never a traceback
(set EVOCLAW_DEBUG=1 to see one).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import click

from evoclaw_memory.errors import EvoclawError

EXIT_INTERNAL = 70          # EX_SOFTWARE
EXIT_INTERRUPTED = 130
HOT_KEYS = ("identity", "owner_profile", "lesson", "event", "task", "project", "complete_task")
CONSOLIDATE_MODES = ("quick", "daily", "monthly", "full")
# Read at most this much from a file or stdin (the library's INPUT_MAX_BYTES, plus one byte
# so that an oversized input is seen as oversized rather than silently cut).
_READ_LIMIT = 1_000_000 + 1


class State:
    """Options shared by every command; subcommand flags override the group's."""

    def __init__(self, agent_id: Optional[str] = None, home: Optional[str] = None,
                 config_path: Optional[str] = None, json: bool = False):
        self.agent_id = agent_id
        self.home = home
        self.config_path = config_path
        self.json = json


# -- errors ----------------------------------------------------------------------------------

def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _fail(message: str, code: int) -> "click.exceptions.Exit":
    from evoclaw_memory.validate import printable
    click.echo(f"error: {printable(_one_line(message))}", err=True)
    return click.exceptions.Exit(code)


def _translate(exc: BaseException) -> "click.exceptions.Exit":
    """Turn an exception raised by a command into one stderr line and an exit status."""
    if isinstance(exc, KeyboardInterrupt):
        click.echo("", err=True)
        return click.exceptions.Exit(EXIT_INTERRUPTED)
    if isinstance(exc, EvoclawError):
        return _fail(str(exc) or type(exc).__name__, exc.exit_code)
    import sqlite3
    if isinstance(exc, sqlite3.DatabaseError):
        # The library wraps what it expects; anything else means a damaged database.
        from evoclaw_memory.errors import StoreError
        return _fail(f"database error: {exc}; run `evoclaw-memory doctor`", StoreError.exit_code)
    return _fail(f"internal error: {type(exc).__name__}: {exc}", EXIT_INTERNAL)


class EvoGroup(click.Group):
    """A click group that turns every failure of a command into one clear line."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort,
                BrokenPipeError):
            raise
        except (Exception, KeyboardInterrupt) as exc:
            if os.environ.get("EVOCLAW_DEBUG") == "1" and not isinstance(exc, KeyboardInterrupt):
                raise
            raise _translate(exc) from None


class TreeGroup(EvoGroup):
    """`tree` also accepts the original skill's flags: --show, --add PATH DESC, --remove PATH,
    --prune. They are rewritten into the subcommands before parsing."""

    _LEGACY = {"--show": ("show", 0), "--add": ("add", 2), "--remove": ("remove", 1),
               "--prune": ("prune", 0)}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self.rewrite_legacy(list(args)))

    def rewrite_legacy(self, args: list[str]) -> list[str]:
        for i, arg in enumerate(args):
            if arg in self.commands:
                return args                       # already the subcommand form
            flag, _, inline = arg.partition("=")
            if flag not in self._LEGACY:
                continue
            name, most = self._LEGACY[flag]
            values = [inline] if inline else []
            j = i + 1
            while len(values) < most and j < len(args) and not args[j].startswith("-"):
                values.append(args[j])
                j += 1
            return [name] + args[:i] + values + args[j:]
        return args


# -- shared options --------------------------------------------------------------------------

def _state(ctx: click.Context) -> State:
    return ctx.ensure_object(State)


def _set_agent_id(ctx: click.Context, _param: click.Parameter, value: Optional[str]) -> None:
    if value is not None:
        _state(ctx).agent_id = value


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        _state(ctx).json = True


def common_options(f: Callable) -> Callable:
    """--agent-id and --json on a subcommand too (agents put flags anywhere); these win."""
    f = click.option("--json", "json_", is_flag=True, expose_value=False, callback=_set_json,
                     help="Print one JSON document on stdout (for scripts and agents).")(f)
    f = click.option("--agent-id", metavar="ID", expose_value=False, callback=_set_agent_id,
                     help="Agent whose memory to use (overrides the global option).")(f)
    return f


def _config(ctx: click.Context):
    from evoclaw_memory.config import load_config
    st = _state(ctx)
    return load_config(home=st.home, agent_id=st.agent_id,
                       config_path=Path(st.config_path) if st.config_path else None)


@contextlib.contextmanager
def _memory(ctx: click.Context) -> Iterator[Any]:
    from evoclaw_memory.memory import Memory
    config = _config(ctx)
    with Memory.open(agent_id=config.agent_id, home=config.home, config=config) as mem:
        yield mem


@contextlib.contextmanager
def _progress_bar(ctx: click.Context, label: str) -> Iterator[Any]:
    """A progress bar on stderr for long work: drawn on a terminal only, never with --json."""
    from evoclaw_memory.cli.agent import ProgressBar
    bar = ProgressBar(enabled=sys.stderr.isatty() and not _state(ctx).json, label=label)
    try:
        yield bar
    finally:
        bar.close()


# -- output ----------------------------------------------------------------------------------

def _builtins(obj: Any) -> Any:
    """Plain JSON-able data, every Struct field included (omit_defaults would drop some)."""
    import msgspec
    if isinstance(obj, msgspec.Struct):
        return {k: _builtins(v) for k, v in msgspec.structs.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): _builtins(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_builtins(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (dt.datetime, dt.date)):
        return obj.isoformat()
    return obj


class _Printable:
    """stdout for human output: control characters (an OSC or CSI sequence hidden in a
    stored fact) are written as visible escapes, never sent to the terminal."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        from evoclaw_memory.validate import printable
        return self._stream.write(printable(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _emit(ctx: click.Context, data: Any, human: Callable[[], None]) -> None:
    if _state(ctx).json:
        import msgspec
        click.echo(msgspec.json.encode(msgspec.to_builtins(_builtins(data))).decode())
    else:
        # Every human printer runs through here, so one wrapper covers them all (JSON
        # output escapes control characters itself).
        with contextlib.redirect_stdout(_Printable(sys.stdout)):  # type: ignore[type-var]
            human()


def _when(ts: Optional[float]) -> str:
    if not ts:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fact_json(fact: Any) -> dict:
    return _builtins(fact)


def _fact_line(fact: Any) -> str:
    return f"{fact.id}  [{fact.category}]  {fact.text}"


# -- input -----------------------------------------------------------------------------------

def _read_stdin() -> str:
    stream = sys.stdin
    if stream is None or stream.isatty():
        raise click.UsageError("nothing to read: give the text as an argument or option, "
                               "--file, or pipe it on stdin")
    binary = getattr(stream, "buffer", None)
    if binary is None:
        return stream.read(_READ_LIMIT)
    return binary.read(_READ_LIMIT).decode("utf-8", errors="replace")


def _read_file(path: str) -> str:
    if path == "-":
        return _read_stdin()
    try:
        with open(path, "rb") as handle:
            data = handle.read(_READ_LIMIT)
    except OSError as exc:
        from evoclaw_memory.errors import ValidationError
        raise ValidationError(f"cannot read {path}: {exc.strerror}") from exc
    return data.decode("utf-8", errors="replace")


def _parse_time(_ctx: click.Context, _param: click.Parameter, value: Optional[str]) -> Any:
    """--created-at: epoch seconds or an ISO 8601 date/time (UTC when no zone is given)."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        stamp = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter("use epoch seconds or ISO 8601, e.g. 2025-11-30T09:00:00Z")
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)


# -- the group -------------------------------------------------------------------------------

@click.group(cls=EvoGroup, context_settings={"help_option_names": ["-h", "--help"],
                                              "max_content_width": 100})
@click.option("--agent-id", metavar="ID", default=None,
              help="Agent whose memory to use [default: config / EVOCLAW_AGENT_ID / 'default'].")
@click.option("--home", metavar="DIR", default=None, type=click.Path(file_okay=False),
              help="Data folder (overrides EVOCLAW_HOME; default ~/.evoclaw).")
@click.option("--config", "config_path", metavar="PATH", default=None,
              type=click.Path(exists=True, dir_okay=False),
              help="TOML config file [default: <home>/config.toml].")
@click.option("--json", "json_", is_flag=True, help="Print one JSON document on stdout.")
@click.version_option("0.1.0", prog_name="evoclaw-memory")
@click.pass_context
def cli(ctx: click.Context, agent_id: Optional[str], home: Optional[str],
        config_path: Optional[str], json_: bool) -> None:
    """Tiered long-term memory for AI agents: hot (MEMORY.md), warm (this device), cold
    (archive).

    \b
    Examples:
      evoclaw-memory store --text "Owner prefers tea" --category owner/preferences --importance 0.8
      evoclaw-memory retrieve "what does the owner drink" --json
      evoclaw-memory hot --update lesson '{"text": "Test on testnet first", "importance": 0.9}'
      evoclaw-memory consolidate --mode daily
    """
    ctx.obj = State(agent_id=agent_id, home=home, config_path=config_path, json=json_)


# -- facts -----------------------------------------------------------------------------------

@cli.command()
@click.option("--text", "-t", required=True, help="The fact ('-' reads stdin).")
@click.option("--category", "-c", default="general", show_default=True,
              help="Tree path, e.g. projects/evoclaw/architecture (at most 4 levels).")
@click.option("--importance", "-i", type=float, default=0.5, show_default=True,
              help="0 to 1.")
@click.option("--url", "urls", multiple=True, metavar="URL", help="A link to keep (repeatable).")
@click.option("--cmd", "cmds", multiple=True, metavar="CMD",
              help="A shell command to keep (repeatable).")
@click.option("--path", "paths", multiple=True, metavar="PATH",
              help="A file path to keep (repeatable).")
@click.option("--created-at", callback=_parse_time, metavar="EPOCH|ISO",
              help="When it happened [default: now].")
@common_options
@click.pass_context
def store(ctx: click.Context, text: str, category: str, importance: float, urls: tuple,
          cmds: tuple, paths: tuple, created_at: Any) -> None:
    """Store a fact in warm memory; prints its id (a duplicate reinforces the existing fact)."""
    if text == "-":
        text = _read_stdin()
    metadata = None
    if urls or cmds or paths:
        metadata = {"urls": list(urls), "commands": list(cmds), "paths": list(paths)}
    with _memory(ctx) as mem:
        fact = mem.remember(text, category=category, importance=importance,
                            created_at=created_at, metadata=metadata)
    # A freshly stored fact has never been accessed; a duplicate was just reinforced.
    status = "reinforced" if fact.access_count > 0 else "stored"

    def human() -> None:
        click.echo(fact.id)
        if status == "reinforced":
            click.echo(f"note: duplicate of an existing fact; reinforced it "
                       f"(accessed {fact.access_count} times)", err=True)

    _emit(ctx, {"id": fact.id, "status": status, "fact": fact}, human)


@cli.command()
@click.argument("query", required=False, default=None)
@click.option("--query", "-q", "query_flag", default=None, metavar="QUERY",
              help="The query as a flag (the original skill's form).")
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=5, show_default=True)
@common_options
@click.pass_context
def retrieve(ctx: click.Context, query: Optional[str], query_flag: Optional[str],
             limit: int) -> None:
    """Find the facts most relevant to QUERY (tree search, then full text); reinforces them."""
    if (query is None) == (query_flag is None):
        raise click.UsageError("give the query once: `retrieve QUERY` or `retrieve --query QUERY`")
    query = query if query is not None else query_flag
    with _memory(ctx) as mem:
        results = mem.retrieve(query, limit=limit)
    data = [{"id": r.fact.id, "text": r.fact.text, "category": r.fact.category,
             "method": r.method, "path": r.path, "relevance": r.relevance, "score": r.score,
             "tier": r.fact.tier} for r in results]

    def human() -> None:
        if not results:
            click.echo("no matching memories")
        for r in results:
            click.echo(f"{r.relevance:.2f}  {r.method:<12}  {r.path or '-'}  {r.fact.text}")

    _emit(ctx, data, human)


@cli.command()
@click.argument("query", required=False, default="")
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=8, show_default=True,
              help="Most facts to retrieve for QUERY.")
@common_options
@click.pass_context
def context(ctx: click.Context, query: str, limit: int) -> None:
    """Print what the agent loads: MEMORY.md + the tree + facts retrieved for QUERY."""
    with _memory(ctx) as mem:
        text = mem.context(query, limit=limit)
    _emit(ctx, {"context": text, "bytes": len(text.encode())},
          lambda: click.echo(text, nl=False))


@cli.command()
@click.argument("fact_id", metavar="ID")
@common_options
@click.pass_context
def get(ctx: click.Context, fact_id: str) -> None:
    """Show one fact by id."""
    with _memory(ctx) as mem:
        fact = mem.get(fact_id)

    def human() -> None:
        click.echo(_fact_line(fact))
        click.echo(f"  importance {fact.importance}  tier {fact.tier}  accessed "
                   f"{fact.access_count}x  created {_when(fact.created_at)}")
        for label, items in (("url", fact.metadata.urls), ("cmd", fact.metadata.commands),
                             ("path", fact.metadata.paths)):
            for item in items:
                click.echo(f"  {label}: {item}")
        if fact.superseded_by:
            click.echo(f"  superseded by {fact.superseded_by}")

    _emit(ctx, fact, human)


@cli.command()
@click.argument("old_id", metavar="OLD_ID")
@click.argument("new_id", metavar="NEW_ID")
@common_options
@click.pass_context
def supersede(ctx: click.Context, old_id: str, new_id: str) -> None:
    """Mark fact OLD_ID superseded by NEW_ID (kept for history, excluded from search)."""
    with _memory(ctx) as mem:
        mem.supersede(old_id, new_id)
    _emit(ctx, {"superseded": old_id, "by": new_id},
          lambda: click.echo(f"{old_id} superseded by {new_id}"))


@cli.command("search-url")
@click.argument("fragment")
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=20, show_default=True)
@common_options
@click.pass_context
def search_url(ctx: click.Context, fragment: str, limit: int) -> None:
    """Facts whose URLs, commands, paths or text contain FRAGMENT."""
    with _memory(ctx) as mem:
        facts = mem.search_url(fragment, limit=limit)

    def human() -> None:
        if not facts:
            click.echo("no matching memories")
        for fact in facts:
            click.echo(_fact_line(fact))
            for url in fact.metadata.urls:
                click.echo(f"    {url}")

    _emit(ctx, [_fact_json(f) for f in facts], human)


# -- distillation ----------------------------------------------------------------------------

def _conversation(raw: str) -> Any:
    """A JSON list of {role, content} messages (or {"messages": [...]}), else plain text."""
    from evoclaw_memory.errors import NestingError, ValidationError
    from evoclaw_memory.validate import loads_json, text
    stripped = text("conversation", raw).strip()
    if not stripped or stripped[0] not in "[{":
        return raw
    try:
        data = loads_json("conversation", stripped)
    except NestingError:
        raise
    except ValidationError:
        return raw          # not JSON after all: plain text that starts with a bracket
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if not isinstance(data, list):
        return raw
    if not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in data):
        raise ValidationError("a conversation in JSON must be a list of {\"role\": ..., "
                              "\"content\": \"...\"} messages")
    return [{"role": str(m.get("role", "user")), "content": m["content"]} for m in data]


@cli.command()
@click.option("--text", "-t", default=None, help="The conversation (JSON messages or plain text).")
@click.option("--file", "-f", "file_", default=None, metavar="FILE",
              help="Read the conversation from FILE ('-' for stdin).")
@click.option("--store", "store_", is_flag=True,
              help="Store the facts (end of conversation: distill, store, re-render MEMORY.md).")
@click.option("--llm/--rules", "llm", default=None,
              help="--llm: use the configured LLM (an error when none is); --rules: rule "
                   "mode only. Default: the LLM when one is configured, else rules.")
@common_options
@click.pass_context
def distill(ctx: click.Context, text: Optional[str], file_: Optional[str], store_: bool,
            llm: Optional[bool]) -> None:
    """Distill a conversation into a structured record, a core summary and fact drafts.

    Input: --text, --file or stdin; a JSON list of {role, content} messages, or plain text.
    With an LLM: one call, which also proposes hot-memory updates and marks the stored
    facts a new one supersedes or duplicates; if it fails, rule mode runs and says so.
    """
    if text is not None and file_ is not None:
        raise click.UsageError("give either --text or --file, not both")
    raw = text if text is not None else _read_file(file_ or "-")
    if not raw.strip():
        from evoclaw_memory.errors import ValidationError
        raise ValidationError("nothing to distill: the conversation is empty")
    if llm:
        from evoclaw_memory.errors import ConfigError
        config = _config(ctx)
        if not config.llm_base_url:
            raise ConfigError("no LLM configured: set EVOCLAW_LLM_BASE_URL and EVOCLAW_LLM_MODEL "
                              "(or [llm] base_url in config.toml), or drop --llm for rule mode")
    messages = _conversation(raw)
    with _memory(ctx) as mem:
        mem.distill_llm = llm          # end_conversation distills through mem.distill
        result = mem.end_conversation(messages) if store_ else mem.distill(messages)

    def human() -> None:
        record = result["record"]
        mode = result.get("mode", "rules")
        if mode == "rules-fallback" and result.get("llm_error"):
            mode += f" (LLM failed: {result['llm_error']})"
        click.echo(f"summary: {result['summary']}")
        click.echo(f"fact:    {record.fact}")
        for label in ("emotion", "outcome"):
            if getattr(record, label):
                click.echo(f"{label + ':':<8} {getattr(record, label)}")
        for label in ("people", "topics", "actions"):
            if getattr(record, label):
                click.echo(f"{label + ':':<8} {', '.join(getattr(record, label))}")
        if mode != "rules":
            click.echo(f"mode:    {mode}")
        if store_:
            for fact in result["added"]:
                click.echo(f"stored      {_fact_line(fact)}")
            for fact in result["reinforced"]:
                click.echo(f"reinforced  {_fact_line(fact)}")
            for old_id in result.get("superseded", []):
                click.echo(f"superseded  {old_id}")
            for update in result.get("hot_updates", []):
                click.echo(f"hot {update['key']}: {_one_line(update['value'])}")
            if not result["added"] and not result["reinforced"]:
                click.echo("no facts to store")
        else:
            if not result["facts"]:
                click.echo("no facts found")
            for index, draft in enumerate(result["facts"]):
                replaces = [s["old_id"] for s in result.get("supersedes", []) if s["fact"] == index]
                note = f"  (supersedes {replaces[0]})" if replaces else ""
                click.echo(f"- [{draft.category}] ({draft.importance:.2f}) {draft.text}{note}")
            for dup in result.get("duplicates", []):
                click.echo(f"= already known as {dup['old_id']}: {dup['text']}")
            for update in result.get("hot_updates", []):
                click.echo(f"hot {update['key']}: {_one_line(update['value'])}")

    _emit(ctx, result, human)


# -- hot memory ------------------------------------------------------------------------------

@cli.command()
@click.option("--update", nargs=2, default=None, metavar="KEY JSON",
              help=f"Apply one update; KEY is one of {', '.join(HOT_KEYS)}.")
@click.option("--complete-task", metavar="ID", default=None, help="Mark a pending task done.")
@click.option("--rebuild", is_flag=True, help="Write MEMORY.md and print its path.")
@common_options
@click.pass_context
def hot(ctx: click.Context, update: Optional[tuple], complete_task: Optional[str],
        rebuild: bool) -> None:
    """Show hot memory (MEMORY.md), update it, or rebuild MEMORY.md.

    \b
    Examples:
      evoclaw-memory hot --update owner_profile '{"timezone": "Australia/Sydney"}'
      evoclaw-memory hot --update lesson '{"text": "Test on testnet first", "importance": 0.9}'
      evoclaw-memory hot --update project '{"name": "EvoClaw", "status": "active"}'
      evoclaw-memory hot --complete-task 3f2a9c01d4e5b6a7
    """
    if sum(bool(x) for x in (update, complete_task, rebuild)) > 1:
        raise click.UsageError("use one of --update, --complete-task, --rebuild at a time")
    with _memory(ctx) as mem:
        if update or complete_task:
            key, value = update if update else ("complete_task", complete_task)
            state = mem.update_hot(key, value)
            path = mem.config.memory_md_path
            _emit(ctx, state, lambda: click.echo(f"updated {key}; MEMORY.md rewritten: {path}"))
            return
        if rebuild:
            path = mem.write_memory_md()
            size = path.stat().st_size
            _emit(ctx, {"path": path, "bytes": size}, lambda: click.echo(str(path)))
            return
        state = mem.hot
        text = mem.render_memory_md()
    _emit(ctx, state, lambda: click.echo(text, nl=False))


# -- tree ------------------------------------------------------------------------------------

@cli.group(cls=TreeGroup, invoke_without_command=True)
@common_options
@click.pass_context
def tree(ctx: click.Context) -> None:
    """The category tree: show (default), add, remove, prune.

    The original skill's flags work too: tree --show, tree --add PATH DESC,
    tree --remove PATH, tree --prune.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(tree_show)


def _tree_payload(mem: Any) -> dict:
    text = mem.tree_text()
    return {"nodes": mem.tree, "text": text, "bytes": len(text.encode())}


@tree.command("show")
@common_options
@click.pass_context
def tree_show(ctx: click.Context) -> None:
    """Show the tree as the agent sees it."""
    with _memory(ctx) as mem:
        payload = _tree_payload(mem)
    _emit(ctx, payload, lambda: click.echo(payload["text"]))


@tree.command("add")
@click.argument("path")
@click.argument("description", required=False, default="")
@common_options
@click.pass_context
def tree_add(ctx: click.Context, path: str, description: str) -> None:
    """Add PATH (and missing parents) with an optional DESCRIPTION (<= 100 chars)."""
    with _memory(ctx) as mem:
        node = mem.tree_add(path, description)
        text = mem.tree_text()
    _emit(ctx, node, lambda: click.echo(f"added {node.path}\n{text}"))


@tree.command("remove")
@click.argument("path")
@common_options
@click.pass_context
def tree_remove(ctx: click.Context, path: str) -> None:
    """Remove PATH and its descendants (refused while any of them holds facts)."""
    with _memory(ctx) as mem:
        mem.tree_remove(path)
    _emit(ctx, {"removed": path.strip().lower()},
          lambda: click.echo(f"removed {path.strip().lower()}"))


@tree.command("prune")
@click.option("--idle-days", type=click.FloatRange(min=0), default=None,
              help="Idle time before an empty node goes [default: 60].")
@common_options
@click.pass_context
def tree_prune(ctx: click.Context, idle_days: Optional[float]) -> None:
    """Remove empty nodes with no activity for 60 days (or --idle-days)."""
    with _memory(ctx) as mem:
        gone = mem.tree_prune(idle_days)

    def human() -> None:
        click.echo(f"pruned {len(gone)} node(s)" + (": " + ", ".join(gone) if gone else ""))

    _emit(ctx, {"removed": gone}, human)


# -- notes, metadata, consolidation ----------------------------------------------------------

@cli.command("ingest-daily")
@click.option("--days", type=click.IntRange(1, 3650), default=2, show_default=True,
              help="How many days of notes to read.")
@click.option("--workspace", type=click.Path(file_okay=False), default=None,
              help="Agent workspace holding memory/YYYY-MM-DD*.md [default: from config].")
@common_options
@click.pass_context
def ingest_daily(ctx: click.Context, days: int, workspace: Optional[str]) -> None:
    """Store the facts of the last N days of daily notes (memory/YYYY-MM-DD*.md)."""
    with _memory(ctx) as mem, _progress_bar(ctx, "reading daily notes") as bar:
        report = mem.ingest_daily(days=days, workspace=Path(workspace) if workspace else None,
                                  progress=bar.update)
    _emit(ctx, report, lambda: click.echo(
        f"files scanned: {report['files']}, facts found: {report['found']}, "
        f"stored: {report['stored']}, skipped: {report['skipped']}"))


def _warning_field(warning: Any, name: str, index: int) -> Any:
    if isinstance(warning, dict):
        return warning.get(name)
    if isinstance(warning, (tuple, list)):
        return warning[index] if index < len(warning) else None
    return getattr(warning, name, None)


@cli.command()
@click.argument("file", metavar="FILE")
@common_options
@click.pass_context
def validate(ctx: click.Context, file: str) -> None:
    """Check a daily note for missing links, commands and next steps ('-' reads stdin).

    Exit status 0 when clean, 1 when there are warnings.
    """
    from evoclaw_memory.distill.notes import validate_note
    warnings = list(validate_note(_read_file(file)))
    rows = [{"line": _warning_field(w, "line", 0), "kind": _warning_field(w, "kind", 1),
             "message": _warning_field(w, "message", 2),
             "suggestion": _warning_field(w, "suggestion", 3)} for w in warnings]

    def human() -> None:
        for row in rows:
            hint = f" ({row['suggestion']})" if row["suggestion"] else ""
            click.echo(f"{row['line']}: {row['kind']}: {row['message']}{hint}")

    _emit(ctx, rows, human)
    if rows:
        ctx.exit(1)


@cli.command("extract-metadata")
@click.argument("text", required=False, default=None)
@click.option("--file", "-f", "file_", default=None, metavar="FILE",
              help="Read the text from FILE ('-' for stdin).")
@common_options
@click.pass_context
def extract_metadata_cmd(ctx: click.Context, text: Optional[str], file_: Optional[str]) -> None:
    """List the URLs, shell commands and file paths in TEXT (or --file, or stdin)."""
    if text is not None and file_ is not None:
        raise click.UsageError("give either TEXT or --file, not both")
    if text is None or text == "-":
        text = _read_file(file_ or "-")
    from evoclaw_memory.errors import ValidationError
    from evoclaw_memory.limits import INPUT_MAX_BYTES
    if len(text.encode()) > INPUT_MAX_BYTES:
        raise ValidationError(f"text is over {INPUT_MAX_BYTES} bytes")
    from evoclaw_memory.distill.metadata import extract_metadata
    found = extract_metadata(text)
    data = {"urls": list(found.urls), "commands": list(found.commands),
            "paths": list(found.paths)}

    def human() -> None:
        for label, items in data.items():
            click.echo(f"{label}:" if items else f"{label}: (none)")
            for item in items:
                click.echo(f"  {item}")

    _emit(ctx, data, human)


def _report_lines(data: dict, indent: str = "") -> list[str]:
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines += _report_lines(value, indent + "  ")
        elif isinstance(value, list):
            lines.append(f"{indent}{key}: {len(value)}" + (f" ({', '.join(map(str, value))})"
                                                          if value else ""))
        else:
            lines.append(f"{indent}{key}: {value}")
    return lines


@cli.command()
@click.option("--mode", "-m", type=click.Choice(CONSOLIDATE_MODES), default="quick",
              show_default=True,
              help="quick: rescore/evict/rebuild; daily: +ingest notes, prune tree; "
                   "monthly: +tree rebuild, cold cleanup; full: +recount and report.")
@click.option("--dry-run", is_flag=True,
              help="monthly/full: show the LLM's tree-rebuild plan and change nothing.")
@common_options
@click.pass_context
def consolidate(ctx: click.Context, mode: str, dry_run: bool) -> None:
    """Rescore, archive, promote lessons and rebuild MEMORY.md (more in bigger modes)."""
    with _memory(ctx) as mem, _progress_bar(ctx, "consolidating") as bar:
        report = mem.consolidate(mode, dry_run=dry_run, progress=bar.update)

    def human() -> None:
        rebuild = report.get("tree_rebuild")
        plain = {k: v for k, v in report.items() if k != "tree_rebuild"}
        click.echo("\n".join(_report_lines(plain)))
        if rebuild is not None:
            ops = rebuild.get("operations", [])
            click.echo("\n".join(_report_lines(
                {"tree_rebuild": {k: v for k, v in rebuild.items() if k != "operations"}})))
            for op in ops:
                target = f" -> {op['target']}" if op.get("target") else ""
                verdict = "ok" if op.get("status") == "ok" else f"rejected: {op.get('why', '')}"
                click.echo(f"    {op['op']} {op['path']}{target}  [{verdict}]"
                           + (f"  ({op['reason']})" if op.get("reason") else ""))

    _emit(ctx, report, human)


# -- observability ---------------------------------------------------------------------------

@cli.command()
@click.option("--report", is_flag=True,
              help="Bar charts: each tier against its limit, facts by score tier and category.")
@common_options
@click.pass_context
def metrics(ctx: click.Context, report: bool) -> None:
    """Counters, last-run times and the live size of every tier."""
    from evoclaw_memory.limits import HOT_MAX_BYTES, TREE_MAX_BYTES, TREE_MAX_NODES
    with _memory(ctx) as mem:
        data = mem.metrics()
        warm_cap = mem.config.warm_max_bytes
        if report:
            from evoclaw_memory.cli.agent import tier_usage
            data["usage"] = tier_usage(mem)
    caps = {"hot_bytes": HOT_MAX_BYTES, "memory_md_bytes": HOT_MAX_BYTES,
            "warm_bytes": warm_cap, "tree_nodes": TREE_MAX_NODES, "tree_bytes": TREE_MAX_BYTES}
    if report:
        from evoclaw_memory.cli.agent import render_report
        data["caps"] = caps
        _emit(ctx, data, lambda: click.echo(render_report(data, caps, data["usage"])))
        return

    def number(value: Any) -> str:
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)

    def human() -> None:
        width = max([len(k) for part in data.values() for k in part] + [10]) + 2
        click.echo("Sizes")
        for key, value in data["sizes"].items():
            cap = f" / {caps[key]}" if key in caps else ""
            click.echo(f"  {key:<{width}}{number(value)}{cap}")
        click.echo("Counters")
        for key, value in data["counters"].items():
            click.echo(f"  {key:<{width}}{number(value)}")
        if not data["counters"]:
            click.echo("  (none yet)")
        click.echo("Last runs")
        for key, value in data["timestamps"].items():
            click.echo(f"  {key:<{width}}{_when(value)}")
        if not data["timestamps"]:
            click.echo("  (none yet)")

    _emit(ctx, data, human)


@cli.group("config", cls=EvoGroup)
def config_group() -> None:
    """Inspect the configuration."""


def _redact_url(url: Optional[str]) -> Optional[str]:
    """A URL without a password or query values (a token can hide in either)."""
    if not url:
        return url
    from urllib.parse import urlsplit, urlunsplit
    try:
        parts = urlsplit(url)
    except ValueError:
        return "***"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(f"{p.split('=', 1)[0]}=***" for p in parts.query.split("&") if p)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


@config_group.command("show")
@common_options
@click.pass_context
def config_show(ctx: click.Context) -> None:
    """Show the effective configuration (secrets shown as ***)."""
    config = _config(ctx)
    data = config.redacted()
    for key in ("cloud_url", "llm_base_url"):
        data[key] = _redact_url(data.get(key))
    data.update({"config_file": _state(ctx).config_path or str(Path(config.home) / "config.toml"),
                 "db_path": str(config.db_path), "workspace_path": str(config.workspace_path),
                 "memory_md_path": str(config.memory_md_path)})

    def human() -> None:
        width = max(len(k) for k in data) + 1
        for key, value in data.items():
            click.echo(f"{key:<{width}}= {'(unset)' if value is None else value}")

    _emit(ctx, data, human)


@cli.command()
@click.option("--offline", "skip_network", is_flag=True,
              help="Skip the network checks (cloud reachability and auth, keys, LLM).")
@common_options
@click.pass_context
def doctor(ctx: click.Context, skip_network: bool) -> None:
    """Check that memory works here: config, database, integrity, MEMORY.md, limits, cloud
    reachability and auth, encryption keys, LLM reachability; each failure with a fix.

    Exit status 1 when any check fails.
    """
    checks: list[dict] = []

    def check(name: str, ok: bool, detail: str, fix: str = "") -> None:
        checks.append({"name": name, "ok": ok, "detail": _one_line(detail),
                       "fix": "" if ok else fix})

    def run() -> None:
        try:
            config = _config(ctx)
        except EvoclawError as exc:
            check("config", False, str(exc), "fix config.toml, the environment or the flags")
            return
        check("config", True, f"agent {config.agent_id}, home {config.home}")
        from evoclaw_memory.limits import HOT_MAX_BYTES, TREE_MAX_BYTES, TREE_MAX_NODES
        from evoclaw_memory.memory import Memory
        try:
            mem = Memory.open(config=config)
        except Exception as exc:    # noqa: BLE001 - doctor reports, never crashes
            from evoclaw_memory.cli.agent import doctor_database_failure
            doctor_database_failure(config, exc, check)
            return
        with mem:
            check("database", True, str(config.db_path))
            try:
                mode = config.db_path.stat().st_mode & 0o777
                check("permissions", not mode & 0o077, f"{config.db_path} mode {mode:o}",
                      f"chmod 600 {config.db_path}")
            except OSError as exc:
                check("permissions", False, str(exc), "check the data folder")
            try:
                result = mem.store.quick_check()
                check("integrity", result == "ok", f"PRAGMA quick_check: {result}",
                      "move the database aside and run `evoclaw-memory restore`")
            except Exception as exc:    # noqa: BLE001
                check("integrity", False, f"PRAGMA quick_check failed: {exc}",
                      "move the database aside and run `evoclaw-memory restore`")
            try:
                counts = mem.store.table_counts()
                missing = [t for t in mem.store.REQUIRED_TABLES if t not in counts]
                check("schema", not missing,
                      f"missing tables: {', '.join(missing)}" if missing else
                      f"{len(counts)} tables, {counts.get('facts', 0)} fact rows",
                      "move the database aside and run `evoclaw-memory restore`")
            except Exception as exc:    # noqa: BLE001
                check("schema", False, f"cannot list tables: {exc}",
                      "move the database aside and run `evoclaw-memory restore`")
            md = config.memory_md_path
            check("memory_md", _writable(md), str(md),
                  f"make {md.parent} writable, or set memory_md in config.toml")
            try:
                sizes = mem.metrics()["sizes"]
            except Exception as exc:    # noqa: BLE001
                check("sizes", False, f"cannot measure: {exc}",
                      "move the database aside and run `evoclaw-memory restore`")
                return
            limits = (("hot_bytes", HOT_MAX_BYTES, "evoclaw-memory consolidate --mode quick"),
                      ("memory_md_bytes", HOT_MAX_BYTES, "evoclaw-memory hot --rebuild"),
                      ("warm_bytes", config.warm_max_bytes,
                       "evoclaw-memory consolidate --mode quick"),
                      ("tree_nodes", TREE_MAX_NODES, "evoclaw-memory tree prune"),
                      ("tree_bytes", TREE_MAX_BYTES, "evoclaw-memory tree prune"))
            for key, cap, fix in limits:
                check(key, sizes[key] <= cap, f"{sizes[key]}/{cap}", f"run `{fix}`")
            check("outbox", True, f"{sizes['outbox_depth']} change(s) waiting for sync")
            _rejected_check(mem, check)
            from evoclaw_memory.cli.agent import doctor_cloud_checks, doctor_llm_check
            if not skip_network:
                try:
                    doctor_cloud_checks(config, mem, check)
                except Exception as exc:    # noqa: BLE001 - e.g. a corrupt cloud.db
                    check("cloud", False, f"{type(exc).__name__}: {exc}",
                          "move the damaged cloud file aside (do not delete it) and run "
                          "`evoclaw-memory sync`")
                doctor_llm_check(config, check)

    run()
    failed = [c for c in checks if not c["ok"]]

    def human() -> None:
        for c in checks:
            line = f"{'OK  ' if c['ok'] else 'FAIL'}  {c['name']}: {c['detail']}"
            click.echo(line + (f" — fix: {c['fix']}" if c["fix"] else ""))

    _emit(ctx, {"ok": not failed, "checks": checks}, human)
    if failed:
        ctx.exit(1)


def _rejected_check(mem, check) -> None:
    """Outbox entries the cloud refused for good: set aside (the rest flowed), shown here."""
    rejected = mem.store.rejected()
    first = rejected[0] if rejected else None
    check("outbox_rejected", not rejected,
          f"{len(rejected)} entr{'y' if len(rejected) == 1 else 'ies'} set aside, e.g. "
          f"{first['kind']} {first['ref']}: {first['reason']}" if first else
          "no entry refused by the cloud",
          "see `evoclaw-memory sync --status`; edit the fact (it is queued again) or forget it")


def _writable(path: Path) -> bool:
    """True when `path` can be (re)written: its folder takes a new file, the file is writable."""
    import tempfile
    from evoclaw_memory.config import private_dir
    try:
        private_dir(path.parent)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".doctor."):
            pass
    except OSError:
        return False
    return not path.exists() or os.access(path, os.W_OK)


# -- entry point -----------------------------------------------------------------------------

from evoclaw_memory.cli import cloud as cli_cloud  # noqa: E402,F401  (registers sync, restore, cold, devices, key)
from evoclaw_memory.cli import agent as cli_agent  # noqa: E402,F401  (registers mcp, serve, import-legacy)


def main(argv: Optional[list[str]] = None) -> None:
    """Console-script entry point."""
    try:
        cli.main(args=argv, prog_name="evoclaw-memory")
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, without a second error on exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
