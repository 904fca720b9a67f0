"""The time a memory goes by: its device's clock corrected by the cloud's (issue 26).

Every device of an agent learns, at each sync and each restore (in the same request, no
extra round trip), how far the cloud's clock is from its own (OutboxMixin.note_clock_offset),
and from then on reads the time as the cloud would: a fact's creation, its changes, decay,
the consolidation schedule and the restore window all use this time. So a phone whose clock
runs a day fast, or that came back from a year in a drawer set to 1970, orders its changes
as the cloud's clock would have and ages its facts as every other device does. Before any
sync (or without a cloud) the offset is 0: the device's own clock.

The ordering of changes to one part of a fact on top of this is a hybrid logical clock in
effect: a change is stamped max(this time, the stamp of the version it replaces + 1 ms)
(OutboxMixin.enqueue_change, tiers.hot), so a change made after seeing another device's
version wins over it even when the two clocks disagree by less than their error."""

from __future__ import annotations

from typing import Callable, Protocol


class _Offsets(Protocol):
    def clock_offset(self) -> float: ...


class CloudTime:
    """A clock (a callable returning seconds since the epoch): `device()` plus the offset the
    store last learnt from the cloud. `device` stays readable on its own: measuring the
    offset needs the uncorrected clock."""

    def __init__(self, device: Callable[[], float], store: _Offsets):
        self.device, self.store = device, store

    def __call__(self) -> float:
        return float(self.device()) + self.store.clock_offset()
