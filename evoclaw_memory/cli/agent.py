"""Where agents live: `mcp` (MCP server on stdio), `serve` (background service) and
`import-legacy` (the original skill's files); plus the doctor's cloud/key/LLM checks and the
`metrics --report` charts that cli.py calls.

Registered on the main group by cli.py; same conventions (thin skin over the library, lazy
imports, one-line errors, --json).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Optional

import click

from evoclaw_memory.cli.main import _config, _emit, _memory, _progress_bar, cli, common_options

# -- mcp -------------------------------------------------------------------------------------


@cli.command("mcp")
@common_options
@click.pass_context
def mcp_command(ctx: click.Context) -> None:
    """Run the MCP server on stdio for desktop apps and agent hosts (needs the [mcp] extra).

    \b
    Tools: get_context, retrieve, remember, end_conversation, update_hot, show_tree,
    sync, sync_status. Resources: evoclaw://memory/MEMORY.md, evoclaw://memory/tree,
    evoclaw://memory/tree.json. Logs go to stderr; stdout carries the protocol.
    """
    from evoclaw_memory.agent.mcp_server import serve_stdio
    serve_stdio(_config(ctx))


# -- serve -----------------------------------------------------------------------------------

@cli.command("serve")
@click.option("--heartbeat", type=click.FloatRange(min=0.05), default=60.0, show_default=True,
              metavar="SECONDS", help="Sync every SECONDS (push the outbox, pull other devices).")
@click.option("--quick-every", type=click.FloatRange(min=0.05), default=4 * 3600.0,
              show_default=True, metavar="SECONDS", help="Quick consolidation interval.")
@click.option("--retry-min", type=click.FloatRange(min=0.05), default=5.0, show_default=True,
              metavar="SECONDS", help="First retry delay when offline (doubles up to the "
                                      "heartbeat).")
@click.option("--no-consolidate", is_flag=True, help="Only sync; no scheduled consolidation.")
@click.option("--no-sync", is_flag=True, help="Only consolidate; never contact the cloud.")
@click.option("--once", is_flag=True, help="Do one round of whatever is due, then exit.")
@common_options
@click.pass_context
def serve_command(ctx: click.Context, heartbeat: float, quick_every: float, retry_min: float,
                  no_consolidate: bool, no_sync: bool, once: bool) -> None:
    """Keep this agent's memory synced and consolidated (for an always-on device).

    Syncs on a heartbeat (default 60 s) and soon after the network returns; consolidates
    quick every 4 h, daily after local midnight, monthly after the 1st. One log line per
    action on stderr. SIGTERM / SIGINT stop it cleanly: queued work stays in the outbox.
    """
    from evoclaw_memory.agent.service import configure_logging, run_service
    with _memory(ctx) as mem:
        configure_logging(mem.agent_id)
        status = run_service(mem, once=once, heartbeat=heartbeat, quick_every=quick_every,
                             retry_min=retry_min, consolidate=not no_consolidate,
                             sync=not no_sync)
    ctx.exit(status)


# -- import-legacy ---------------------------------------------------------------------------

@cli.command("import-legacy")
@click.option("--workspace", required=True, type=click.Path(file_okay=False, exists=True),
              help="The original skill's workspace (holding memory/).")
@click.option("--from-agent", default=None, metavar="ID",
              help="The original skill's agent id [default: the same as --agent-id].")
@click.option("--all", "all_agents", is_flag=True,
              help="Import every agent found: memory/ as 'default', memory/<agent>/ as <agent>.")
@click.option("--dry-run", is_flag=True, help="Report what would be imported; change nothing.")
@common_options
@click.pass_context
def import_legacy_command(ctx: click.Context, workspace: str, from_agent: Optional[str],
                          all_agents: bool, dry_run: bool) -> None:
    """Import the original skill's memory files (hot state, warm facts, tree, metrics).

    Reports what it took, what was already there, and what it refused (with a reason each).
    Safe to run again: nothing is imported twice.
    """
    from evoclaw_memory.config import validate_agent_id
    from evoclaw_memory.errors import ValidationError
    from evoclaw_memory.agent.legacy import find_agents, source_folder
    from evoclaw_memory.memory import Memory
    root = Path(workspace)
    if all_agents and from_agent:
        raise click.UsageError("use --all or --from-agent, not both")
    config = _config(ctx)
    if all_agents:
        found = find_agents(root)
        if not found:
            raise ValidationError(f"no legacy memory files in {root}")
        jobs = list(found.items())
    else:
        legacy = from_agent or config.agent_id
        jobs = [(legacy, source_folder(root, legacy))]
    reports = []
    for legacy_id, folder in jobs:
        target = config.agent_id if not all_agents else legacy_id
        try:
            validate_agent_id(target)
        except ValidationError as exc:
            reports.append({"agent_id": target, "source": str(folder), "error": str(exc)})
            continue
        agent_config = config if target == config.agent_id else _config_for(ctx, target)
        with Memory.open(config=agent_config) as mem, \
                _progress_bar(ctx, f"importing {target}") as bar:
            from evoclaw_memory.agent.legacy import import_legacy
            reports.append(import_legacy(mem, folder, dry_run=dry_run, progress=bar.update))

    def human() -> None:
        for rep in reports:
            if "error" in rep:
                click.echo(f"{rep['agent_id']}: refused: {rep['error']}")
                continue
            taken = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in rep["taken"].items() if v)
            verb = "would import" if rep["dry_run"] else "imported"
            click.echo(f"{rep['agent_id']} (from {rep['source']}): {verb} {taken or 'nothing'}")
            files = ", ".join(f"{name} {state}" for name, state in rep["files"].items())
            click.echo(f"  files: {files}")
            if rep["skipped"]:
                click.echo(f"  already there: {len(rep['skipped'])}")
            for item in rep["refused"]:
                click.echo(f"  refused {item['file']} {item['item']}: {item['reason']}")
            for note in rep["notes"]:
                click.echo(f"  note: {note}")

    _emit(ctx, reports if all_agents else reports[0], human)
    if any("error" in r for r in reports):
        ctx.exit(1)


def _config_for(ctx: click.Context, agent_id: str):
    from evoclaw_memory.config import load_config
    st = ctx.obj
    return load_config(home=st.home, agent_id=agent_id,
                       config_path=Path(st.config_path) if st.config_path else None)


class ProgressBar:
    """A progress bar on stderr for long work (only on a terminal): update(stage, done, total)."""

    def __init__(self, enabled: bool, label: str = "working"):
        self.enabled = enabled
        self.label = label
        self._bar: Any = None
        self._shown = 0

    def update(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        if self._bar is None:
            self._bar = click.progressbar(length=total, label=stage or self.label,
                                          file=sys.stderr)
            self._bar.__enter__()
        self._bar.label = stage or self.label
        step = max(0, min(done, total) - self._shown)
        self._bar.update(step)
        self._shown += step

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


# -- doctor: cloud, keys, LLM ----------------------------------------------------------------

Check = Callable[[str, bool, str, str], None]


def doctor_database_failure(config: Any, exc: BaseException, check: Check) -> None:
    """The failed `database` check when the memory cannot be opened, with the fix that fits:
    a read-only home is made writable (a restore would drop the unsynced changes in it), a
    damaged database of a folder that held memory is restored over (it is set aside)."""
    from evoclaw_memory.store.local import DamagedStoreError, ReadOnlyStoreError
    detail = str(exc) if str(config.db_path) in str(exc) else f"{config.db_path}: {exc}"
    if isinstance(exc, DamagedStoreError):
        # The message names its own way out; the fix column says it once more, shorter.
        detail = detail.split("; restore with")[0]
    if isinstance(exc, ReadOnlyStoreError):
        fix = f"make {config.db_path.parent} and {config.db_path.name} writable for this user"
    elif isinstance(exc, DamagedStoreError):
        fix = "run `evoclaw-memory restore --force` (the damaged file is kept beside it)"
    else:
        fix = "move the file aside (do not delete it) and run `evoclaw-memory restore`"
    check("database", False, detail, fix)


def doctor_cloud_checks(config: Any, mem: Any, check: Check, timeout: float = 5.0) -> None:
    """Cloud reachability and auth, then encryption keys (one check each, with a fix)."""
    from evoclaw_memory.cloud.remote import open_remote
    from evoclaw_memory.errors import AuthError, ConfigError, EvoclawError, Unavailable
    label = "embedded default file" if not config.cloud_url else _cloud_label(config.cloud_url)
    try:
        remote = open_remote(config.cloud_url, config.cloud_token,
                             Path(config.home) / "cloud.db", timeout=timeout, retries=0)
    except ConfigError as exc:
        check("cloud", False, str(exc), "fix [cloud] url in config.toml or TURSO_DATABASE_URL")
        return
    try:
        try:
            seconds = remote.ping()
        except AuthError as exc:
            check("cloud", False, f"{label}: {exc}",
                  "set a valid read-write token: TURSO_AUTH_TOKEN (or [cloud] auth_token); "
                  "`turso db tokens create DB` mints one")
            return
        except Unavailable as exc:
            check("cloud", False, f"{label}: unreachable ({exc})",
                  "check the network and the URL; work stays queued meanwhile "
                  "(`evoclaw-memory sync --status`)")
            return
        except EvoclawError as exc:
            check("cloud", False, f"{label}: {exc}", "check [cloud] url and auth_token")
            return
        check("cloud", True, f"{label} answered in {seconds * 1000:.0f} ms", "")
        _key_check(config, mem, remote, check)
        _archive_check(mem, remote, check)
    finally:
        remote.close()


def _archive_check(mem: Any, remote: Any, check: Check) -> None:
    """Does the cloud still hold what it acknowledged (read-only: nothing is re-queued)?"""
    from evoclaw_memory.errors import EvoclawError
    try:
        found = mem.verify_cloud(remote=remote, repair=False)
    except EvoclawError as exc:
        check("cloud_archive", False, f"cannot compare with the cloud: {exc}",
              "check the cloud token (read access)")
        return
    lost = found.missing or found.state_missing
    check("cloud_archive", not lost,
          f"the cloud lost {found.missing} acknowledged fact(s)"
          f"{' and the critical state' if found.state_missing else ''}" if lost else
          f"the cloud holds every acknowledged fact ({found.buckets} day(s) checked)",
          "run `evoclaw-memory sync --verify` (re-pushes what the cloud lost)")


def _key_check(config: Any, mem: Any, remote: Any, check: Check) -> None:
    from evoclaw_memory.cloud import keys
    from evoclaw_memory.errors import EvoclawError
    try:
        local = keys.local_keyring(mem.store)
        record = remote.get_keyring(mem.agent_id)
    except EvoclawError as exc:
        check("keys", False, f"cannot read the keyring: {exc}",
              "check the cloud token (read access) and the passphrase")
        return
    if local is not None:
        check("keys", True, "end-to-end encryption on; this device holds the keys", "")
    elif record is not None:
        env_pass, env_recovery = keys.secrets_from_env()
        if env_pass or env_recovery:
            check("keys", True, "encrypted memory; a passphrase or recovery key is in the "
                  "environment to unlock it", "")
        else:
            check("keys", False, "this memory is end-to-end encrypted but this device has no "
                  "keys yet", "run `evoclaw-memory sync` on a terminal (asks for the "
                  "passphrase) or set EVOCLAW_PASSPHRASE for services")
    elif config.wants_encryption:
        check("keys", False, "encryption is wanted for this cloud but no key is set up",
              "run `evoclaw-memory key init` (or set encryption = \"off\" in config.toml)")
    else:
        check("keys", True, "no encryption (local cloud file)" if not config.cloud_is_network
              else "encryption is off", "")


def doctor_llm_check(config: Any, check: Check, timeout: float = 5.0) -> None:
    """Can the configured OpenAI-compatible endpoint be reached with this key?"""
    if not config.llm_base_url:
        check("llm", True, "not configured (rule-based distillation and keyword tree search)",
              "")
        return
    import httpx
    base = config.llm_base_url.rstrip("/")
    headers = {"Authorization": f"Bearer {config.llm_api_key}"} if config.llm_api_key else {}
    where = _cloud_label(base)
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            resp = client.get(f"{base}/models", headers=headers)
    except httpx.HTTPError as exc:
        check("llm", False, f"{where}: unreachable ({type(exc).__name__})",
              "start the model server or fix EVOCLAW_LLM_BASE_URL (e.g. "
              "http://127.0.0.1:11434/v1 for Ollama)")
        return
    if resp.status_code in (401, 403):
        check("llm", False, f"{where}: the API key was refused (HTTP {resp.status_code})",
              "set EVOCLAW_LLM_API_KEY (or [llm] api_key)")
        return
    if resp.status_code >= 500:
        check("llm", False, f"{where}: server error (HTTP {resp.status_code})",
              "check the model server's logs")
        return
    model = config.llm_model or "(no model set)"
    detail = f"{where} answered (HTTP {resp.status_code}), model {model}"
    models: list[str] = []
    if resp.status_code == 200:
        try:
            models = [m.get("id") for m in resp.json().get("data", []) if isinstance(m, dict)]
        except ValueError:
            models = []
    if not config.llm_model:
        check("llm", False, detail, "set EVOCLAW_LLM_MODEL (or [llm] model)")
    elif models and config.llm_model not in models:
        check("llm", False, f"{detail}, which the server does not list",
              f"use one of: {', '.join(str(m) for m in models[:5])}")
    else:
        check("llm", True, detail, "")


def _cloud_label(url: str) -> str:
    """A URL without any credential: scheme://host[:port]."""
    from urllib.parse import urlsplit
    if "://" not in url or url.startswith("file:"):
        return "file"
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(unparsable URL)"
    return f"{parts.scheme}://{parts.hostname}{port}"


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
