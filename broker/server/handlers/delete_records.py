"""DeleteRecords (v0-1): move partitions' log start offsets forward, as ``kafka-delete-records``
does. Offset -1 means the high watermark (delete everything). The new start offsets are written
to ``log-start-offset-checkpoint`` before the answer, so a restart keeps them; readers below them
get OFFSET_OUT_OF_RANGE, exactly as after retention. The answer's ``low_watermark`` is the new
log start offset; a partition named twice in one request is refused. Each deletion is a write of
its partition on the I/O pool (in order with that partition's appends), off the event loop, and
so is the checkpoint. Each topic needs Delete (TOPIC_AUTHORIZATION_FAILED); the records of an internal
topic cannot be deleted (INVALID_TOPIC_EXCEPTION, as in Kafka: they are its coordinator's state).
"""

from broker.cluster.topic_rules import INTERNAL_TOPICS
from broker.log.errors import LogDeletedError, LogError, OffsetOutOfRangeError
from broker.protocol.errors import ErrorCode
from broker.replica.replica_manager import PartitionError
from broker.security.acls import Operation, ResourceType

from .partition_lists import repeated

TO_HIGH_WATERMARK = -1


def _delete(ctx, topic: str, partition: int, offset: int) -> tuple[int, int]:
    """(error code, low watermark) for one partition."""
    try:
        leader = ctx.replicas.leader_partition(topic, partition)
        target = leader.high_watermark if offset == TO_HIGH_WATERMARK else offset
        return ErrorCode.NONE, leader.delete_records_before(target)
    except PartitionError as exc:
        return exc.code, -1
    except OffsetOutOfRangeError:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    except LogDeletedError:  # the topic was deleted after the partition was looked up
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
    except (OSError, LogError):
        return ErrorCode.KAFKA_STORAGE_ERROR, -1


async def handle(ctx, header, request) -> dict:
    named_twice = repeated(request["topics"], "name", "partition_index")
    topics = []
    for topic in request["topics"]:
        partitions = []
        for partition in topic["partitions"]:
            index = partition["partition_index"]
            if (topic["name"], index) in named_twice:
                code, low_watermark = ErrorCode.INVALID_REQUEST, -1
            elif not ctx.allows(Operation.DELETE, ResourceType.TOPIC, topic["name"]):
                code, low_watermark = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1
            elif topic["name"] in INTERNAL_TOPICS:
                code, low_watermark = ErrorCode.INVALID_TOPIC_EXCEPTION, -1
            else:
                code, low_watermark = await ctx.io.write(
                    [(topic["name"], index)], _delete, ctx, topic["name"], index, partition["offset"]
                )
            partitions.append({"partition_index": index, "low_watermark": low_watermark, "error_code": code})
        topics.append({"name": topic["name"], "partitions": partitions})
    try:
        await ctx.io.run(ctx.replicas.write_checkpoints)
    except OSError:
        for partition in (p for t in topics for p in t["partitions"] if p["error_code"] == ErrorCode.NONE):
            partition.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, low_watermark=-1)
    return {"throttle_time_ms": 0, "topics": topics}
