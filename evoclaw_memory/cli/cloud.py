"""Cloud commands of `evoclaw-memory`: sync, restore, cold, devices, key.

Same conventions as every command module (thin skin over Memory, lazy imports, one-line
errors, --json). Secrets never come from flags (they would land in shell history):
EVOCLAW_PASSPHRASE / EVOCLAW_RECOVERY_KEY, or a hidden prompt on a terminal.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import click

from evoclaw_memory.cli.common import (command_config, common_options, emit, fact_line,
                                       format_time, open_memory, progress_bar)


def _interactive() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def _ask_secret(prompt: str, confirm: bool = False) -> str:
    return click.prompt(prompt, hide_input=True, confirmation_prompt=confirm, err=True)


def _with_secret(action, *, recovery: bool):
    """Run `action(passphrase, recovery_key)`; on a terminal, ask once if a secret is needed."""
    from evoclaw_memory.errors import CryptoError
    try:
        return action(None, None)
    except CryptoError as exc:
        needs_secret = "give the passphrase" in str(exc)
        if not needs_secret or not _interactive():
            raise
    if recovery:
        return action(None, _ask_secret("Recovery key"))
    return action(_ask_secret("Passphrase"), None)


# -- sync ------------------------------------------------------------------------------------

@click.command()
@click.option("--status", is_flag=True, help="Show outbox depth, last push, remote version and "
              "entries set aside, without contacting the cloud.")
@click.option("--verify", is_flag=True, help="Check that the cloud still holds everything it "
              "acknowledged; re-push what it lost.")
@common_options
@click.pass_context
def sync(ctx: click.Context, status: bool, verify: bool) -> None:
    """Push queued changes (facts + critical state) and pull other devices' changes."""
    from evoclaw_memory.errors import Unavailable
    if status and verify:
        raise click.UsageError("use --status or --verify, not both")
    with open_memory(ctx) as mem:
        if status:
            info = mem.sync_status()
            emit(ctx, info, lambda: _echo_status(info))
            return
        found = mem.verify_cloud() if verify else None
        try:
            report = _with_secret(lambda p, r: _sync_with(mem, p, r), recovery=False)
        except Unavailable as exc:
            from evoclaw_memory.cloud.restore import describe_unsynced
            queued = describe_unsynced(mem.store)
            raise Unavailable(f"{exc}; {queued} stay queued and will be sent at the next sync"
                              if queued else f"{exc}; nothing was waiting to be sent") from None
        if found is not None:
            # What was re-pushed is checked again (one more request, only after a loss):
            # "verified" means the cloud now holds it, not that a push was acknowledged.
            again = mem.verify_cloud(repair=False) if found.requeued else found
            _emit_verify(ctx, found, report, mem.store.outbox_depth(), again)
            return
    emit(ctx, report, lambda: click.echo(
        f"pushed {report.pushed_facts} fact(s)"
        f"{' + critical state' if report.state_pushed else ''}, pulled {report.pulled_facts} "
        f"fact(s){', merged with another device' if report.merged else ''}; remote version "
        f"{report.remote_version}; {report.requests} request(s); outbox {report.outbox_depth}"
        + (f"; {report.rejected} entr{'y' if report.rejected == 1 else 'ies'} refused by the "
           "cloud, set aside (see sync --status)" if report.rejected else "")
        + (f"; the cloud had lost this agent's data: {report.repaired} item(s) re-pushed"
           if report.repaired else "")))


def _echo_status(info: dict) -> None:
    click.echo(f"outbox: {info['outbox_depth']} queued · "
               f"last push: {format_time(info['last_push'])} · "
               f"remote version: {info['remote_version']} · device: {info['device_id']}"
               + _reseal_note(info["reseal"]))
    for entry in info["rejected"]:
        click.echo(f"set aside: {entry['kind']} {entry['ref']} "
                   f"({format_time(entry['rejected_at'])}): {entry['reason']}")


