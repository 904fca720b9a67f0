"""A randomized multi-device world for the merge tests (issue 26): seeded schedules of changes
on three devices of one agent sharing a cloud, devices whose clocks are off, random sync
orders; then every device syncs twice and a new device restores, and the properties the
README promises are checked. A failure prints the seed and the schedule, replayable with
`World(seed=...).run(...)`.

What is checked ("happened before": the device making a change had seen the other one,
through its own earlier changes or a sync that brought it):
1. nothing acknowledged is lost: every fact stored and synced, never forgotten, is on every
   device and in the restore;
2. causality: for each part of a fact (its content, its flags, its supersession) and each
   field of hot memory, when one change happened after every other change of that part, it
   is the value everywhere, whatever the clocks said;
3. sticky: a fact forgotten anywhere is gone everywhere; one superseded stays superseded; a
   task completed anywhere is pending nowhere;
4. convergence: all devices and the restore hold the same live facts with the same values,
   and the same hot fields.
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from evoclaw_memory import Memory
from evoclaw_memory.errors import ValidationError

DEVICES = ("A", "B", "C")
SKEWS = (0.0, 300.0, -300.0, 86_400.0, -86_400.0, 365 * 86_400.0)


class SkewedClock:
    """A device's clock: the real time plus the device's error. Real, because the cloud's
    clock (which every device learns its offset from) is the host's real one."""

    def __init__(self, skew: float):
        self.skew = skew

    def __call__(self) -> float:
        return time.time() + self.skew


@dataclass
class Change:
    cid: int
    device: str
    key: str                    # "content:<fact>", "flags:<fact>", "sup:<fact>", "hot:<field>"
    value: Any
    seen: frozenset[int]        # the changes its device knew when it made this one


@dataclass
class Device:
    name: str
    skew: float
    mem: Optional[Memory] = None
    knows: set[int] = field(default_factory=set)


