"""The `tree` command group of `evoclaw-memory`: show (default), add, remove, move, prune."""

from __future__ import annotations

from typing import Any, Optional

import click

from evoclaw_memory.cli.common import EvoGroup, common_options, emit, open_memory


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


@click.group(cls=TreeGroup, invoke_without_command=True)
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
    with open_memory(ctx) as mem:
        payload = _tree_payload(mem)
    emit(ctx, payload, lambda: click.echo(payload["text"]))


@tree.command("add")
@click.argument("path")
@click.argument("description", required=False, default="")
@common_options
@click.pass_context
def tree_add(ctx: click.Context, path: str, description: str) -> None:
    """Add PATH (and missing parents) with an optional DESCRIPTION (<= 100 chars)."""
    with open_memory(ctx) as mem:
        node = mem.tree_add(path, description)
        text = mem.tree_text()
    emit(ctx, node, lambda: click.echo(f"added {node.path}\n{text}"))


@tree.command("remove")
@click.argument("path")
@common_options
@click.pass_context
def tree_remove(ctx: click.Context, path: str) -> None:
    """Remove PATH and its descendants (refused while any of them holds facts)."""
    with open_memory(ctx) as mem:
        mem.tree_remove(path)
    emit(ctx, {"removed": path.strip().lower()},
          lambda: click.echo(f"removed {path.strip().lower()}"))


@tree.command("move")
@click.argument("old")
@click.argument("new")
@common_options
@click.pass_context
def tree_move(ctx: click.Context, old: str, new: str) -> None:
    """Move the facts filed at OLD (and below) to NEW, then remove OLD."""
    with open_memory(ctx) as mem:
        moved = mem.tree_move(old, new)
    emit(ctx, {"moved": moved, "from": old.strip().lower(), "to": new.strip().lower()},
         lambda: click.echo(f"moved {moved} fact(s) from {old.strip().lower()} to "
                            f"{new.strip().lower()}"))


@tree.command("prune")
@click.option("--idle-days", type=click.FloatRange(min=0), default=None,
              help="Idle time before an empty node goes [default: 60].")
@common_options
@click.pass_context
def tree_prune(ctx: click.Context, idle_days: Optional[float]) -> None:
    """Remove empty nodes with no activity for 60 days (or --idle-days)."""
    with open_memory(ctx) as mem:
        gone = mem.tree_prune(idle_days)

    def human() -> None:
        click.echo(f"pruned {len(gone)} node(s)" + (": " + ", ".join(gone) if gone else ""))

    emit(ctx, {"removed": gone}, human)


COMMANDS = (tree,)
