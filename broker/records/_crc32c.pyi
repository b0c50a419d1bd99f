"""Types of the C extension ``_crc32c`` (CRC-32C of a bytes-like object)."""

from .buffers import Bytes

IMPLEMENTATION: str

def crc32c(data: Bytes, /) -> int: ...
def crc32c_portable(data: Bytes, /) -> int: ...
