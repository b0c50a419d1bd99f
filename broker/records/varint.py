"""Zig-zag variable-length integers, as used inside v2 records (protobuf's encoding)."""

from .errors import CorruptRecordError

_MAX_VARLONG_BYTES = 10


def encode_varint(value: int) -> bytes:
    """Encode a signed 64-bit integer as a zig-zag varint."""
    if 0 <= value < _SMALL_COUNT:
        return _SMALL[value]
    return _encode(value)


def _encode(value: int) -> bytes:
    zigzag = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


# the encodings of 0..8191 (one or two bytes), looked up: a produced record's lengths and deltas
# are nearly always among them, and building each one costs more than the rest of its record
_SMALL_COUNT = 8192
_SMALL = tuple(_encode(value) for value in range(_SMALL_COUNT))


def decode_varint(buf, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varint at ``buf[pos]``; return ``(value, position after it)``."""
    result = 0
    shift = 0
    end = len(buf)
    for i in range(pos, min(pos + _MAX_VARLONG_BYTES, end)):
        byte = buf[i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), i + 1
        shift += 7
    if end - pos < _MAX_VARLONG_BYTES:
        raise CorruptRecordError(f"truncated varint at position {pos}")
    raise CorruptRecordError(f"varint longer than {_MAX_VARLONG_BYTES} bytes at position {pos}")

