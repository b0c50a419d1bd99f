"""The records inside a produced v2 batch, checked before the broker appends it (Kafka's LogValidator).

A CRC proves the bytes arrived as the client sent them, not that the client wrote valid records.
``check`` decompresses the batch (bounded) and walks its records: exactly ``recordsCount`` of them,
each well-formed, with offset deltas 0, 1, ..., n - 1 and nothing left over. It returns the largest
record timestamp, which a CreateTime batch's header must carry.

The walk is the C extension ``_recordwalk`` when it was built, otherwise its twin ``record_walk``:
both name the first bad record and say what is wrong with it in the same words (the tests
compare the two).
"""

from collections.abc import Callable

from . import batch as batch_format
from . import record_walk
from .buffers import Bytes
from .compression import DEFAULT_MAX_DECOMPRESSED, Codec, decompress
from .errors import CorruptRecordError

_walk: Callable[[Bytes, int, int], int | tuple[int, str]] | None
try:
    from ._recordwalk import walk as _walk
except ImportError:  # the optional extension did not compile
    _walk = None

RECORD_WALK_IMPLEMENTATION = "c" if _walk is not None else "python"
_INT64 = range(-(1 << 63), 1 << 63)


class InvalidRecordsError(CorruptRecordError):
    """A batch whose records do not hold what its header says; ``index`` is the first bad record
    (``-1`` when the fault is the batch's: its compressed payload, or bytes after the last record)."""

    def __init__(self, message: str, index: int = -1):
        super().__init__(message)
        self.index = index


def check(batch: Bytes, header: batch_format.BatchHeader, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> int:
    """Walk every record of ``batch`` (one CRC-checked v2 batch, ``header`` parsed from it);
    return the largest record timestamp, or raise InvalidRecordsError."""
    payload: Bytes = memoryview(batch)[batch_format.HEADER_SIZE : header.size]
    if header.compression != Codec.NONE:
        try:
            payload = decompress(header.compression, payload, max_decompressed)
        except CorruptRecordError as exc:
            raise InvalidRecordsError(f"the {header.compression.name.lower()} payload: {exc}") from None
    found = (_walk or _walk_in_python)(payload, header.records_count, header.base_timestamp)
    if isinstance(found, tuple):
        index, reason = found
        raise InvalidRecordsError(str(record_walk.RecordWalkError.at(index, reason)), index)
    return found


def _walk_in_python(payload: Bytes, count: int, base_timestamp: int) -> int | tuple[int, str]:
    """``_recordwalk.walk`` with ``record_walk``: the largest timestamp, or ``(index, reason)``."""
    largest = -(1 << 63)
    try:
        for index, record in enumerate(record_walk.walk(payload, count)):
            if record.offset_delta != index:
                return index, "its offset delta is not its position in the batch"
            timestamp = base_timestamp + record.timestamp_delta
            if timestamp not in _INT64:
                return index, "its timestamp is outside the 64-bit range"
            largest = max(largest, timestamp)
    except record_walk.RecordWalkError as exc:
        return exc.index, exc.reason
    return largest
