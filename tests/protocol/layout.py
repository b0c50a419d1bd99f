"""Hand-written wire encodings (Kafka protocol guide, section 2.2), independent of ``broker.protocol``:
used to spell out the expected bytes of a message field by field."""

import struct


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def boolean(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def string(v: str | None) -> bytes:
    """STRING / NULLABLE_STRING: INT16 length (-1 for null) + UTF-8."""
    if v is None:
        return i16(-1)
    data = v.encode("utf-8")
    return i16(len(data)) + data


def nbytes(v: bytes | None) -> bytes:
    """BYTES / NULLABLE_BYTES / RECORDS: INT32 length (-1 for null) + data."""
    if v is None:
        return i32(-1)
    return i32(len(v)) + v


def array(items, encode=lambda item: item) -> bytes:
    """ARRAY: INT32 count (-1 for null) + elements (already-encoded bytes unless ``encode`` is given)."""
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(encode(item) for item in items)