def _emit_verify(ctx: click.Context, found, report, depth: int, again) -> None:
    """sync --verify: what the cloud had lost, and whether it holds everything now (`again`:
    the check after the re-push)."""
    still = again.missing + int(again.state_missing)
    data = {"verified": depth == 0 and still == 0, "missing": found.missing,
            "state_missing": found.state_missing, "requeued": found.requeued,
            "buckets": found.buckets, "pushed_facts": report.pushed_facts,
            "outbox_depth": depth, "still_missing": again.missing}
    lost = (f"the cloud had lost {found.missing} fact(s)"
            f"{' and the critical state' if found.state_missing else ''}; re-pushed"
            if found.requeued else "the cloud holds everything this device acknowledged")
    emit(ctx, data, lambda: click.echo(
        f"verified {found.buckets} day(s) of facts: {lost}"
        + ("" if depth == 0 else f"; {depth} change(s) still queued")
        + (f"; the cloud still lacks {again.missing} fact(s) after the re-push: not verified"
           if again.missing else "")
        + ("; the cloud still lacks the critical state: not verified"
           if again.state_missing else "")))


def _reseal_note(reseal: dict) -> str:
    """The re-seal of the cloud archive after `key init` / `key rotate`, for status lines."""
    bad = f", {reseal['unreadable']} unreadable row(s) left as they are" \
        if reseal["unreadable"] else ""
    if reseal["pending"]:
        return (f" · re-seal: PENDING ({reseal['resealed']} row(s) done, "
                f"{reseal['remaining']} left{bad}): run sync")
    if reseal["finished_at"]:
        return (f" · re-seal: complete ({reseal['resealed']} row(s) at "
                f"{format_time(reseal['finished_at'])}{bad})")
    return ""


def _sync_with(mem, passphrase, recovery_key):
    if passphrase or recovery_key:
        remote = mem.open_remote(passphrase, recovery_key)
        try:
            return mem.sync(remote=remote)
        finally:
            remote.close()
    return mem.sync()


@click.command("sync-critical", hidden=True)
@common_options
@click.pass_context
def sync_critical(ctx: click.Context) -> None:
    """The original skill's name for `sync`."""
    ctx.invoke(sync, status=False, verify=False)


# -- restore ---------------------------------------------------------------------------------

@click.command()
@click.option("--full", is_flag=True, help="Also mirror the whole cold archive (resumable).")
@click.option("--force", is_flag=True, help="Replace a non-empty (or damaged) local memory.")
@click.option("--discard-unsynced", is_flag=True,
              help="Drop the changes not yet synced (without it a restore over them is "
                   "refused: run sync first).")
@click.option("--recovery-key", "use_recovery", is_flag=True,
              help="Unlock with the recovery key (prompted, or EVOCLAW_RECOVERY_KEY).")
@common_options
@click.pass_context
def restore(ctx: click.Context, full: bool, force: bool, discard_unsynced: bool,
            use_recovery: bool) -> None:
    """Rebuild this device's memory (hot, tree, MEMORY.md, warm facts) from the cloud.

    Nothing local changes until the keys are unlocked and the cloud's memory is fetched;
    a restore that fails leaves no new agent folder behind."""
    from evoclaw_memory.cloud.restore import describe_unsynced, resuming, unsynced_at_risk
    from evoclaw_memory.memory import Memory
    config = command_config(ctx)
    created = _paths_to_create(config)
    landed = False
    try:
        # --force is also the way out of a damaged database (it is set aside, never deleted).
        with Memory.open(config=config, recover_damaged=force) as mem:
            try:
                unsynced = describe_unsynced(mem.store) if unsynced_at_risk(mem.store) else ""
                if unsynced and discard_unsynced:   # without the flag the refusal names them
                    click.echo(f"{unsynced} not synced yet will be discarded by this restore "
                               "(--discard-unsynced)", err=True)

                def run(passphrase, recovery_key):
                    if use_recovery and not recovery_key:
                        recovery_key = os.environ.get("EVOCLAW_RECOVERY_KEY") or (
                            _ask_secret("Recovery key") if _interactive() else None)
                    with progress_bar(ctx, "restoring") as bar:
                        return mem.restore(full=full, force=force,
                                           discard_unsynced=discard_unsynced,
                                           progress=bar.update, passphrase=passphrase,
                                           recovery_key=recovery_key)

                report = _with_secret(run, recovery=use_recovery)
            except BaseException:
                # A --full mirror cut halfway has landed: its folder is kept to resume.
                landed = not mem.store.is_empty() or resuming(mem.store)
                raise
    except BaseException:
        if not landed:
            _remove_created(created)
        raise
    rejected = list(getattr(report, "rejected", []) or [])
    emit(ctx, report, lambda: click.echo(_restored_line(report, full, unsynced)))
    for line in rejected:
        click.echo(f"warning: {line}", err=True)


