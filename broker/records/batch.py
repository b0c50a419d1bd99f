"""Record batch v2 (magic 2): the header, decoding records out of a batch, and building batches.

Layout (byte offsets within the batch)::

     0 baseOffset INT64          27 baseTimestamp INT64      57 recordsCount INT32
     8 batchLength INT32         35 maxTimestamp INT64       61 records (compressed as one blob,
    12 partitionLeaderEpoch      43 producerId INT64            or not, by attributes bits 0-2)
    16 magic INT8 (= 2)          51 producerEpoch INT16
    17 crc UINT32 (CRC-32C of bytes 21..end)
    21 attributes INT16          53 baseSequence INT32
    23 lastOffsetDelta INT32

A record is ``length, attributes, timestampDelta, offsetDelta, key, value, headers`` with every
integer a zig-zag varint and ``-1`` lengths meaning null; ``record_walk`` reads them.
"""

import enum
import struct
from collections.abc import Sequence
from typing import NamedTuple

from . import record_walk
from .buffers import Bytes
from .compression import Codec, codec_of, compress, decompress
from .crc import crc32c
from .errors import CorruptRecordError
from .varint import encode_varint

MAGIC = 2
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes batchLength does not count
CRC_START = 21
MAGIC_OFFSET = 16
PARTITION_LEADER_EPOCH_OFFSET = 12
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_DELETE_HORIZON_BIT = 0x40
_MAX_TIMESTAMP = struct.Struct(">q")
_MAX_TIMESTAMP_OFFSET = 35


class TimestampType(enum.IntEnum):
    """Kafka's timestamp types; the ids are what Spark shows in its ``timestampType`` column."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(enum.IntEnum):
    """The type field in the key of a control record (transaction markers)."""

    ABORT = 0
    COMMIT = 1


class BatchHeader(NamedTuple):
    """The 61 fixed header bytes of a v2 batch, decoded. ``size`` is the whole batch in bytes.

    The properties name the attribute bits; its C twin, ``rw_batch_header`` in ``recordwalk.h``,
    names the same ones (a new bit is named in both)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> Codec:
        return codec_of(self.attributes)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & _TIMESTAMP_TYPE_BIT:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & _DELETE_HORIZON_BIT)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


class Record(NamedTuple):
    """One record. ``headers`` is a tuple of ``(key, value)`` with str keys and bytes-or-None values."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class DecodedBatch(NamedTuple):
    """A batch (v2, or one legacy entry) with its records decoded."""

    base_offset: int
    last_offset: int
    magic: int
    timestamp_type: TimestampType
    is_control: bool
    is_transactional: bool
    producer_id: int
    records: list[Record]


def parse_header(buf: Bytes, pos: int = 0) -> BatchHeader:
    """Decode the v2 header at ``buf[pos:]``. Checks the magic and minimum length, not the CRC."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(f"record batch header needs {HEADER_SIZE} bytes, {len(buf) - pos} present")
    header = BatchHeader._make(HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC:
        raise CorruptRecordError(f"record batch magic is {header.magic}, expected {MAGIC}")
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"record batch length {header.batch_length} is below the header size")
    return header


def compute_crc(batch: Bytes) -> int:
    """The CRC-32C a batch should carry: over bytes 21..end."""
    return crc32c(memoryview(batch)[CRC_START:])


def validate(batch: Bytes) -> BatchHeader:
    """Check that ``batch`` is exactly one complete v2 batch with a correct CRC and a known codec."""
    header = parse_header(batch)
    if header.size != len(batch):
        raise CorruptRecordError(f"record batch declares {header.size} bytes but {len(batch)} are present")
    actual = compute_crc(batch)
    if actual != header.crc:
        raise CorruptRecordError(f"record batch CRC mismatch: stored {header.crc:#010x}, computed {actual:#010x}")
    _ = header.compression  # raises UnsupportedCodecError for codec ids 5-7
    return header


def decode(batch: Bytes, verify_crc: bool = True) -> DecodedBatch:
    """Decode every record of one complete v2 batch (decompressing if needed)."""
    header = validate(batch) if verify_crc else parse_header(batch)
    if header.size > len(batch):
        raise CorruptRecordError(f"record batch declares {header.size} bytes but {len(batch)} are present")
    payload: Bytes = memoryview(batch)[HEADER_SIZE : header.size]
    if header.compression != Codec.NONE:
        payload = decompress(header.compression, payload)
    if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
        fixed_timestamp = header.max_timestamp
    else:
        fixed_timestamp = None
    records = decode_records(payload, header.records_count, header.base_offset, header.base_timestamp, fixed_timestamp)
    return DecodedBatch(
        header.base_offset,
        header.last_offset,
        MAGIC,
        header.timestamp_type,
        header.is_control,
        header.is_transactional,
        header.producer_id,
        records,
    )


