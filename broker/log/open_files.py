"""A process-wide bound on the descriptors the logs keep open: the least recently used are let go.

Segments open their ``.log`` file and map their indexes when they are first used, and report
every use here. When more than ``limit`` handles are open, the least recently used holders are
told to ``release()`` theirs: a holder only drops its reference, so the descriptor (or mapping)
closes when the last reader still using it finishes, and a release never pulls a file from
under a read or write in progress. The next use opens it again.
"""

import collections
import resource
import threading

# Half the descriptor limit for the logs, the other half for connections and everything else;
# a holder keeps up to two descriptors (an index: its file and its mapping).
_SHARE_OF_LIMIT = 4


def descriptor_limit() -> int:
    """The process's soft limit on open descriptors."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class OpenFiles:
    """The holders of open log handles, least recently used first."""

    def __init__(self, limit: int):
        self.limit = limit
        self._holders = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._holders)

    def used(self, holder) -> None:
        """``holder`` has a handle open and just used it; release the oldest beyond the limit."""
        with self._lock:
            self._holders[holder] = None
            self._holders.move_to_end(holder)
            excess = len(self._holders) - self.limit
            idle = [self._holders.popitem(last=False)[0] for _ in range(excess)] if excess > 0 else []
        for stale in idle:
            stale.release()

    def forget(self, holder) -> None:
        """``holder`` closed its handle itself."""
        with self._lock:
            self._holders.pop(holder, None)


def handle_limit() -> int:
    """How many log handles to keep open: a share of the descriptor limit as it is now (the broker
    raises its soft limit at start, so the log manager asks again when it opens)."""
    return max(16, descriptor_limit() // _SHARE_OF_LIMIT)


OPEN_FILES = OpenFiles(handle_limit())
