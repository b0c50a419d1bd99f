"""Kafka's default partitioner for keyed records: ``murmur2(key) & 0x7fffffff % partitions``.

This is the Java producer's choice (``Utils.murmur2`` with seed ``0x9747b28c``), so a key lands in
the same partition whichever of this client or a Java (or kafka-python) producer writes it.
"""

import struct

SEED = 0x9747B28C
MULTIPLIER = 0x5BD1E995
MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 hash of ``data``, as a signed int like Java's."""
    length = len(data)
    h = (SEED ^ length) & MASK
    whole = length - length % 4
    for k in struct.unpack_from(f"<{whole // 4}I", data):
        k = (k * MULTIPLIER) & MASK
        k ^= k >> 24
        k = (k * MULTIPLIER) & MASK
        h = ((h * MULTIPLIER) & MASK) ^ k
    tail = data[whole:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * MULTIPLIER) & MASK
    h ^= h >> 13
    h = (h * MULTIPLIER) & MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions
