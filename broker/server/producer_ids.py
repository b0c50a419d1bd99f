"""Producer ids for idempotent producers, never reused, even across restarts.

Ids are handed out from blocks of ``BLOCK_SIZE``; before the first id of a block is given out, the
block is reserved: on a single broker its end is written (atomically) to
``<log-dir>/producer-id-block``, so a restart continues after the last block reserved; in a cluster
it is taken from ZooKeeper (``cluster.zookeeper_producer_ids``), so brokers never share an id.
"""

import os
import threading
from collections.abc import Callable

from broker.common.files import write_atomically

BLOCK_FILE = "producer-id-block"
BLOCK_SIZE = 1000


class ProducerIdAllocator:
    def __init__(self, log_dir: str, reserve_block: Callable[[int], int] | None = None):
        """``reserve_block(size)``: the first id of a new block reserved elsewhere (a cluster's)."""
        self.path = os.path.join(log_dir, BLOCK_FILE)
        self._reserve_block = reserve_block
        self._lock = threading.Lock()
        try:
            with open(self.path, encoding="ascii") as f:
                self._next = int(f.read().strip())
        except FileNotFoundError:
            self._next = 0
        except ValueError:
            raise ValueError(f"{self.path} does not hold a producer id; restore it or move it aside") from None
        self._block_end = self._next

    def next_id(self) -> int:
        with self._lock:
            if self._next >= self._block_end and self._reserve_block is not None:
                self._next = self._reserve_block(BLOCK_SIZE)
                self._block_end = self._next + BLOCK_SIZE
            elif self._next >= self._block_end:
                block_end = self._next + BLOCK_SIZE
                write_atomically(self.path, f"{block_end}\n".encode())  # an OSError leaves the block unreserved
                self._block_end = block_end
            producer_id = self._next
            self._next += 1
            return producer_id
