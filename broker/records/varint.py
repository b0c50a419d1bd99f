"""Variable-length integers: the one decoder of every varint in records and in the protocol.

v2 records use zig-zag varints (protobuf's encoding, at most ten bytes for a 64-bit value); the
protocol's flexible versions use unsigned varints (at most five bytes for 32 bits). Both read the
same base-128 groups with ``read_unsigned``.
"""

from .buffers import Bytes
from .errors import CorruptRecordError

_MAX_VARLONG_BYTES = 10


def encode_varint(value: int) -> bytes:
    """Encode a signed 64-bit integer as a zig-zag varint."""
    if 0 <= value < _SMALL_COUNT:
        return _SMALL[value]
    return _encode(value)


def _encode(value: int) -> bytes:
    zigzag = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    return encode_unsigned(zigzag)


def encode_unsigned(value: int) -> bytes:
    """Encode a non-negative integer as an unsigned varint."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# the encodings of 0..8191 (one or two bytes), looked up: a produced record's lengths and deltas
# are nearly always among them, and building each one costs more than the rest of its record
_SMALL_COUNT = 8192
_SMALL = tuple(_encode(value) for value in range(_SMALL_COUNT))


def read_unsigned(buf: Bytes, pos: int, end: int, max_bytes: int) -> tuple[int, int] | None:
    """The unsigned varint of at most ``max_bytes`` at ``buf[pos]``, all before ``end``: ``(value,
    position after it)``, or None when it is cut short by ``end`` or longer than ``max_bytes``."""
    result = 0
    shift = 0
    for i in range(pos, min(pos + max_bytes, end)):
        byte = buf[i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i + 1
        shift += 7
    return None


def read_varint(buf: Bytes, pos: int, end: int) -> tuple[int, int] | None:
    """The zig-zag varint at ``buf[pos]``, all before ``end``: ``(value, position after it)``, or None
    when it is cut short by ``end`` or longer than ten bytes. Its exact value, up to 70 bits."""
    if pos < end:
        byte = buf[pos]
        if byte < 0x80:  # one byte: most lengths and deltas
            return (byte >> 1) ^ -(byte & 1), pos + 1
    found = read_unsigned(buf, pos, end, _MAX_VARLONG_BYTES)
    if found is None:
        return None
    raw, after = found
    return (raw >> 1) ^ -(raw & 1), after


def decode_varint(buf: Bytes, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varint at ``buf[pos]``; return ``(value, position after it)``."""
    end = len(buf)
    found = read_varint(buf, pos, end)
    if found is not None:
        return found
    if end - pos < _MAX_VARLONG_BYTES:
        raise CorruptRecordError(f"truncated varint at position {pos}")
    raise CorruptRecordError(f"varint longer than {_MAX_VARLONG_BYTES} bytes at position {pos}")
