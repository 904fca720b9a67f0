"""The stamps a change of a fact's part carries (issue 26): a hybrid logical clock with the
device in its last digits.

A stamp is a time in seconds with millisecond steps, whose microseconds name the device that
made it (0-999, from its id). It is the memory's time (the device's clock corrected by the
cloud's, store/cloud_time.py) unless the version being replaced carries a later stamp (another
device's, maybe from a clock running ahead): then it is that stamp's millisecond plus one. So

- a change made after seeing a version is stamped later than it, whatever the clocks say
  (causality wins), and
- two devices never give two different versions of one part the same stamp: an equal stamp
  means the same version (unless two devices' ids map to the same microsecond, 1 in 1000, and
  they also change one part within the same millisecond). The cloud, which cannot read sealed
  values, can then take "at least as new in every part" as "newer or the same", and every
  device and the cloud resolve two concurrent changes alike: the later stamp.

Stamps are compared in whole microseconds (`micros`) wherever they pass through JSON: a REAL
read back from text may be off in its last bit, never by half a microsecond."""

from __future__ import annotations

STEP_US = 1000          # a change moves a part's clock on by at least one millisecond


def device_tag(device_id: str) -> int:
    """The microsecond (0-999) a device's stamps end in."""
    import hashlib      # here: it loads OpenSSL (~2 ms), which a CLI `hot` never needs
    return int.from_bytes(hashlib.sha256(device_id.encode()).digest()[:4], "big") % STEP_US


def micros(stamp: float) -> int:
    """A stamp in whole microseconds (exact for any stamp made here, to year 2200)."""
    return round(stamp * 1_000_000)


def next_stamp(now: float, previous: float, tag: int) -> float:
    """The stamp of a change made at `now` to a part whose current version is `previous`."""
    base = max(int(now * 1_000_000), micros(previous) + STEP_US) // STEP_US
    return (base * STEP_US + tag) / 1_000_000
