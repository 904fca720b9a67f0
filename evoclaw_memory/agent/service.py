"""The background service for an always-on device (`evoclaw-memory serve`).

One loop, one agent, one line of log per action:
- sync on a heartbeat (default 60 s): push the outbox, pull other devices' changes;
- offline, retry with a growing delay (5 s, 10 s, ... up to the heartbeat), so the outbox
  drains soon after the network returns;
- consolidate on schedule: quick every 4 h, daily after local midnight, monthly after the
  1st of the month (a bigger mode includes the smaller ones; a run missed while the device
  was off happens at the next start);
- SIGTERM / SIGINT stop it between actions: what is running finishes (each step is one local
  transaction), queued work stays in the outbox (a last push is tried when online), exit 0.
A revoked device stops at once (its memory has been wiped) with a non-zero status, and so do
errors no retry can fix, after one clear log line (see EXIT_*; docs/connecting-an-agent.md,
"Background service").
The service syncs through the memory's held remote: one HTTP client and connection for its
whole life, the schema check remembered, so a heartbeat is one request. While it runs, the
agent's per-turn CLI commands may run in it (a `relay`, cli.relay_server), so that each costs
the caller no start-up beyond the interpreter's.
"""

from __future__ import annotations

import datetime as dt
import logging
import signal
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

from evoclaw_memory.errors import DeviceRevoked

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory

HEARTBEAT = 60.0
QUICK_EVERY = 4 * 3600.0
RETRY_MIN = 5.0
MIN_WAIT = 0.05
log = logging.getLogger("evoclaw_memory.agent.service")

# Exit statuses of `serve` for what no retry can fix (click uses 2 for usage errors; 1 is any
# other error): the unit's Restart=on-failure restarts it and the journal shows the line.
EXIT_REVOKED = DeviceRevoked.exit_code   # 5: this device was revoked; its memory is wiped
EXIT_AUTH = 77                           # EX_NOPERM: the cloud refused the token (401/403)
EXIT_KEYS = 78                           # EX_CONFIG: the keys need a passphrase or key init
_FATAL = {"AuthError": EXIT_AUTH, "CryptoError": EXIT_KEYS}


class Relay(Protocol):
    """What runs the CLI's per-turn commands in this process while it lives (cli.relay_server)."""
    path: str
    served: int

    def start(self) -> Optional[str]: ...     # None when listening, else why it is off

    def close(self) -> None: ...              # stop, letting running commands finish

    def summary(self) -> str: ...             # "N CLI command(s) relayed[, M declined (...)]"
    #                                           or "" when no command came


