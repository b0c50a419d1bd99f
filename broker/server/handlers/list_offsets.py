"""ListOffsets: the earliest (-2) or latest (-1) offset of a partition, or the first offset whose
record timestamp is at or after a given time (through the time index), from the partition this
broker leads (the replica manager answers Kafka's error otherwise). With ``isolation_level`` 1
(read_committed, v2+) the latest offset is the last stable offset, else the high watermark; a
timestamp lookup that lands at or past it answers -1, as Kafka's. A partition named more than once
in one request gets INVALID_REQUEST at every mention, as in Kafka (v1+). Each topic needs Describe
(TOPIC_AUTHORIZATION_FAILED). The lookups run on the I/O pool."""

from broker.common.offsets import EARLIEST, LATEST
from broker.log.errors import LogDeletedError
from broker.protocol.apis import READ_COMMITTED
from broker.protocol.errors import ErrorCode
from broker.records.errors import CorruptRecordError
from broker.replica.replica_manager import PartitionError
from broker.security.acls import Operation, ResourceType

from .partition_lists import repeated


def _lookup(partition, timestamp: int, read_committed: bool) -> tuple[int, int]:
    """``(timestamp, offset)`` as the response reports them."""
    latest = partition.last_stable_offset if read_committed else partition.high_watermark
    if timestamp == LATEST:
        return -1, latest
    if timestamp == EARLIEST:
        return -1, partition.log_start_offset
    found = partition.offset_for_timestamp(timestamp)
    if found is None or found[0] >= latest:
        return -1, -1
    offset, record_timestamp = found
    return record_timestamp, offset


async def handle(ctx, header, request) -> dict:
    read_committed = header.api_version >= 2 and request["isolation_level"] == READ_COMMITTED
    return await ctx.io.run(_list_offsets, ctx, request, read_committed)


def _list_offsets(ctx, request, read_committed: bool) -> dict:
    named_twice = repeated(request["topics"], "name", "partition_index")
    topics = []
    for topic in request["topics"]:
        partitions = []
        for wanted in topic["partitions"]:
            result = {
                "partition_index": wanted["partition_index"],
                "error_code": ErrorCode.NONE,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            if (topic["name"], wanted["partition_index"]) in named_twice:
                result["error_code"] = ErrorCode.INVALID_REQUEST
                partitions.append(result)
                continue
            if not ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, topic["name"]):
                result["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                partitions.append(result)
                continue
            try:
                partition = ctx.replicas.leader_partition(
                    topic["name"], wanted["partition_index"], wanted["current_leader_epoch"]
                )
                result["leader_epoch"] = partition.leader_epoch
                result["timestamp"], result["offset"] = _lookup(partition, wanted["timestamp"], read_committed)
            except PartitionError as exc:
                result["error_code"] = exc.code
            except CorruptRecordError:  # stored records that do not decode (damaged on disk behind a valid CRC)
                result["error_code"] = ErrorCode.CORRUPT_MESSAGE
            except LogDeletedError:  # the topic was deleted after the partition was looked up
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            partitions.append(result)
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