def _restored_line(report, full: bool, unsynced: str) -> str:
    """The human summary of a restore. With --full, the facts now on this device (warm and
    mirrored alike: the mirror's own count leaves out what the fast path already brought)."""
    held = (f"{report.local_facts} of the archive's {report.archive_facts} fact(s) on this "
            f"device ({report.warm_facts} warm)" if full else
            f"{report.warm_facts} warm fact(s), {report.archive_facts} in the archive")
    rejected = len(getattr(report, "rejected", []) or [])
    return (f"restored agent {report.agent_id}: remote version {report.remote_version}, "
            f"{held} in {report.seconds:.2f} s"
            + (f"; discarded {unsynced or 'the changes'} not yet synced"
               if report.discarded_unsynced else "")
            + (f"; {rejected} damaged row(s) skipped" if rejected else ""))


def _paths_to_create(config) -> tuple[list, list]:
    """What opening this agent's memory will create: (files, folders), folders innermost
    first: its folder (and `agents/` above it) when missing, else the database files when
    missing. An existing memory is never listed."""
    from pathlib import Path
    from evoclaw_memory.store.opening import marker_path
    folder = Path(config.agent_dir)
    if not folder.exists():
        return [], [folder] + ([folder.parent] if not folder.parent.exists() else [])
    db = Path(config.db_path)
    if db.exists():
        return [], []
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"),
            marker_path(db)], []


def _remove_created(created: tuple[list, list]) -> None:
    """Remove what a failed restore created (a new agent's empty memory and its marker):
    following the advice of the error then starts from where the owner was."""
    import shutil
    files, folders = created
    for path in files:
        path.unlink(missing_ok=True)
    if folders:
        shutil.rmtree(folders[0], ignore_errors=True)    # the agent's own, new folder
    for folder in folders[1:]:          # `agents/`, made for it: only when left empty
        try:
            folder.rmdir()
        except OSError:
            pass


# -- cold ------------------------------------------------------------------------------------

@click.command()
@click.option("--init", "init_", is_flag=True, help="Create or migrate the cloud tables.")
@click.option("--query", "query", default=None, metavar="TEXT",
              help="Archive facts containing TEXT (newest first).")
@click.option("--category", default=None, metavar="PATH", help="Only this category and below.")
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=20, show_default=True)
@common_options
@click.pass_context
def cold(ctx: click.Context, init_: bool, query: Optional[str], category: Optional[str],
         limit: int) -> None:
    """The cold archive in the cloud: --init its schema, --query it."""
    if not init_ and query is None and category is None:
        raise click.UsageError("use --init, or --query TEXT and/or --category PATH")
    with open_memory(ctx) as mem:
        if init_:
            from evoclaw_memory.lifecycle.cloud_side import open_configured
            with open_configured(mem.config) as remote:
                version = remote.ensure_schema()
                label = remote.label
            emit(ctx, {"schema_version": version, "cloud": label},
                  lambda: click.echo(f"cloud schema at version {version} ({label})"))
            return
        facts = _with_secret(lambda p, r: _cold_query(mem, query, category, limit, p, r),
                             recovery=False)
    emit(ctx, facts, lambda: click.echo("\n".join(fact_line(f) for f in facts)
                                         or "(nothing found)"))


