"""Long-polling fetches: waiting until one of a set of partitions gets new data, or a timeout."""

import asyncio
import collections


class DataWaiters:
    """Fetch requests park here; the produce path wakes those waiting on a partition it appended to."""

    def __init__(self):
        self._waiting = collections.defaultdict(set)

    async def wait(self, partitions, timeout: float) -> None:
        """Return when any of ``partitions`` (``(topic, partition)`` pairs) is notified, or after ``timeout``."""
        future = asyncio.get_running_loop().create_future()
        for key in partitions:
            self._waiting[key].add(future)
        try:
            await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            pass
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
