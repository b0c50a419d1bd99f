"""A process-wide bound on the descriptors the logs keep open: the least recently used are let go.

Segments open their ``.log`` file and map their indexes when they are first used, and report
every use here. When more than ``limit`` handles are open, the least recently used holders (a
tenth of the limit at a time) are told to ``release()`` theirs: a holder drops its reference (a
``.log`` written since its last fsync is fsynced first: ``write_back``), so the descriptor (or mapping)
closes when the last reader still using it finishes, and a release never pulls a file from
under a read or write in progress. The next use opens it again.
"""

import itertools
import resource
import threading
from typing import Protocol

# Half the descriptor limit for the logs, the other half for connections and everything else;
# a holder keeps up to two descriptors (an index: its file and its mapping).
_SHARE_OF_LIMIT = 4


def descriptor_limit() -> int:
    """The process's soft limit on open descriptors."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Holder(Protocol):
    """What keeps a log handle open (a segment's ``.log``, an index's mapping)."""

    def release(self) -> None: ...


class OpenFiles:
    """The holders of open log handles, each with the time (a counter) it was last used."""

    def __init__(self, limit: int):
        self.limit = limit
        self._last_used: dict[Holder, int] = {}
        self._clock = itertools.count()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._last_used)

    def used(self, holder: Holder) -> None:
        """``holder`` has a handle open and just used it; beyond the limit, release the least
        recently used tenth (so a use costs a dictionary update, and sorting is rare)."""
        if holder in self._last_used:
            self._last_used[holder] = next(self._clock)
            return
        with self._lock:
            self._last_used[holder] = next(self._clock)
            if len(self._last_used) <= self.limit:
                return
            by_age = sorted(self._last_used.items(), key=lambda item: item[1])
            idle = [stale for stale, _ in by_age[: len(by_age) - self.limit + self.limit // 10]]
            for stale in idle:
                del self._last_used[stale]
        for stale in idle:
            stale.release()

    def forget(self, holder: Holder) -> None:
        """``holder`` closed its handle itself."""
        with self._lock:
            self._last_used.pop(holder, None)


def handle_limit() -> int:
    """How many log handles to keep open: a share of the descriptor limit as it is now (the broker
    raises its soft limit at start, so the log manager asks again when it opens)."""
    return max(16, descriptor_limit() // _SHARE_OF_LIMIT)


OPEN_FILES = OpenFiles(handle_limit())
