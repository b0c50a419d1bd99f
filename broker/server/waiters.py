"""Long-polling fetches: waiting until one of a set of partitions gets new data, or a timeout.

A fetch registers before it reads (``watching``) and waits after: its read runs on an I/O thread,
and an append that lands between the read and the wait must still wake it.
"""

import asyncio
import collections
import contextlib


class DataWaiters:
    """Fetch requests park here; the produce path wakes those waiting on a partition it appended to."""

    def __init__(self):
        self._waiting = collections.defaultdict(set)

    @contextlib.contextmanager
    def watching(self, partitions):
        """Register for ``partitions`` (``(topic, partition)`` pairs) now; yields ``wait(timeout)``,
        which returns when any of them was notified since the registration, or after ``timeout``."""
        future = asyncio.get_running_loop().create_future()
        for key in partitions:
            self._waiting[key].add(future)

        async def wait(timeout: float) -> None:
            try:
                await asyncio.wait_for(future, timeout)
            except asyncio.TimeoutError:
                pass

        try:
            yield wait
        finally:
            for key in partitions:
                waiting = self._waiting.get(key)
                if waiting is not None:
                    waiting.discard(future)
                    if not waiting:
                        del self._waiting[key]

    def notify(self, key) -> None:
        for future in self._waiting.pop(key, ()):
            if not future.done():
                future.set_result(None)

    def notify_all(self) -> None:
        for key in list(self._waiting):
            self.notify(key)
