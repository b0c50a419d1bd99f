"""A bound on the memory of requests being read or handled and of responses not yet taken, all
connections together (Kafka's ``queued.max.request.bytes`` memory pool, which counts requests only).

A connection reserves a frame's declared size before reading its body and gives it back once the
request is handled (the frame is dropped then); its response's bytes are then held (``hold``,
without waiting: they exist already) until its client has taken them. While the reservations add
up to the bound, connections wanting more stop reading (their clients' bytes wait in the kernel's
socket buffers) until memory comes back. A frame larger than what is free is admitted when
nothing else is reserved, so any frame up to ``socket.request.max.bytes`` gets through, and
frames stay under the bound plus one frame; responses held pass it only by what the answers to
the frames admitted outgrow them (and by answers to small requests), and no large frame is read
until they are taken. Frames and responses up to
``SMALL_FRAME_BYTES`` need no reservation: a connection buffers that much anyway, and metadata,
offsets and heartbeats must not queue behind large produce requests.
"""

import asyncio

SMALL_FRAME_BYTES = 64 * 1024  # asyncio's stream buffer: what every connection may hold regardless


class RequestMemory:
    def __init__(self, limit: int):
        """``limit`` in bytes; 0 or less means unbounded, as in Kafka."""
        self.limit = limit
        self.reserved = 0
        self._waiting: list[asyncio.Future] = []

    def _fits(self, size: int) -> bool:
        return self.limit <= 0 or self.reserved == 0 or self.reserved + size <= self.limit

    async def reserve(self, size: int) -> int:
        """Wait until ``size`` bytes may be read; return what to hand back to ``release``."""
        if size <= SMALL_FRAME_BYTES:
            return 0
        while not self._fits(size):
            freed = asyncio.get_running_loop().create_future()
            self._waiting.append(freed)
            try:
                await freed
            finally:
                self._waiting.remove(freed)
        self.reserved += size
        return size

    def hold(self, size: int) -> int:
        """Count ``size`` bytes already in memory (a response being sent) without waiting; return
        what to hand back to ``release``. Frames wait while responses fill the bound."""
        if size <= SMALL_FRAME_BYTES:
            return 0
        self.reserved += size
        return size

    def release(self, size: int) -> None:
        if size:
            self.reserved -= size
            self._wake_all()

    def stop_waiting(self) -> None:
        """At shutdown: nobody waits for memory any more (their connections are being closed)."""
        self.limit = 0
        self._wake_all()

    def _wake_all(self) -> None:
        for freed in self._waiting:
            if not freed.done():
                freed.set_result(None)
