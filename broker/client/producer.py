"""Produce for the client, sans I/O: records into a v2 batch, the request body, the answer read
into the first record's offset or an error, and how a batch refused because of its records is
split. An idempotent producer's sequences are in ``idempotence``.
"""

from collections.abc import Sequence
from typing import Any

from broker.protocol.errors import ErrorCode
from broker.records.batch import Record

from .connection import Body
from .errors import RecordsRefusedError, error_for
from .retry import raise_for_partition

ACKS_ALL = -1
# Produce errors that refuse a batch because of its records: a smaller batch may be accepted.
RECORD_ERRORS = frozenset(
    {
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_RECORD,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.INVALID_TIMESTAMP,
    }
)

# ``(key, value)``, ``(key, value, timestamp or None)`` or ``(key, value, timestamp or None, headers)``
ProducerRecord = tuple[Any, ...]


def record(offset: int, fields: ProducerRecord, default_timestamp: int) -> Record:
    """A Record from ``(key, value[, timestamp[, headers]])``."""
    timestamp = fields[2] if len(fields) > 2 and fields[2] is not None else default_timestamp
    headers: tuple[tuple[str, bytes | None], ...] = tuple(fields[3]) if len(fields) > 3 else ()
    return Record(offset, timestamp, fields[0], fields[1], headers)


def produce_body(
    topic: str, partition: int, data: bytes, acks: int, timeout_ms: int, transactional_id: str | None = None
) -> Body:
    return {
        "transactional_id": transactional_id,
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topics": [{"name": topic, "partitions": [{"index": partition, "records": data}]}],
    }


def produced_offset(response: Body, topic: str, partition: int, principal: str | None) -> int:
    """The offset of the first record a Produce answer acknowledges; RecordsRefusedError for a batch
    refused because of its records, else the error answered."""
    result = response["responses"][0]["partitions"][0]
    if result["error_code"] in RECORD_ERRORS:
        error = error_for(result["error_code"], f"{topic}-{partition}", result["error_message"])
        assert error is not None
        raise RecordsRefusedError(str(error), error.code, [e["batch_index"] for e in result.get("record_errors") or ()])
    raise_for_partition(
        result["error_code"], topic, partition, result["error_message"], principal=principal, needs="WRITE"
    )
    offset: int = result["base_offset"]
    return offset


def split(start: int, end: int, named: Sequence[int]) -> list[tuple[int, int]]:
    """The parts to retry of records ``[start, end)`` refused as a batch: each record the broker
    named (an index within the batch) alone, and the runs of records between them (the broker
    names every keyless record of a compacted topic, so a batch is refused once, not once per
    bad record); or two halves when it named none."""
    inside = sorted({start + i for i in named if 0 <= i < end - start})
    if not inside:
        middle = (start + end) // 2
        return [(start, middle), (middle, end)]
    parts, after = [], start
    for bad in inside:
        parts += [(after, bad), (bad, bad + 1)]
        after = bad + 1
    return [(a, b) for a, b in (*parts, (after, end)) if a < b]
