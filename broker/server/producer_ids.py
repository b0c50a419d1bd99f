"""Producer ids for idempotent producers, never reused, even across restarts.

Ids are handed out from blocks of ``BLOCK_SIZE``; before the first id of a block is given out,
the end of the block is written (atomically) to ``<log-dir>/producer-id-block``, so a restart
continues after the last block reserved.
"""

import os
import threading

from broker.common.files import write_atomically

BLOCK_FILE = "producer-id-block"
BLOCK_SIZE = 1000


class ProducerIdAllocator:
    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, BLOCK_FILE)
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
            if self._next >= self._block_end:
                block_end = self._next + BLOCK_SIZE
                write_atomically(self.path, f"{block_end}\n".encode())  # an OSError leaves the block unreserved
                self._block_end = block_end
            producer_id = self._next
            self._next += 1
            return producer_id