class World:
    """Three devices of agent "sam" on one cloud (a file, or a sqld URL + token)."""

    def __init__(self, root: Path, seed: int, cloud_url: str, cloud_token: Optional[str] = None,
                 skews: Optional[dict[str, float]] = None):
        self.root, self.seed, self.rng = root, seed, random.Random(seed)
        self.cloud_url, self.cloud_token = cloud_url, cloud_token
        self.cids = itertools.count(1)
        self.changes: list[Change] = []
        self.cloud_knows: set[int] = set()
        self.log: list[str] = []
        self.facts: list[str] = []            # ids of facts stored (by any device)
        self.forgotten: set[str] = set()
        self.synced_facts: set[str] = set()   # stored and pushed by their device
        self.tasks: dict[str, str] = {}       # task id -> text
        self.completed: set[str] = set()
        self.texts = itertools.count(1)
        skews = skews or {d: self.rng.choice(SKEWS) if d != "A" else 0.0 for d in DEVICES}
        self.devices = {d: Device(d, skews[d]) for d in DEVICES}
        for dev in self.devices.values():
            dev.mem = self._open(dev.name, SkewedClock(dev.skew))
        self.log.append(f"seed={seed} skews={skews}")

    def _open(self, name: str, clock) -> Memory:
        return Memory.open("sam", home=self.root / name, cloud_url=self.cloud_url,
                           cloud_token=self.cloud_token, encryption="off", clock=clock)

    def close(self) -> None:
        for dev in self.devices.values():
            if dev.mem is not None:
                dev.mem.close()

    # -- changes ---------------------------------------------------------------------------

    def _record(self, dev: Device, key: str, value: Any) -> None:
        change = Change(next(self.cids), dev.name, key, value, frozenset(dev.knows))
        self.changes.append(change)
        dev.knows.add(change.cid)

    def _live_here(self, dev: Device) -> list[str]:
        assert dev.mem is not None
        return [f.id for f in dev.mem.facts(include_superseded=True)]

    def step(self) -> None:
        """One random action on a random device (or a sync), the world's time moving on."""
        dev = self.devices[self.rng.choice(DEVICES)]
        mem = dev.mem
        assert mem is not None
        here = self._live_here(dev)
        op = self.rng.choices(["store", "edit", "pin", "unpin", "private", "supersede", "forget",
                               "name", "task", "done", "sync"],
                              weights=[4, 4, 2, 1, 1, 1, 1, 1, 1, 1, 6])[0]
        if op != "store" and op not in ("name", "task", "done", "sync") and not here:
            op = "store"
        target = self.rng.choice(here) if here else None
        if op == "store":
            text = f"Fact {next(self.texts)} noted by device {dev.name}"
            fact = mem.remember(text, category="general")
            self.facts.append(fact.id)
            self._record(dev, f"content:{fact.id}", text)
            self._record(dev, f"flags:{fact.id}", (False, False))
            self.log.append(f"{dev.name} store {fact.id} {text!r}")
        elif op == "edit":
            text = f"Fact {target} edited to version {next(self.texts)} on {dev.name}"
            mem.edit(target, text=text)
            self._record(dev, f"content:{target}", text)
            self.log.append(f"{dev.name} edit {target} {text!r}")
        elif op in ("pin", "unpin", "private"):
            fact = mem.get(target)
            try:
                if op == "pin":
                    mem.pin(target)
                    flags = (True, fact.private)
                elif op == "unpin":
                    mem.unpin(target)
                    flags = (False, fact.private)
                else:
                    mem.mark_private(target, not fact.private)
                    flags = (fact.pinned, not fact.private)
            except ValidationError as exc:    # a superseded fact is not pinned: nothing changed
                self.log.append(f"{dev.name} {op} {target} refused: {exc}")
                return
            self._record(dev, f"flags:{target}", flags)
            self.log.append(f"{dev.name} {op} {target}")
        elif op == "supersede":
            others = [f for f in here if f != target]
            if not others:
                return
            newer = self.rng.choice(others)
            try:
                mem.supersede(target, newer)
            except Exception as exc:          # a cycle: refused, nothing changed
                self.log.append(f"{dev.name} supersede {target} {newer} refused: {exc}")
                return
            self._record(dev, f"sup:{target}", newer)
            self.log.append(f"{dev.name} supersede {target} by {newer}")
        elif op == "forget":
            mem.forget(target)
            self.forgotten.add(target)
            self._record(dev, f"forget:{target}", True)
            self.log.append(f"{dev.name} forget {target}")
        elif op == "name":
            name = f"Claw-{next(self.texts)}"
            mem.update_hot("identity", {"agent_name": name})
            self._record(dev, "hot:agent_name", name)
            self.log.append(f"{dev.name} name {name}")
        elif op == "task":
            text = f"task {next(self.texts)} from {dev.name}"
            state = mem.update_hot("task", {"text": text})
            task = next(t for t in state.active_context.tasks if t.text == text)
            self.tasks[task.id] = text
            self.log.append(f"{dev.name} task {task.id}")
        elif op == "done":
            pending = [t.id for t in mem.hot.active_context.tasks]
            if not pending:
                return
            task_id = self.rng.choice(pending)
            mem.update_hot("complete_task", task_id)
            self.completed.add(task_id)
            self.log.append(f"{dev.name} done {task_id}")
        else:
            self.sync(dev)

    def sync(self, dev: Device) -> None:
        assert dev.mem is not None
        dev.mem.sync()
        self.cloud_knows |= dev.knows
        dev.knows |= self.cloud_knows
        self.synced_facts |= {f for f in self.facts if f in self._live_here(dev)}
        self.log.append(f"{dev.name} sync")

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()

    # -- the end: everyone syncs, a new device restores, the properties --------------------

    def settle(self) -> list[str]:
        """Sync every device twice, restore a fourth, and return the properties broken."""
        for _ in range(2):
            for name in DEVICES:
                self.sync(self.devices[name])
        restored = self._open("D", SkewedClock(0.0))
        try:
            restored.restore(full=True)
            views = {name: self._view(dev.mem) for name, dev in self.devices.items()}
            views["D(restore)"] = self._view(restored)
        finally:
            restored.close()
        return self._check(views)

    @staticmethod
    def _view(mem) -> dict[str, Any]:
        facts = {f.id: (f.text, f.pinned, f.private, f.superseded_by)
                 for f in mem.facts(include_superseded=True)}
        hot = mem.hot
        return {"facts": facts, "agent_name": hot.identity.agent_name,
                "tasks": sorted(t.id for t in hot.active_context.tasks)}

    def _winner(self, key: str) -> Optional[Change]:
        """The change of `key` that happened after every other one, if there is one."""
        mine = [c for c in self.changes if c.key == key]
        last = [c for c in mine if not any(c.cid in o.seen for o in mine if o is not c)]
        return last[0] if len(last) == 1 else None

    def _check(self, views: dict[str, dict]) -> list[str]:
        broken: list[str] = []
        first = next(iter(views.values()))
        for name, view in views.items():
            if view != first:
                diff = {k: (first["facts"].get(k), view["facts"].get(k))
                        for k in set(first["facts"]) | set(view["facts"])
                        if first["facts"].get(k) != view["facts"].get(k)}
                broken.append(f"convergence: {name} differs from {next(iter(views))}: "
                              f"facts {diff}, name {first['agent_name']!r}/{view['agent_name']!r}"
                              f", tasks {first['tasks']}/{view['tasks']}")
        for name, view in views.items():
            facts = view["facts"]
            for fid in self.synced_facts - self.forgotten:
                if fid not in facts:
                    broken.append(f"lost: {fid} missing on {name}")
            for fid in self.forgotten:
                if fid in facts:
                    broken.append(f"sticky forget: {fid} back on {name}")
            for fid in set(self.facts) - self.forgotten:
                if fid not in facts:
                    continue
                text, pinned, private, sup = facts[fid]
                content = self._winner(f"content:{fid}")
                if content is not None and text != content.value:
                    broken.append(f"causality content {fid} on {name}: {text!r}, last change "
                                  f"{content.value!r} ({content.device})")
                flags = self._winner(f"flags:{fid}")
                if flags is not None and (pinned, private) != flags.value:
                    broken.append(f"causality flags {fid} on {name}: {(pinned, private)}, last "
                                  f"change {flags.value} ({flags.device})")
                sups = [c for c in self.changes if c.key == f"sup:{fid}"]
                if sups and sup is None:
                    broken.append(f"sticky supersession {fid} undone on {name}")
            name_change = self._winner("hot:agent_name")
            if name_change is not None and view["agent_name"] != name_change.value:
                broken.append(f"causality agent_name on {name}: {view['agent_name']!r}, last "
                              f"change {name_change.value!r} ({name_change.device})")
            for task_id in self.completed:
                if task_id in view["tasks"]:
                    broken.append(f"sticky task: {task_id} pending again on {name}")
        return broken

    def schedule(self) -> str:
        return "\n".join(self.log)


def run_schedule(root: Path, seed: int, cloud_url: str,
                 cloud_token: Optional[str] = None) -> tuple[list[str], str]:
    """One seeded schedule of 20-40 steps, settled: (the properties broken, the schedule).
    The same seed replays the same schedule (on the same kind of cloud)."""
    world = World(root, seed, cloud_url, cloud_token)
    try:
        world.run(world.rng.randint(20, 40))
        broken = world.settle()
    finally:
        world.close()
    return broken, world.schedule()


def failure_report(seed: int, broken: list[str], schedule: str, cloud: str) -> str:
    return (f"{len(broken)} broken in seed {seed} ({cloud} cloud):\n  " + "\n  ".join(broken[:8])
            + f"\nreplay: run_schedule(tmp, {seed}, <{cloud} cloud>) from tests/cloud/"
            f"convergence.py; the schedule:\n{schedule}")
