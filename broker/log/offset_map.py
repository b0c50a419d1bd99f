"""The cleaner's key map: the latest offset of each key in the dirty part of a log, in bounded memory.

Kafka's ``SkimpyOffsetMap`` keeps a 16-byte MD5 digest and an 8-byte offset per key in a fixed
buffer. This one keeps a 16-byte BLAKE2b digest (or the key itself when it is no longer, which
saves hashing the short keys most topics have) and the offset in a dict, and counts what a dict
entry really costs in CPython (the 16-byte object, the offset, the slot), so
``log.cleaner.dedupe.buffer.size`` bounds the memory it takes. When it is full, the cleaner stops
the pass at the batch it reached and cleans the rest in the next pass.
"""

import hashlib
from collections.abc import Iterable

BYTES_PER_ENTRY = 160  # a 16-byte bytes object (49), an int (32), a dict slot and its index (~80)
_DIGEST_SIZE = 16
_LOAD_FACTOR = 0.9  # as Kafka's log.cleaner.io.buffer.load.factor


class OffsetMap:
    def __init__(self, memory_bytes: int):
        self.capacity = max(1, int(memory_bytes * _LOAD_FACTOR) // BYTES_PER_ENTRY)
        self._offsets: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[_digest(key)] = offset

    def put_all(self, keyed_offsets: Iterable[tuple[bytes, int]]) -> None:
        """``put`` each ``(key, offset)``, in order."""
        offsets = self._offsets
        for key, offset in keyed_offsets:
            offsets[_digest(key)] = offset

    def get(self, key: bytes) -> int | None:
        return self._offsets.get(_digest(key))

    def clear(self) -> None:
        self._offsets.clear()


def _digest(key: bytes) -> bytes:
    """At most 16 bytes standing for ``key``: a longer key's digest may equal a short key only by
    a 2**-128 chance, as two digests may."""
    return key if len(key) <= _DIGEST_SIZE else hashlib.blake2b(key, digest_size=_DIGEST_SIZE).digest()