def _cold_query(mem, text, category, limit, passphrase, recovery_key):
    if passphrase or recovery_key:
        with mem.open_remote(passphrase, recovery_key) as remote:
            return mem.cold_query(text=text, category=category, limit=limit, remote=remote)
    return mem.cold_query(text=text, category=category, limit=limit)


# -- devices ---------------------------------------------------------------------------------

@click.group("devices")
def devices_group() -> None:
    """Devices serving this agent: list them, name them, revoke a lost or stolen one."""


@devices_group.command("list")
@common_options
@click.pass_context
def devices_list(ctx: click.Context) -> None:
    """List registered devices (this one is marked with *)."""
    with open_memory(ctx) as mem:
        rows = mem.devices()
        me = mem.sync_status()["device_id"]

    def human() -> None:
        if not rows:
            click.echo("(no device has synced yet)")
        for d in rows:
            mark = "*" if d.device_id == me else " "
            state = (f"REVOKED {format_time(d.revoked_at)}" if d.revoked_at
                     else f"last seen {format_time(d.last_seen)}")
            click.echo(f"{mark} {d.device_id}  {d.name or '-'}  {state}")
    emit(ctx, rows, human)


@devices_group.command("revoke")
@click.argument("device_id")
@click.option("--this-device", is_flag=True,
              help="Allow revoking the device you are on (its memory is wiped at its next sync).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask (for scripts).")
@common_options
@click.pass_context
def devices_revoke(ctx: click.Context, device_id: str, this_device: bool, yes: bool) -> None:
    """Revoke a device: it wipes its local memory at its next sync and can push nothing.

    Asks first on a terminal; scripts pass --yes. The device you are on is refused unless
    --this-device is given too."""
    from evoclaw_memory.errors import NotFoundError, ValidationError
    with open_memory(ctx) as mem:
        me = mem.sync_status()["device_id"]
        if device_id == me and not this_device:
            raise ValidationError(f"{device_id} is this device: revoking it wipes this memory at "
                                  "the next sync; add --this-device if that is what you want")
        if not yes:
            if not _interactive():
                raise click.UsageError("revoking a device cannot be undone: add --yes to "
                                       "revoke without a question (scripts), or run it on a "
                                       "terminal")     # "needs --yes" is usage (2) everywhere
            names = {d.device_id: d.name for d in mem.devices()}
            label = f"{device_id} ({names[device_id]})" if names.get(device_id) else device_id
            click.confirm(f"Revoke {label}? It wipes its memory at its next sync and can push "
                          "nothing; this cannot be undone", abort=True, err=True)
        if not mem.revoke_device(device_id):
            raise NotFoundError(f"no active device {device_id!r} for agent {mem.agent_id}")
    emit(ctx, {"revoked": device_id}, lambda: click.echo(f"revoked {device_id}"))


@devices_group.command("rename")
@click.argument("device_id")
@click.argument("name")
@common_options
@click.pass_context
def devices_rename(ctx: click.Context, device_id: str, name: str) -> None:
    """Give DEVICE_ID a NAME people recognise (`devices list` shows it)."""
    from evoclaw_memory.errors import NotFoundError
    with open_memory(ctx) as mem:
        if not mem.rename_device(device_id, name):
            raise NotFoundError(f"no device {device_id!r} for agent {mem.agent_id}")
    emit(ctx, {"device_id": device_id, "name": name.strip()},
         lambda: click.echo(f"{device_id} is now {name.strip()!r}"))


# -- keys ------------------------------------------------------------------------------------

@click.group("key")
def key_group() -> None:
    """End-to-end encryption keys: init, change-passphrase, rotate."""