def decode_records(
    buf: Bytes, count: int, base_offset: int, base_timestamp: int, fixed_timestamp: int | None = None
) -> list[Record]:
    """The ``count`` records of a batch's (decompressed) records section; every byte must belong to one."""
    if fixed_timestamp is not None:
        return [
            Record(base_offset + r.offset_delta, fixed_timestamp, r.key, r.value, r.headers)
            for r in record_walk.walk(buf, count)
        ]
    return [
        Record(base_offset + r.offset_delta, base_timestamp + r.timestamp_delta, r.key, r.value, r.headers)
        for r in record_walk.walk(buf, count)
    ]


def build(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression: int = Codec.NONE,
    timestamp_type: int = TimestampType.CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
    max_timestamp: int | None = None,
) -> bytes:
    """Build one v2 batch holding ``records``.

    Each record's offset is absolute: its delta is ``record.offset - base_offset`` (so gaps are
    possible). ``max_timestamp`` defaults to the largest record timestamp; pass it for LogAppendTime.
    """
    base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    body = b"".join(_encode_record(r, base_offset, base_timestamp) for r in records)
    if compression != Codec.NONE:
        body = compress(compression, body)
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    last_offset_delta = records[-1].offset - base_offset if records else -1
    attributes = int(compression) & _COMPRESSION_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= _TIMESTAMP_TYPE_BIT
    if is_transactional:
        attributes |= _TRANSACTIONAL_BIT
    if is_control:
        attributes |= _CONTROL_BIT
    batch = bytearray(
        HEADER.pack(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(body),
            partition_leader_epoch,
            MAGIC,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    )
    batch += body
    struct.pack_into(">I", batch, MAGIC_OFFSET + 1, compute_crc(batch))
    return bytes(batch)


def _encode_record(record: Record, base_offset: int, base_timestamp: int) -> bytes:
    parts = [b"\x00", encode_varint(record.timestamp - base_timestamp), encode_varint(record.offset - base_offset)]
    _append_optional_bytes(parts, record.key)
    _append_optional_bytes(parts, record.value)
    parts.append(encode_varint(len(record.headers)))
    for key, value in record.headers:
        _append_optional_bytes(parts, key.encode("utf-8"))
        _append_optional_bytes(parts, value)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def _append_optional_bytes(parts: list[bytes], data: Bytes | None) -> None:
    if data is None:
        parts.append(encode_varint(-1))
    else:
        parts.append(encode_varint(len(data)))
        parts.append(bytes(data))


def control_record(control_type: ControlType, coordinator_epoch: int = 0) -> tuple[bytes, bytes]:
    """Key and value of a control record (transaction marker)."""
    return struct.pack(">hh", 0, control_type), struct.pack(">hi", 0, coordinator_epoch)


def read_control_record(key: Bytes | None, value: Bytes | None) -> tuple[int, int | None] | None:
    """``(control type, coordinator epoch)`` of a control record: the epoch only for a transaction
    marker (COMMIT or ABORT; a higher value version is read by its first 6 bytes, as Kafka's); None
    when the key is too short to hold a type. Other types (KRaft's) come back with no epoch."""
    if key is None or len(key) < 4:
        return None
    control_type = struct.unpack_from(">h", key, 2)[0]
    if control_type not in (ControlType.ABORT, ControlType.COMMIT) or value is None or len(value) < 6:
        return control_type, None
    return control_type, struct.unpack_from(">i", value, 2)[0]


def with_offset_and_epoch(batch: Bytes, base_offset: int, partition_leader_epoch: int) -> list[Bytes]:
    """The batch with baseOffset and partitionLeaderEpoch replaced, as buffers for ``os.writev``.

    Neither field is covered by the CRC, and every other byte is passed through untouched (no copy).
    """
    view = memoryview(batch)
    return [
        struct.pack(">q", base_offset),
        view[8:PARTITION_LEADER_EPOCH_OFFSET],
        struct.pack(">i", partition_leader_epoch),
        view[MAGIC_OFFSET:],
    ]


def with_log_append_time(batch: Bytes, timestamp: int) -> bytearray:
    """A copy of the batch switched to LogAppendTime at ``timestamp``, with its CRC recomputed."""
    return with_max_timestamp(batch, timestamp, log_append_time=True)


def with_max_timestamp(batch: Bytes, timestamp: int, log_append_time: bool = False) -> bytearray:
    """A copy of the batch with ``maxTimestamp`` set (and LogAppendTime if asked), CRC recomputed."""
    out = bytearray(batch)
    if log_append_time:
        (attributes,) = struct.unpack_from(">h", out, CRC_START)
        struct.pack_into(">h", out, CRC_START, attributes | _TIMESTAMP_TYPE_BIT)
    _MAX_TIMESTAMP.pack_into(out, _MAX_TIMESTAMP_OFFSET, timestamp)
    struct.pack_into(">I", out, MAGIC_OFFSET + 1, compute_crc(out))
    return out
