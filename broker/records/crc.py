"""Checksums: CRC-32C (Castagnoli) for v2 record batches, CRC-32 (IEEE) for legacy messages."""

import zlib

import crcmod.predefined

crc32c = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
"""CRC-32C of a bytes-like object, as an unsigned 32-bit int (crcmod's C extension)."""


def crc32(data) -> int:
    """CRC-32 (IEEE 802.3) of a bytes-like object, as an unsigned 32-bit int."""
    return zlib.crc32(data) & 0xFFFFFFFF
