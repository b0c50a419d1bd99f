"""ListOffsets and Fetch for the client, sans I/O: the request bodies, and the answers read into
typed results (``ListedOffset``, ``FetchResult``) or errors. The isolation level (read_uncommitted
or read_committed) is a parameter of both requests: under read_committed a broker answers LATEST
with the last stable offset and fetches only below it, listing the aborted transactions among the
records it returns, which a ``broker.records.committed.ReadFilter`` drops.
"""

from collections.abc import Mapping
from typing import NamedTuple

from broker.protocol.apis import READ_COMMITTED, READ_UNCOMMITTED
from broker.protocol.errors import ErrorCode
from broker.records import record_set
from broker.records.committed import AbortedTransaction
from broker.records.errors import CorruptRecordError

from .connection import Body
from .errors import OffsetOutOfRangeError
from .retry import TopicPartition, raise_for_partition

ISOLATION_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}  # Kafka's names


class ListedOffset(NamedTuple):
    """A ListOffsets answer for one partition: the offset found (-1 when no record is at or after the
    timestamp asked) and the timestamp of its record (-1 for EARLIEST and LATEST)."""

    offset: int
    timestamp: int


class FetchResult(NamedTuple):
    records: memoryview  # whole entries (v2 batches or legacy messages), possibly a partial last one
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int  # -1 from a broker that does not say
    aborted_transactions: tuple[AbortedTransaction, ...] = ()  # under read_committed only


def list_offsets_body(wanted: Mapping[TopicPartition, int], isolation_level: int) -> Body:
    """A ListOffsets request for ``{(topic, partition): timestamp, EARLIEST or LATEST}``."""
    topics: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), timestamp in wanted.items():
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp}
        )
    return {
        "replica_id": -1,
        "isolation_level": isolation_level,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }


def listed_offsets(response: Body, principal: str | None) -> dict[TopicPartition, ListedOffset]:
    """The offsets of a ListOffsets answer; the error of the first partition that has one."""
    results = {}
    for topic in response["topics"]:
        for p in topic["partitions"]:
            raise_for_partition(
                p["error_code"], topic["name"], p["partition_index"], principal=principal, needs="DESCRIBE"
            )
            results[(topic["name"], p["partition_index"])] = ListedOffset(p["offset"], p["timestamp"])
    return results


def fetch_body(topic: str, partition: int, offset: int, max_bytes: int, max_wait_ms: int, isolation_level: int) -> Body:
    """A Fetch request (sessionless, as a stateless reader sends it) for one partition from ``offset``."""
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def fetch_result(response: Body, topic: str, partition: int, offset: int, principal: str | None) -> FetchResult:
    """The FetchResult of a Fetch answer for one partition, or its error."""
    if response["error_code"]:
        raise_for_partition(response["error_code"], topic, partition, principal=principal, needs="READ")
    data = response["responses"][0]["partitions"][0]
    if data["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE:
        raise OffsetOutOfRangeError(topic, partition, offset, data["log_start_offset"], data["high_watermark"])
    raise_for_partition(data["error_code"], topic, partition, principal=principal, needs="READ")
    records = data["records"] if data["records"] is not None else memoryview(b"")
    aborted = tuple(
        AbortedTransaction(a["producer_id"], a["first_offset"]) for a in data.get("aborted_transactions") or ()
    )
    return FetchResult(records, data["high_watermark"], data["log_start_offset"], data["last_stable_offset"], aborted)


def holds_a_whole_entry(records: memoryview) -> bool:
    """Whether fetched ``records`` start with a whole entry (else the size asked was too small)."""
    try:
        return next(record_set.iter_entries(records), None) is not None
    except CorruptRecordError:
        return True  # let the decoder report it
