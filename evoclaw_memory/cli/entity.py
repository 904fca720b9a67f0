"""`evoclaw-memory entity add|remove|link|query|list`: the entity graph (issue 18), thin
wrappers over Memory.add_entity, remove_entity, link, entity and entities."""

from __future__ import annotations


from typing import Any, Optional

import click

from evoclaw_memory.cli.common import EvoGroup, common_options, emit, open_memory

KINDS = ("people", "projects", "tools", "concepts", "places", "other")


def _plain(entity: Any) -> dict[str, Any]:
    import msgspec
    return msgspec.to_builtins(entity)


def _line(e: Any) -> str:
    aliases = f" aka {', '.join(e.aliases)}" if e.aliases else ""
    return f"{e.name} [{e.kind}]{aliases}: {e.mentions} mention(s)"


@click.group("entity", cls=EvoGroup)
def entity() -> None:
    """People, projects, tools, concepts, places and other things the memory knows."""


@entity.command("add")
@click.argument("name")
@click.option("--kind", "-k", type=click.Choice(KINDS), default="other", show_default=True)
@click.option("--attr", "attrs", multiple=True, metavar="KEY=VALUE", help="An attribute (repeatable).")
@common_options
@click.pass_context
def add(ctx: click.Context, name: str, kind: str, attrs: tuple[str, ...]) -> None:
    """Add an entity (or set a known one's kind and attributes)."""
    attributes = {}
    for item in attrs:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r}: use KEY=VALUE", param_hint="--attr")
        attributes[key] = value
    with open_memory(ctx) as mem:
        e = mem.add_entity(name, kind, attributes or None)
    emit(ctx, _plain(e), lambda: click.echo(_line(e)))


@entity.command("remove")
@click.argument("name")
@common_options
@click.pass_context
def remove(ctx: click.Context, name: str) -> None:
    """Remove an entity, its aliases and links (the facts stay)."""
    with open_memory(ctx) as mem:
        gone = mem.remove_entity(name)
    emit(ctx, {"removed": gone}, lambda: click.echo("removed" if gone else f"no entity {name!r}"))


@entity.command("link")
@click.argument("a")
@click.argument("b")
@click.option("--relation", "-r", required=True, help='What A is of B, e.g. "wife".')
@common_options
@click.pass_context
def link(ctx: click.Context, a: str, b: str, relation: str) -> None:
    """Relate A to B: A is RELATION of B (B may be "owner")."""
    with open_memory(ctx) as mem:
        e = mem.link(a, b, relation)
    emit(ctx, _plain(e), lambda: click.echo(f"{e.name}: {relation} of {b}"))


@entity.command("query")
@click.argument("name")
@common_options
@click.pass_context
def query(ctx: click.Context, name: str) -> None:
    """One entity: attributes, relations, mentions and its facts' ids."""
    with open_memory(ctx) as mem:
        e = mem.entity(name)

    def human() -> None:
        click.echo(_line(e))
        for key, value in e.attributes.items():
            click.echo(f"  {key}: {value}")
        for r in e.relations:
            click.echo(f"  {r.relation}: {r.other}")
        click.echo(f"  facts: {' '.join(e.facts) if e.facts else '(none)'}")

    emit(ctx, _plain(e), human)


@entity.command("list")
@click.option("--kind", "-k", type=click.Choice(KINDS), default=None)
@click.option("--limit", "-n", type=int, default=None)
@common_options
@click.pass_context
def list_(ctx: click.Context, kind: Optional[str], limit: Optional[int]) -> None:
    """Known entities, most mentioned first."""
    with open_memory(ctx) as mem:
        found = mem.entities(kind=kind, limit=limit)
    def human() -> None:
        for e in found:
            click.echo(_line(e))

    emit(ctx, {"entities": [_plain(e) for e in found], "count": len(found)}, human)


COMMANDS = (entity,)