def _new_passphrase() -> str:
    value = os.environ.get("EVOCLAW_NEW_PASSPHRASE") or os.environ.get("EVOCLAW_PASSPHRASE")
    if value:
        return value
    if not _interactive():
        from evoclaw_memory.errors import CryptoError
        raise CryptoError("no passphrase: set EVOCLAW_PASSPHRASE (or run on a terminal to be "
                          "asked); never pass it as a flag")
    return _ask_secret("New passphrase", confirm=True)


@key_group.command("init")
@click.option("--device-name", metavar="NAME", default=None,
              help="A name for this device in `devices list` [default: the hostname and the "
                   "first 4 hex characters of the device id, e.g. raspberrypi-3f9a].")
@common_options
@click.pass_context
def key_init(ctx: click.Context, device_name: Optional[str]) -> None:
    """Set up end-to-end encryption; prints the recovery key ONCE (write it down)."""
    from evoclaw_memory import validate
    if device_name is not None:
        device_name = validate.device_name(device_name)   # refused before any key is made
    with open_memory(ctx) as mem:
        if device_name is not None:
            # Named first, so a device that registers during the re-seal does so by name.
            mem.rename_device(mem.sync_status()["device_id"], device_name)
        with progress_bar(ctx, "re-sealing") as bar:
            recovery = mem.init_encryption(_new_passphrase(), progress=bar.update,
                                           shown_on_return=False)
        reseal = mem.sync_status()["reseal"]

    def human() -> None:
        if recovery:
            click.echo("End-to-end encryption is on. Your recovery key (shown only now; keep it "
                       f"offline):\n\n    {recovery}\n\nWith it, or your passphrase, a new "
                       "device can restore this memory.")
        else:
            click.echo("End-to-end encryption was already set up for this agent; this device "
                       "now holds its keys (the recovery key was shown where it was set up).")
        click.echo("cloud archive" + _reseal_note(reseal).replace(" · ", " ", 1))
    emit(ctx, {"recovery_key": recovery, "reseal": reseal}, human)
    sys.stdout.flush()
    with open_memory(ctx) as mem:
        # Only now, printed: until here a rerun of `key init` shows the same key again.
        mem.recovery_key_shown()


@key_group.command("change-passphrase")
@common_options
@click.pass_context
def key_change_passphrase(ctx: click.Context) -> None:
    """Rewrap the keys under a new passphrase (nothing is re-encrypted)."""
    current = os.environ.get("EVOCLAW_PASSPHRASE") or (
        _ask_secret("Current passphrase") if _interactive() else None)
    new = os.environ.get("EVOCLAW_NEW_PASSPHRASE") or (
        _ask_secret("New passphrase", confirm=True) if _interactive() else None)
    if not current or not new:
        from evoclaw_memory.errors import CryptoError
        raise CryptoError("set EVOCLAW_PASSPHRASE (current) and EVOCLAW_NEW_PASSPHRASE, or run "
                          "on a terminal to be asked")
    with open_memory(ctx) as mem:
        mem.change_passphrase(current, new)
    emit(ctx, {"changed": True}, lambda: click.echo("passphrase changed"))


@key_group.command("rotate")
@common_options
@click.pass_context
def key_rotate(ctx: click.Context) -> None:
    """Start using a new data key; everything is re-encrypted in the background by sync."""
    with open_memory(ctx) as mem:
        with progress_bar(ctx, "re-sealing") as bar:
            key_id = _with_secret(lambda p, r: mem.rotate_key(p, r, progress=bar.update),
                                  recovery=False)
        depth = mem.store.outbox_depth()
        reseal = mem.sync_status()["reseal"]
    emit(ctx, {"key_id": key_id, "outbox_depth": depth, "reseal": reseal}, lambda: click.echo(
        f"new data key {key_id}; local changes queued ({depth} outbox entries): run sync; "
        "cloud archive" + _reseal_note(reseal).replace(" · ", " ", 1)))


COMMANDS = (sync, sync_critical, restore, cold, devices_group, key_group)
