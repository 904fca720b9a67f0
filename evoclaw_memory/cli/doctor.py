"""`evoclaw-memory doctor`: every check that memory works on this device (config, database,
integrity, MEMORY.md, limits, the serve relay, cloud reachability and auth, encryption keys,
LLM), each failure with its fix. Doctor reports, never crashes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import click

from evoclaw_memory.cli.common import cli_state, command_config, common_options, emit, one_line
from evoclaw_memory.errors import EvoclawError


@click.command()
@click.option("--offline", "skip_network", is_flag=True,
              help="Skip the network checks (cloud reachability and auth, keys, LLM).")
@common_options
@click.pass_context
def doctor(ctx: click.Context, skip_network: bool) -> None:
    """Check that memory works here: config, database, integrity, MEMORY.md, limits, the
    `serve` relay, cloud reachability and auth, encryption keys, LLM reachability; each
    failure with a fix.

    Exit status 1 when any check fails.
    """
    checks: list[dict] = []

    def check(name: str, ok: bool, detail: str, fix: str = "") -> None:
        checks.append({"name": name, "ok": ok, "detail": one_line(detail),
                       "fix": "" if ok else fix})

    def run() -> None:
        try:
            config = command_config(ctx)
        except EvoclawError as exc:
            check("config", False, str(exc), "fix config.toml, the environment or the flags")
            return
        check("config", True, f"agent {config.agent_id}, home {config.home}")
        from evoclaw_memory.limits import HOT_MAX_BYTES, TREE_MAX_BYTES, TREE_MAX_NODES
        from evoclaw_memory.memory import Memory
        try:
            mem = Memory.open(config=config)
        except Exception as exc:    # noqa: BLE001 - doctor reports, never crashes
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
            problem = mem.memory_md_problem()
            check("memory_md_content", problem is None,
                  f"MEMORY.md is {problem}" if problem else "MEMORY.md shows the hot state",
                  "run `evoclaw-memory hot --rebuild`")
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
            _relay_check(config, cli_state(ctx).config_path, check)
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

    emit(ctx, {"ok": not failed, "checks": checks}, human)
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


def _relay_check(config: Any, config_path: Any, check: Check) -> None:
    """Is a `serve` relaying this agent's per-turn commands, and would it run them for
    this environment (cli.relay)? Asked of the serve itself, which runs nothing for it."""
    from evoclaw_memory.cli import relay
    from evoclaw_memory.cli.relay_server import probe
    home = os.path.abspath(os.path.expanduser(config.home))
    path = relay.socket_path(home, config.agent_id)
    argv = ["--home", home, "--agent-id", config.agent_id]
    if config_path:
        argv += ["--config", os.path.abspath(config_path)]
    state, status = probe(path, [*argv, "context"])
    restart = f"restart serve (e.g. `systemctl restart evoclaw-memory@{config.agent_id}`)"
    if state == "none":
        check("relay", True, f"no relay: no `serve` runs for agent {config.agent_id} (each "
              "per-turn command starts its own process)", "")
    elif state == "stale":
        check("relay", True, f"no relay: nothing answers on {path} (left by a serve that "
              "stopped; the next one replaces it)", "")
    elif state == "silent":
        check("relay", False, f"a serve holds {path} but does not take commands (stopped or "
              f"wedged): each per-turn command waits {relay.READY_TIMEOUT:g} s, then runs "
              "in its own process", restart)
    elif not status.get("pid"):
        check("relay", False, f"a serve answers on {path} but is an older version (it "
              "declines this package's commands)", restart)
    elif not status.get("accepts"):
        why = status.get("why") or "unknown"
        check("relay", False, f"serve (pid {status['pid']}) listens on {path} but declines "
              f"this agent's commands from here: {why}",
              restart if why == "another installation or version" else
              "run serve with the same HOME and TZ as the agent" if why == "another HOME or TZ"
              else "see `evoclaw-memory serve`'s log")
    else:
        check("relay", True, f"active: serve (pid {status['pid']}) relays agent "
              f"{config.agent_id}'s per-turn commands on {path}; {status.get('served', 0)} "
              f"relayed, {status.get('declined', 0)} declined since it started", "")


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


# -- probes: an unopenable database, cloud, keys, LLM ----------------------------------------

Check = Callable[[str, bool, str, str], None]


def doctor_database_failure(config: Any, exc: BaseException, check: Check) -> None:
    """The failed `database` check when the memory cannot be opened, with the fix that fits:
    a read-only home is made writable (a restore would drop the unsynced changes in it), a
    damaged database of a folder that held memory is restored over (it is set aside)."""
    from evoclaw_memory.errors import DamagedStoreError, ReadOnlyStoreError
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
    if config.cloud_token and not config.cloud_is_network:
        # A token only means something to a server: with a file target it is ignored and the
        # memory syncs in plain text to a local file, which is never what its owner meant.
        check("cloud", False, f"a cloud token is set but the cloud is a local file ({label}): "
              "the token is unused and nothing leaves this device",
              "set TURSO_DATABASE_URL (or [cloud] url) to libsql://, https:// or http://, or "
              "unset TURSO_AUTH_TOKEN")
        return
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
        try:
            # A write that changes nothing: a read-only token answers ping but refuses it.
            remote.sql.execute("UPDATE devices SET last_seen = last_seen WHERE 0")
        except AuthError as exc:
            check("cloud", False, f"{label}: {exc}",
                  "set a read-write token: TURSO_AUTH_TOKEN (or [cloud] auth_token); a "
                  "read-only one can restore but never sync")
            return
        except EvoclawError:
            pass            # no devices table yet (a new cloud): the first sync creates it
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
              "check the cloud token (it needs read-write access) and the network")
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
              "check the cloud token (it needs read-write access) and the passphrase")
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
            models = [m["id"] for m in resp.json().get("data", [])
                      if isinstance(m, dict) and isinstance(m.get("id"), str)]
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
        return f"file {url}"
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(unparsable URL)"
    return f"{parts.scheme}://{parts.hostname}{port}"


COMMANDS = (doctor,)
