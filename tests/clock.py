"""A clock a test moves by hand, for the code that takes a ``broker.common.clock.Clock``."""

START_MS = 1_700_000_000_000


class FakeClock:
    """Milliseconds since the epoch, standing still until ``advance`` (or an assignment to ``now``)."""

    def __init__(self, now: int = START_MS):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms
