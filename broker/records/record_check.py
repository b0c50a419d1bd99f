"""The records inside a produced v2 batch, checked before the broker appends it (Kafka's LogValidator).

A CRC proves the bytes arrived as the client sent them, not that the client wrote valid records.
``check`` decompresses the batch (bounded) and walks its records: exactly ``recordsCount`` of them,
each well-formed, with offset deltas 0, 1, ..., n - 1 and nothing left over. It returns the largest
record timestamp, which a CreateTime batch's header must carry.

The walk is the C extension ``_recordwalk`` when it was built; otherwise the batch is decoded with
``batch``'s Python decoder, which accepts the same bytes (the tests compare the two) but names the
bad record only for offset and timestamp faults (index -1 for the rest).
"""

from . import batch as batch_format
from .compression import DEFAULT_MAX_DECOMPRESSED, Codec, decompress
from .errors import CorruptRecordError

try:
    from ._recordwalk import walk as _walk
except ImportError:  # the optional extension did not compile
    _walk = None

RECORD_WALK_IMPLEMENTATION = "c" if _walk else "python"
_INT64 = range(-(1 << 63), 1 << 63)


class InvalidRecordsError(CorruptRecordError):
    """A batch whose records do not hold what its header says; ``index`` is the first bad record
    (``-1`` when the fault is the batch's: its compressed payload, or bytes after the last record)."""

    def __init__(self, message: str, index: int = -1):
        super().__init__(message)
        self.index = index


def check(batch, header: batch_format.BatchHeader, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> int:
    """Walk every record of ``batch`` (one CRC-checked v2 batch, ``header`` parsed from it);
    return the largest record timestamp, or raise InvalidRecordsError."""
    payload = memoryview(batch)[batch_format.HEADER_SIZE:header.size]
    if header.compression != Codec.NONE:
        try:
            payload = decompress(header.compression, payload, max_decompressed)
        except CorruptRecordError as exc:
            raise InvalidRecordsError(f"the {header.compression.name.lower()} payload: {exc}") from None
    found = (_walk or _walk_in_python)(payload, header.records_count, header.base_timestamp)
    if isinstance(found, tuple):
        index, reason = found
        where = f"record {index}" if index >= 0 else "the batch"
        raise InvalidRecordsError(f"{where} is invalid: {reason}", index)
    return found


def _walk_in_python(payload, count: int, base_timestamp: int):
    """``_recordwalk.walk`` by decoding: the largest timestamp, or ``(index, reason)``."""
    try:
        records = batch_format.decode_records(payload, count, 0, base_timestamp)
    except CorruptRecordError as exc:
        return -1, str(exc)
    for index, record in enumerate(records):
        if record.offset != index:
            return index, "its offset delta is not its position in the batch"
        if record.timestamp not in _INT64:
            return index, "its timestamp is outside the 64-bit range"
    return max((r.timestamp for r in records), default=-(1 << 63))
