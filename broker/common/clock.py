"""The broker's clock: a ``Clock`` gives the wall-clock time in milliseconds since the epoch.

The layers that keep time (the log: roll, retention, flush.ms, cleaning; the group coordinator:
session and rebalance timeouts) are handed one instead of reading ``time.time()`` themselves, so
tests drive them with a clock they move by hand rather than by waiting.
"""

import time
from collections.abc import Callable

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    """The real clock: milliseconds since the epoch."""
    return int(time.time() * 1000)
