"""Legacy messages (magic 0 and 1): parsing and decoding one entry of a legacy message set.

An entry is ``offset INT64, size INT32, message`` and a message is::

    crc UINT32 (CRC-32 of magic..end), magic INT8, attributes INT8 (bits 0-2 codec, bit 3 timestamp
    type on magic 1), timestamp INT64 (magic 1 only), key BYTES, value BYTES

A compressed message is a *wrapper* whose value is a compressed inner message set. In magic 1 the
inner offsets are relative (0..n-1) and the wrapper carries the absolute offset of the last one;
in magic 0 the inner offsets are absolute.
"""

import struct
from typing import NamedTuple

from .batch import NO_TIMESTAMP, DecodedBatch, Record, TimestampType
from .buffers import Bytes
from .compression import DEFAULT_MAX_DECOMPRESSED, Codec, codec_of, decompress
from .crc import crc32
from .errors import CorruptRecordError, UnsupportedCodecError

LOG_OVERHEAD = 12
_ENTRY_PREFIX = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
_TIMESTAMP_TYPE_BIT = 0x08
MIN_MESSAGE_SIZE = {0: 4 + 1 + 1 + 4 + 4, 1: 4 + 1 + 1 + 8 + 4 + 4}
HEADER_SIZE = {0: _ENTRY_PREFIX.size, 1: _ENTRY_PREFIX.size + 8}  # bytes parse_header reads


class LegacyHeader(NamedTuple):
    """The fixed fields of one legacy entry. ``size`` is the whole entry, offset and size included."""

    offset: int
    message_size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int

    @property
    def size(self) -> int:
        return self.message_size + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def max_timestamp(self) -> int:
        return self.timestamp

    @property
    def compression(self) -> Codec:
        return codec_of(self.attributes)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.attributes & _TIMESTAMP_TYPE_BIT:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME


def parse_header(buf: Bytes, pos: int = 0) -> LegacyHeader:
    """Decode the fixed fields of the legacy entry at ``buf[pos:]`` (no CRC check)."""
    if len(buf) - pos < _ENTRY_PREFIX.size:
        raise CorruptRecordError(f"legacy message header needs {_ENTRY_PREFIX.size} bytes, {len(buf) - pos} present")
    offset, size, crc, magic, attributes = _ENTRY_PREFIX.unpack_from(buf, pos)
    if magic not in MIN_MESSAGE_SIZE:
        raise CorruptRecordError(f"legacy message magic is {magic}, expected 0 or 1")
    if size < MIN_MESSAGE_SIZE[magic]:
        raise CorruptRecordError(f"legacy message size {size} is below the minimum {MIN_MESSAGE_SIZE[magic]}")
    timestamp = NO_TIMESTAMP
    if magic == 1:
        if len(buf) - pos < _ENTRY_PREFIX.size + 8:
            raise CorruptRecordError("truncated legacy message timestamp")
        (timestamp,) = _TIMESTAMP.unpack_from(buf, pos + _ENTRY_PREFIX.size)
    return LegacyHeader(offset, size, crc, magic, attributes, timestamp)


def validate(entry: Bytes) -> LegacyHeader:
    """Check that ``entry`` is exactly one complete legacy entry with a correct CRC-32."""
    header = parse_header(entry)
    if header.size != len(entry):
        raise CorruptRecordError(f"legacy message declares {header.size} bytes but {len(entry)} are present")
    actual = crc32(memoryview(entry)[16:])
    if actual != header.crc:
        raise CorruptRecordError(f"legacy message CRC mismatch: stored {header.crc:#010x}, computed {actual:#010x}")
    return header


def decode(entry: Bytes, verify_crc: bool = True, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> DecodedBatch:
    """Decode one legacy entry (a plain message, or a wrapper of a compressed inner set)."""
    header = validate(entry) if verify_crc else parse_header(entry)
    if header.size > len(entry):
        raise CorruptRecordError(f"legacy message declares {header.size} bytes but {len(entry)} are present")
    key, value = _key_and_value(entry, header)
    if header.compression == Codec.NONE:
        records = [Record(header.offset, header.timestamp, key, value)]
    else:
        if value is None:
            raise CorruptRecordError("compressed legacy wrapper has a null value")
        if header.magic == 0 and header.compression == Codec.LZ4:
            raise UnsupportedCodecError(
                "LZ4 in magic-0 messages (Kafka 0.8/0.9, with its non-standard frame checksum) is not supported"
            )
        inner = decompress(header.compression, value, max_decompressed)
        records = _decode_inner(inner, header, verify_crc)
    first = records[0].offset if records else header.offset
    return DecodedBatch(first, header.offset, header.magic, header.timestamp_type, False, False, -1, records)


def _key_and_value(entry: Bytes, header: LegacyHeader) -> tuple[bytes | None, bytes | None]:
    pos = _ENTRY_PREFIX.size + (8 if header.magic == 1 else 0)
    end = header.size
    key, pos = _read_bytes(entry, pos, end)
    value, pos = _read_bytes(entry, pos, end)
    if pos != end:
        raise CorruptRecordError(f"legacy message has {end - pos} bytes after its value")
    return key, value


def _read_bytes(buf: Bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("truncated legacy message field length")
    (length,) = _LENGTH.unpack_from(buf, pos)
    pos += 4
    if length < 0:
        return None, pos
    if pos + length > end:
        raise CorruptRecordError(f"legacy message field of {length} bytes overruns the message")
    return bytes(buf[pos : pos + length]), pos + length


def _decode_inner(inner: Bytes, wrapper: LegacyHeader, verify_crc: bool) -> list[Record]:
    messages = []
    pos = 0
    while pos < len(inner):
        header = parse_header(inner, pos)
        entry = memoryview(inner)[pos : pos + header.size]
        if len(entry) < header.size:
            raise CorruptRecordError("truncated message inside a compressed legacy wrapper")
        if verify_crc:
            validate(entry)
        if header.compression != Codec.NONE:
            raise CorruptRecordError("nested compression inside a compressed legacy wrapper")
        key, value = _key_and_value(entry, header)
        messages.append((header, key, value))
        pos += header.size
    if not messages:
        return []
    if wrapper.magic == 1:
        # inner offsets are relative; the wrapper holds the absolute offset of the last inner message
        shift = wrapper.offset - messages[-1][0].offset
    else:
        shift = 0
    log_append = wrapper.timestamp_type == TimestampType.LOG_APPEND_TIME
    return [
        Record(h.offset + shift, wrapper.timestamp if log_append else h.timestamp, key, value)
        for h, key, value in messages
    ]
