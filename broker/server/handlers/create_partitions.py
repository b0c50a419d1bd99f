"""CreatePartitions (v0-1): grow a topic to a higher partition count, as ``kafka-topics --alter
--partitions N`` asks. Records already stored stay where they are; keyed records produced from
now on may hash to a new partition (as in Kafka). A manual assignment must give each new
partition one live broker, and is followed; a topic named twice in one request is refused for both, and so
is an internal topic (its partition count places the groups: INVALID_TOPIC_EXCEPTION). It needs
Alter on the topic (TOPIC_AUTHORIZATION_FAILED). The new
partition logs are made on the I/O pool, off the event loop.
"""

from broker.cluster.topic_rules import check_not_internal
from broker.protocol.errors import ErrorCode
from broker.security.acls import Operation, ResourceType

from ..topics import TopicError
from .admin import check_assignments, requested_replicas
from .topic_results import per_topic


def _check_assignments(ctx, topic: dict) -> None:
    assignments = topic["assignments"]
    if assignments is None:
        return
    current = ctx.metadata.partition_count(topic["name"]) or 0
    if len(assignments) != topic["count"] - current:
        raise TopicError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"{len(assignments)} assignments given for {topic['count'] - current} new partitions",
        )
    check_assignments(ctx, assignments)


async def handle(ctx, header, request) -> dict:
    async def add_partitions(topic: dict) -> None:
        if not ctx.allows(Operation.ALTER, ResourceType.TOPIC, topic["name"]):
            raise TopicError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"not authorized to alter topic {topic['name']!r}")
        check_not_internal(topic["name"], "its partition count cannot be changed")
        if ctx.metadata.contains_topic(topic["name"]):
            _check_assignments(ctx, topic)
        await ctx.io.run(
            ctx.topics.add_partitions,
            topic["name"],
            topic["count"],
            request["validate_only"],
            requested_replicas(topic["assignments"]),
        )

    return {"throttle_time_ms": 0, "results": await per_topic(request["topics"], add_partitions)}