class Fatal(Exception):
    """A sync failure that the next heartbeat would only repeat: stop with `status`."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def local_date(ts: float) -> dt.date:
    return dt.datetime.fromtimestamp(ts).date()


def next_local_midnight(ts: float) -> float:
    """The epoch time of the next local midnight after `ts`."""
    tomorrow = local_date(ts) + dt.timedelta(days=1)
    return dt.datetime.combine(tomorrow, dt.time(0)).timestamp()


def due_mode(now: float, last: dict[str, Optional[float]], started: float,
             quick_every: float = QUICK_EVERY) -> Optional[str]:
    """The consolidation to run now, if any: the biggest one due (pure).

    `last[mode]` is when that mode or a bigger one last ran (None: never). Daily and monthly
    that never ran count from `started`, so a first start does not run them at once. A last
    run later than now (the clock was ahead then and has been set right since) is due now:
    waiting for the real date to catch up would skip a year of consolidations."""
    monthly = last.get("monthly") or started
    month_now = (local_date(now).year, local_date(now).month)
    month_last = (local_date(monthly).year, local_date(monthly).month)
    if month_now != month_last:
        return "monthly"
    daily = last.get("daily") or started
    if local_date(now) != local_date(daily):
        return "daily"
    quick = last.get("quick")
    if quick is None or now - quick >= quick_every or quick > now + quick_every:
        return "quick"
    return None


class Service:
    """Keeps one agent's memory synced and consolidated until told to stop."""

    def __init__(self, mem: "Memory", *, heartbeat: float = HEARTBEAT,
                 quick_every: float = QUICK_EVERY, consolidate: bool = True, sync: bool = True,
                 retry_min: float = RETRY_MIN, clock: Optional[Callable[[], float]] = None,
                 logger: logging.Logger = log, relay: Optional[Relay] = None):
        if heartbeat <= 0 or quick_every <= 0 or retry_min <= 0:
            from evoclaw_memory.errors import ValidationError
            raise ValidationError("heartbeat, quick interval and retry delay must be positive")
        self.mem = mem
        self.heartbeat = float(heartbeat)
        self.quick_every = float(quick_every)
        self.consolidate_on = consolidate
        self.sync_on = sync
        self.retry_min = min(float(retry_min), self.heartbeat)
        # The memory's own time by default (corrected by the cloud's, store/cloud_time.py):
        # the schedule compares it with the stamps consolidations leave.
        self.clock = clock if clock is not None else mem.clock
        self.log = logger
        self.relay = relay
        self.stop_event = threading.Event()
        self.stop_reason = ""
        self.started = self.clock()
        self.next_sync = self.started
        self.backoff: Optional[float] = None
        self.offline_attempts = 0
        self.failed: dict[str, float] = {}     # mode -> when it last failed (not retried at once)
        self.actions: list[str] = []           # what each round did, for tests and --once

    # -- one round ---------------------------------------------------------------------------

    def last_runs(self) -> dict[str, Optional[float]]:
        from evoclaw_memory.lifecycle.conversation import last_consolidation
        runs = {}
        for mode in ("quick", "daily", "monthly"):
            # A failed mode waits for its next slot; the smaller modes still run on theirs.
            stamps = [s for s in (last_consolidation(self.mem, mode), self.failed.get(mode))
                      if s is not None]
            runs[mode] = max(stamps) if stamps else None
        return runs

    def tick(self) -> None:
        """Do what is due now: a consolidation, then a sync."""
        now = self.clock()
        if self.consolidate_on:
            mode = due_mode(now, self.last_runs(), self.started, self.quick_every)
            if mode is not None:
                self.consolidate(mode)
        if self.sync_on and self.clock() >= self.next_sync:
            self.sync()

    def consolidate(self, mode: str) -> None:
        started = time.perf_counter()
        try:
            report = self.mem.consolidate(mode)
        except DeviceRevoked:
            raise
        except Exception as exc:    # noqa: BLE001 - the service logs and goes on
            self.failed[mode] = self.clock()
            self._say(f"consolidate {mode}: failed: {_one_line(exc)}", logging.ERROR)
            return
        counts = ", ".join(f"{k} {v}" for k, v in report.items()
                           if isinstance(v, int) and not isinstance(v, bool))
        self._say(f"consolidate {mode}: {counts or 'done'} "
                  f"({time.perf_counter() - started:.2f} s)")

    def sync(self) -> bool:
        """Push and pull once; schedules the next try (heartbeat, or backoff when offline)."""
        from evoclaw_memory.lifecycle.conversation import push
        result = push(self.mem)                 # DeviceRevoked propagates
        now = self.clock()
        if result["status"] == "pushed":
            report = result["report"]
            back = f"network back after {self.offline_attempts} failed attempt(s); " \
                if self.offline_attempts else ""
            self._say(f"sync: {back}pushed {report.pushed_facts} fact(s)"
                      f"{' + critical state' if report.state_pushed else ''}, pulled "
                      f"{report.pulled_facts}{', merged' if report.merged else ''}; outbox "
                      f"{report.outbox_depth} ({report.seconds:.2f} s)")
            self.backoff = None
            self.offline_attempts = 0
            self.next_sync = now + self.heartbeat
            return True
        if result["status"] == "failed" and result.get("error") in _FATAL:
            raise Fatal(f"sync: {_one_line(result['detail'])}; {result['outbox_depth']} "
                        "change(s) stay queued", _FATAL[result["error"]])
        self.offline_attempts += 1
        self.backoff = min(self.heartbeat, self.backoff * 2 if self.backoff else self.retry_min)
        self.next_sync = now + self.backoff
        what = "offline" if result["status"] == "queued" else "failed"
        self._say(f"sync: {what}: {_one_line(result['detail'])}; {result['outbox_depth']} "
                  f"change(s) queued; retry in {self.backoff:g} s",
                  logging.WARNING if what == "offline" else logging.ERROR)
        return False

    # -- the loop ------------------------------------------------------------------------------

    def next_wake(self) -> float:
        """Seconds until something may be due (bounded by the heartbeat)."""
        now = self.clock()
        times = [now + self.heartbeat]
        if self.sync_on:
            times.append(self.next_sync)
        if self.consolidate_on:
            quick = self.last_runs()["quick"]
            times.append(now if quick is None else quick + self.quick_every)
            times.append(next_local_midnight(now) + 1)
        return max(MIN_WAIT, min(times) - now)

    def run(self, once: bool = False) -> int:
        """Loop until stop() (or one round with `once`); returns the exit status."""
        from evoclaw_memory.lifecycle.conversation import last_consolidation
        mem = self.mem
        relay = self._start_relay(once)
        self._say(f"started: agent {mem.agent_id}, cloud {_cloud_label(mem)}, heartbeat "
                  f"{self.heartbeat:g} s, quick consolidation every {self.quick_every:g} s"
                  f"{'' if self.consolidate_on else ' (consolidation off)'}"
                  f"{'' if self.sync_on else ' (sync off)'}; outbox "
                  f"{mem.store.outbox_depth()}; last quick "
                  f"{_ago(last_consolidation(mem, 'quick'), self.clock())}{relay}")
        try:
            while not self.stop_event.is_set():
                self.tick()
                if once:
                    break
                self.stop_event.wait(self.next_wake())
        except DeviceRevoked as exc:
            self._close_relay()
            self._say(f"stopped: {_one_line(exc)}", logging.CRITICAL)
            return EXIT_REVOKED
        except Fatal as exc:
            self._close_relay()
            self._say(f"stopped (exit {exc.status}): {exc}", logging.CRITICAL)
            return exc.status
        except BaseException:
            self._close_relay()
            raise
        # The relay's running commands finish first, so what they stored is in the last push.
        relayed = self._close_relay()
        depth = mem.store.outbox_depth()
        if self.sync_on and depth and self.backoff is None and not once:
            self._say(f"stopping: last push of {depth} queued change(s)")
            try:
                self.sync()
            except DeviceRevoked as exc:
                self._say(f"stopped: {_one_line(exc)}", logging.CRITICAL)
                return EXIT_REVOKED
            except Fatal as exc:
                self._say(f"stopped (exit {exc.status}): {exc}", logging.CRITICAL)
                return exc.status
            depth = mem.store.outbox_depth()
        self._say(f"stopped{f' on {self.stop_reason}' if self.stop_reason else ''}; "
                  f"{f'{relayed}; ' if relayed else ''}outbox "
                  f"{depth} change(s) queued" + (" for the next start" if depth else ""))
        return 0

    def _start_relay(self, once: bool) -> str:
        """Start the relay (not for one round); what the started line says of it."""
        if self.relay is None or once:
            self.relay = None
            return ""
        off = self.relay.start()
        if off is not None:
            self.relay = None
            return f"; CLI relay off ({off})"
        return f"; CLI relay on {self.relay.path}"

    def _close_relay(self) -> str:
        """Close the relay (if on); what it did ("" when it was off or nobody asked)."""
        relay, self.relay = self.relay, None
        if relay is None:
            return ""
        relay.close()
        return relay.summary()

    def stop(self, reason: str = "") -> None:
        self.stop_reason = self.stop_reason or reason
        self.stop_event.set()

    def install_signal_handlers(self) -> Callable[[], None]:
        """Stop cleanly on SIGTERM / SIGINT; returns a function restoring the old handlers."""
        previous: dict[int, Any] = {}

        def handler(signum: int, _frame: Any) -> None:
            self.stop(signal.Signals(signum).name)

        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, handler)

        def restore() -> None:
            for sig, old in previous.items():
                signal.signal(sig, old)
        return restore

    def _say(self, message: str, level: int = logging.INFO) -> None:
        self.actions.append(message)
        self.log.log(level, message)


def run_service(mem: "Memory", once: bool = False, **options: Any) -> int:
    """Run the service in the foreground with signal handling; returns the exit status."""
    service = Service(mem, **options)
    restore = service.install_signal_handlers()
    try:
        return service.run(once=once)
    finally:
        restore()


def configure_logging(agent_id: str, level: int = logging.INFO) -> None:
    """One line per action on stderr (journald adds its own timestamps; we keep ours too)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(
        f"%(asctime)s evoclaw-memory[{agent_id}] %(levelname)s %(message)s",
        "%Y-%m-%dT%H:%M:%S%z"))
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _ago(ts: Optional[float], now: float) -> str:
    if ts is None:
        return "never"
    seconds = max(0.0, now - ts)
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def _cloud_label(mem: "Memory") -> str:
    from urllib.parse import urlsplit
    url = mem.config.cloud_url
    if not url:
        return "embedded default file"
    if "://" in url and not url.startswith("file:"):
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return "file"
