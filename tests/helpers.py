"""Small test helpers shared by several test files."""


class FakeClock:
    """A controllable clock for tests of decay and pruning (real time, moved by hand)."""

    def __init__(self, start: float = 1_764_460_800.0):  # 2025-11-30 00:00 UTC
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, days: float) -> None:
        self.now += days * 86_400
