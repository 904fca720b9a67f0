"""Fact commands of `evoclaw-memory`: store, retrieve, context, get, supersede, search-url."""

from __future__ import annotations

from typing import Any, Optional

import click

from evoclaw_memory.cli.common import (cli_state, common_options, emit, fact_json, fact_line,
                                       format_time, llm_endpoint_option, open_memory, plain,
                                       read_stdin, require_llm, time_option)


# --created-at: epoch seconds or an ISO 8601 date/time (UTC when no zone is given).
_parse_time = time_option("2025-11-30T09:00:00Z")


@click.command()
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
@click.option("--pin", "pinned", is_flag=True, help="Into the vault: never decays, never evicted.")
@click.option("--private/--shared", "private", default=None,
              help="Owner's sessions only / any session [default: by category and words].")
@click.pass_context
def store(ctx: click.Context, text: str, category: str, importance: float, urls: tuple,
          cmds: tuple, paths: tuple, created_at: Any, pinned: bool = False,
          private: Optional[bool] = None) -> None:
    """Store a fact in warm memory; prints its id (a duplicate reinforces the existing fact)."""
    if text == "-":
        text = read_stdin()
    # The body is shared with the click-free fast path (cli.fast), so the two cannot differ.
    plain.store(cli_state(ctx), click.echo, text, category, importance, urls, cmds, paths,
                created_at, pinned, private)


@click.command()
@click.argument("query", required=False, default=None)
@click.option("--query", "-q", "query_flag", default=None, metavar="QUERY",
              help="The query as a flag (the original skill's form).")
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--llm", is_flag=True, help="Insist on the LLM tree search (an error when no LLM "
              "is configured; by default it runs whenever one is).")
@llm_endpoint_option
@common_options
@click.pass_context
def retrieve(ctx: click.Context, query: Optional[str], query_flag: Optional[str],
             limit: int, llm: bool) -> None:
    """Find the facts most relevant to QUERY (tree search, then full text); reinforces them."""
    if (query is None) == (query_flag is None):
        raise click.UsageError("give the query once: `retrieve QUERY` or `retrieve --query QUERY`")
    if llm:
        require_llm(ctx)
    # Exactly one is given (checked above); `or ""` only tells mypy so.
    plain.retrieve(cli_state(ctx), click.echo, query if query is not None else query_flag or "",
                   limit)


@click.command()
@click.argument("query", required=False, default="")
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=8, show_default=True,
              help="Most facts to retrieve for QUERY.")
@click.option("--audience", type=click.Choice(["owner", "shared"]), default="owner",
              show_default=True, help="shared: a session others see; private items left out.")
@common_options
@click.pass_context
def context(ctx: click.Context, query: str, limit: int, audience: str = "owner") -> None:
    """Print what the agent loads: MEMORY.md + the tree + facts retrieved for QUERY."""
    plain.context(cli_state(ctx), click.echo, query, limit, audience)


@click.command()
@click.argument("fact_id", metavar="ID")
@common_options
@click.pass_context
def get(ctx: click.Context, fact_id: str) -> None:
    """Show one fact by id."""
    with open_memory(ctx) as mem:
        fact = mem.get(fact_id)

    def human() -> None:
        # Every field of the fact (--json has them all too), the owner's flags included:
        # "is this pinned? is this private?" is what a person asks `get`.
        click.echo(fact_line(fact))
        click.echo(f"  importance {fact.importance}  tier {fact.tier}  accessed "
                   f"{fact.access_count}x  created {format_time(fact.created_at)}")
        click.echo(f"  pinned {_yes_no(fact.pinned)}  private {_yes_no(fact.private)}  "
                   f"source {fact.source}  last access {format_time(fact.last_access)}")
        if fact.changed_at:
            click.echo(f"  changed {format_time(fact.changed_at)}")
        if fact.speaker:
            click.echo(f"  speaker {fact.speaker}")
        for label, items in (("url", fact.metadata.urls), ("cmd", fact.metadata.commands),
                             ("path", fact.metadata.paths)):
            for item in items:
                click.echo(f"  {label}: {item}")
        if fact.superseded_by:
            click.echo(f"  superseded by {fact.superseded_by}")

    emit(ctx, fact, human)


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


@click.command()
@click.argument("old_id", metavar="OLD_ID")
@click.argument("new_id", metavar="NEW_ID")
@common_options
@click.pass_context
def supersede(ctx: click.Context, old_id: str, new_id: str) -> None:
    """Mark fact OLD_ID superseded by NEW_ID (kept for history, excluded from search)."""
    with open_memory(ctx) as mem:
        mem.supersede(old_id, new_id)
    emit(ctx, {"superseded": old_id, "by": new_id},
          lambda: click.echo(f"{old_id} superseded by {new_id}"))


@click.command("search-url")
@click.argument("fragment", required=False, default=None)
@click.option("--url", "url_flag", default=None, metavar="FRAGMENT",
              help="The fragment as a flag (the original skill's form).")
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=20, show_default=True)
@common_options
@click.pass_context
def search_url(ctx: click.Context, fragment: Optional[str], url_flag: Optional[str],
               limit: int) -> None:
    """Facts whose URLs, commands, paths or text contain FRAGMENT."""
    if (fragment is None) == (url_flag is None):
        raise click.UsageError("give the fragment once: `search-url FRAGMENT` or "
                               "`search-url --url FRAGMENT`")
    fragment = fragment if fragment is not None else url_flag
    with open_memory(ctx) as mem:
        facts = mem.search_url(fragment, limit=limit)

    def human() -> None:
        if not facts:
            click.echo("no matching memories")
        for fact in facts:
            click.echo(fact_line(fact))
            for url in fact.metadata.urls:
                click.echo(f"    {url}")

    emit(ctx, [fact_json(f) for f in facts], human)


COMMANDS = (store, retrieve, context, get, supersede, search_url)
