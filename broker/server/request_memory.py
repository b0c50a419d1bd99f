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

Frames are counted by their bytes, but most requests decode into Python objects many times their
size (a 16-byte partition entry of a ListOffsets request becomes a dict of a few hundred bytes, and
its answer another). Large frames of those requests are therefore decoded, handled and encoded one
at a time (``one_large_decoded``), so the broker holds at most one such decoded form beside the
bounded frames and answers; requests whose bulk is bytes (records, member metadata) are exempt.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator

from broker.protocol.apis import ApiKey

SMALL_FRAME_BYTES = 64 * 1024  # asyncio's stream buffer: what every connection may hold regardless
# Requests whose bulk decodes to bytes objects, not to many small ones; they may also wait long in
# their handler (a fetch's max wait, a rebalance), which must not hold up others' large requests.
BYTES_BULK_APIS = frozenset({ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP})


class RequestMemory:
    def __init__(self, limit: int):
        """``limit`` in bytes; 0 or less means unbounded, as in Kafka."""
        self.limit = limit
        self.reserved = 0
        self._waiting: list[asyncio.Future] = []
        self._decoding_large = asyncio.Lock()

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

    @contextlib.asynccontextmanager
    async def one_large_decoded(self, api_key: int, frame_size: int) -> AsyncIterator[None]:
        """Around decoding, handling and encoding a request: waits while another large request of
        the kind whose decoded form is many times its frame is being handled."""
        if self.limit <= 0 or frame_size <= SMALL_FRAME_BYTES or api_key in BYTES_BULK_APIS:
            yield
            return
        async with self._decoding_large:
            yield

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
