"""Checksums: CRC-32C (Castagnoli) for v2 record batches, CRC-32 (IEEE) for legacy messages.

CRC-32C comes from this package's C extension (``_crc32c``: the CPU's crc32 instruction where
there is one, slicing-by-8 tables elsewhere), about ten times faster than crcmod, which stays the
fallback when the extension was not built. ``CRC32C_IMPLEMENTATION`` says which one is in use.
"""

import zlib
from collections.abc import Callable

from .buffers import Bytes

crc32c: Callable[[Bytes], int]
try:
    from ._crc32c import IMPLEMENTATION as CRC32C_IMPLEMENTATION
    from ._crc32c import crc32c
except ImportError:  # the optional extension did not compile
    import crcmod.predefined

    crc32c = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
    CRC32C_IMPLEMENTATION = "crcmod"

__all__ = ["CRC32C_IMPLEMENTATION", "crc32", "crc32c"]


def crc32(data: Bytes) -> int:
    """CRC-32 (IEEE 802.3) of a bytes-like object, as an unsigned 32-bit int."""
    return zlib.crc32(data) & 0xFFFFFFFF
