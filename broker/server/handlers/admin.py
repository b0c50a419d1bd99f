"""CreateTopics and DeleteTopics, with Kafka's checks and error codes.

A single broker can only keep one replica: a replication factor other than 1 (or -1, "the
default", from v4) is refused with INVALID_REPLICATION_FACTOR, and manual replica assignments
must name this broker alone. Each topic succeeds or fails on its own, and a name given twice in
one request is refused for both (INVALID_REQUEST, as Kafka's controller does); a storage failure
(a full disk) is KAFKA_STORAGE_ERROR for that topic and changes nothing (see ``topics``). Creating and
deleting files runs on the I/O pool; a deletion waits for the appends in flight to its partitions
(it is their partitions' next writer).
"""

from broker.protocol.errors import ErrorCode

from ..topics import TopicError
from .topic_results import per_topic

DEFAULT = -1


def _partition_count(ctx, topic: dict) -> int:
    """The partition count asked for, from the count or the manual assignment (TopicError if bad)."""
    assignments = topic["assignments"]
    if topic["replication_factor"] not in (1, DEFAULT):
        raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"replication factor {topic['replication_factor']} is larger than the 1 available broker")
    if not assignments:
        return ctx.config.num_partitions if topic["num_partitions"] == DEFAULT else topic["num_partitions"]
    if topic["num_partitions"] != DEFAULT or topic["replication_factor"] != DEFAULT:
        raise TopicError(ErrorCode.INVALID_REQUEST,
                         "give either num_partitions and replication_factor or a replica assignment, not both")
    if sorted(a["partition_index"] for a in assignments) != list(range(len(assignments))):
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions must be numbered 0..n-1 without gaps")
    if any(a["broker_ids"] != [ctx.node_id] for a in assignments):
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"every partition must be assigned to broker {ctx.node_id} alone")
    return len(assignments)


async def handle_create(ctx, header, request) -> dict:
    async def create(topic: dict) -> None:
        configs = {c["name"]: c["value"] for c in topic["configs"]}
        await ctx.io.run(ctx.topics.create, topic["name"], _partition_count(ctx, topic), configs,
                         request["validate_only"])

    return {"throttle_time_ms": 0, "topics": await per_topic(request["topics"], create)}


async def handle_delete(ctx, header, request) -> dict:
    async def delete(topic: dict) -> None:
        name = topic["name"]
        if not ctx.config.delete_topic_enable:
            raise TopicError(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false")
        partitions = [(name, p) for p in range(ctx.topics.partitions(name) or 0)]
        await ctx.io.write(partitions, ctx.topics.delete, name)  # after the appends in flight

    results = await per_topic([{"name": name} for name in request["topic_names"]], delete)
    return {"throttle_time_ms": 0, "responses": [{"name": r["name"], "error_code": r["error_code"]} for r in results]}
