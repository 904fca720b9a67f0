"""Looking at memory without changing it: `metrics` (with the `--report` bar charts) and
`config show`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import click

from evoclaw_memory.cli.common import (EvoGroup, cli_state, command_config, common_options, emit,
                                       format_time, open_memory)


# -- metrics ---------------------------------------------------------------------------------

@click.command()
@click.option("--report", is_flag=True,
              help="Bar charts: each tier against its limit, facts by score tier and category.")
@common_options
@click.pass_context
def metrics(ctx: click.Context, report: bool) -> None:
    """Counters, last-run times and the live size of every tier."""
    from evoclaw_memory.limits import HOT_MAX_BYTES, TREE_MAX_BYTES, TREE_MAX_NODES
    with open_memory(ctx) as mem:
        data = mem.metrics()
        warm_cap = mem.config.warm_max_bytes
        if report:
            data["usage"] = tier_usage(mem)
    caps = {"hot_bytes": HOT_MAX_BYTES, "memory_md_bytes": HOT_MAX_BYTES,
            "warm_bytes": warm_cap, "tree_nodes": TREE_MAX_NODES, "tree_bytes": TREE_MAX_BYTES}
    if report:
        data["caps"] = caps
        emit(ctx, data, lambda: click.echo(render_report(data, caps, data["usage"])))
        return

    def number(value: Any) -> str:
        # Seconds and ratios come as floats like 0.30000000000000004: three decimals say it.
        if isinstance(value, float):
            return str(int(value)) if value.is_integer() else f"{value:,.3f}".rstrip("0")
        return f"{value:,}" if isinstance(value, int) else str(value)

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
            click.echo(f"  {key:<{width}}{format_time(value)}")
        if not data["timestamps"]:
            click.echo("  (none yet)")

    emit(ctx, data, human)


# -- config ----------------------------------------------------------------------------------

@click.group("config", cls=EvoGroup)
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
    config = command_config(ctx)
    data = config.redacted()
    for key in ("cloud_url", "llm_base_url"):
        data[key] = _redact_url(data.get(key))
    config_file = cli_state(ctx).config_path or str(Path(config.home) / "config.toml")
    data.update({"config_file": config_file,
                 "db_path": str(config.db_path), "workspace_path": str(config.workspace_path),
                 "memory_md_path": str(config.memory_md_path)})

    def human() -> None:
        width = max(len(k) for k in data) + 1
        for key, value in data.items():
            click.echo(f"{key:<{width}}= {'(unset)' if value is None else value}")

    emit(ctx, data, human)


# -- metrics --report ------------------------------------------------------------------------

BAR_WIDTH = 30


def tier_usage(mem: Any) -> dict[str, Any]:
    """Live facts by score tier (hot candidate / warm / cold / frozen) and by top category."""
    now = mem.clock()
    tiers = {"hot": 0, "warm": 0, "cold": 0, "frozen": 0}
    stored = {"warm": 0, "cold": 0}
    categories: dict[str, int] = {}
    for fact in mem.store.iter_facts(live_only=True):
        tiers[mem.tier_of(fact, now)] += 1
        stored[fact.tier] = stored.get(fact.tier, 0) + 1
        top = fact.category.split("/")[0]
        categories[top] = categories.get(top, 0) + 1
    top = dict(sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))[:8])
    return {"by_score": tiers, "by_storage": stored, "top_categories": top}


def _bar(fraction: float, width: int = BAR_WIDTH) -> str:
    fraction = max(0.0, fraction)
    full, empty = ("█", "░") if _unicode_ok() else ("#", ".")
    filled = min(width, round(min(fraction, 1.0) * width))
    return full * filled + empty * (width - filled) + ("!" if fraction > 1 else "")


def _unicode_ok() -> bool:
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower()
    return "utf" in encoding


def render_report(data: dict, caps: dict[str, int], usage: dict[str, Any]) -> str:
    """Terminal bar charts: each tier against its limit, facts by score tier and category."""
    lines = ["Tier usage (against the limits)"]
    labels = {"hot_bytes": ("hot memory", "B"), "memory_md_bytes": ("MEMORY.md", "B"),
              "warm_bytes": ("warm facts", "B"), "tree_nodes": ("tree nodes", ""),
              "tree_bytes": ("tree rendered", "B")}
    sizes = data["sizes"]
    for key, (label, unit) in labels.items():
        cap = caps.get(key)
        if not cap or key not in sizes:
            continue
        value = sizes[key]
        lines.append(f"  {label:<14}{_bar(value / cap)} {value / cap:>4.0%}  "
                     f"{value:,}/{cap:,}{(' ' + unit) if unit else ''}")
    lines.append(f"  {'cold archive':<14}{sizes.get('cold_facts', 0):,} fact(s) (unlimited); "
                 f"outbox {sizes.get('outbox_depth', 0):,}")
    total = sum(usage["by_score"].values())
    lines.append("Facts by score tier (>=0.7 hot, >=0.3 warm, >=0.05 cold, frozen)")
    for tier, count in usage["by_score"].items():
        share = count / total if total else 0.0
        lines.append(f"  {tier:<14}{_bar(share)} {count:>6,}")
    if usage["top_categories"]:
        lines.append("Facts by top category")
        most = max(usage["top_categories"].values())
        for name, count in usage["top_categories"].items():
            lines.append(f"  {name[:13]:<14}{_bar(count / most)} {count:>6,}")
    return "\n".join(lines)


COMMANDS = (metrics, config_group)
