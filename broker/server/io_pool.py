"""Disk work off the event loop: a small pool of threads, as Kafka's request handler threads (``num.io.threads``).

Connections live on the event loop; whatever touches the log runs here: appends (with their record
checks, decompression and ``flush.messages`` fsyncs), reads and offset lookups, topic creation and
deletion. Writes to one partition run one at a time, in the order they were submitted (one writer
per partition, without holding a thread while waiting for its turn); reads run in parallel with
each other and with the writer. A connection awaits each request before reading the next, so its
requests keep their order.
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor


class _Turn:
    """The queue of writers of one partition: a lock and how many hold or wait for it."""

    __slots__ = ("lock", "users")

    def __init__(self):
        self.lock = asyncio.Lock()
        self.users = 0


class IoPool:
    def __init__(self, threads: int):
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="io")
        self._turns: dict[object, _Turn] = {}

    async def run(self, function, *args):
        """``function(*args)`` on a pool thread; its result or its exception."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    async def write(self, key, function, *args):
        """``function(*args)`` on a pool thread, after the earlier writes submitted for ``key``."""
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                return await self.run(function, *args)
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[key]

    def shutdown(self) -> None:
        """Wait for the work already submitted, then stop the threads."""
        self._executor.shutdown(wait=True)
