"""ListOffsets: the earliest (-2) or latest (-1) offset of a partition, or the first offset whose
record timestamp is at or after a given time (through the time index). A partition named more than
once in one request gets INVALID_REQUEST at every mention, as in Kafka (v1+). The lookups run on the
I/O pool."""

from broker.log.errors import LogDeletedError
from broker.protocol.errors import ErrorCode
from broker.records.errors import CorruptRecordError

from ..context import LEADER_EPOCH
from .partition_lists import repeated

LATEST = -1
EARLIEST = -2


def _lookup(log, timestamp: int) -> tuple[int, int]:
    """``(timestamp, offset)`` as the response reports them."""
    if timestamp == LATEST:
        return -1, log.high_watermark
    if timestamp == EARLIEST:
        return -1, log.log_start_offset
    found = log.offset_for_timestamp(timestamp)
    if found is None:
        return -1, -1
    offset, record_timestamp = found
    return record_timestamp, offset


async def handle(ctx, header, request) -> dict:
    return await ctx.io.run(_list_offsets, ctx, request)


def _list_offsets(ctx, request) -> dict:
    named_twice = repeated(request["topics"], "name", "partition_index")
    topics = []
    for topic in request["topics"]:
        partitions = []
        for wanted in topic["partitions"]:
            result = {"partition_index": wanted["partition_index"], "error_code": ErrorCode.NONE,
                      "timestamp": -1, "offset": -1, "leader_epoch": LEADER_EPOCH}
            log = ctx.log_manager.get_log(topic["name"], wanted["partition_index"])
            if (topic["name"], wanted["partition_index"]) in named_twice:
                result["error_code"] = ErrorCode.INVALID_REQUEST
            elif log is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif wanted["current_leader_epoch"] > LEADER_EPOCH:
                result["error_code"] = ErrorCode.UNKNOWN_LEADER_EPOCH
            else:
                try:
                    result["timestamp"], result["offset"] = _lookup(log, wanted["timestamp"])
                except CorruptRecordError:  # stored records that do not decode (damaged on disk behind a valid CRC)
                    result["error_code"] = ErrorCode.CORRUPT_MESSAGE
                except LogDeletedError:  # the topic was deleted after get_log
                    result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            partitions.append(result)
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
