"""CreatePartitions (v0-1): grow a topic to a higher partition count, as ``kafka-topics --alter
--partitions N`` asks. Records already stored stay where they are; keyed records produced from
now on may hash to a new partition (as in Kafka). A manual assignment must give each new
partition this broker alone; a topic named twice in one request is refused for both. The new
partition logs are made on the I/O pool, off the event loop.
"""

from collections import Counter

from broker.protocol.errors import ErrorCode

from ..context import error_text
from ..topics import TopicError


def _check_assignments(ctx, topic: dict) -> None:
    assignments = topic["assignments"]
    if assignments is None:
        return
    current = ctx.topics.partitions(topic["name"]) or 0
    if len(assignments) != topic["count"] - current:
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"{len(assignments)} assignments given for {topic['count'] - current} new partitions")
    if any(a["broker_ids"] != [ctx.node_id] for a in assignments):
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"every new partition must be assigned to broker {ctx.node_id} alone")


async def handle(ctx, header, request) -> dict:
    names = Counter(t["name"] for t in request["topics"])
    results = []
    for topic in request["topics"]:
        result = {"name": topic["name"], "error_code": ErrorCode.NONE, "error_message": None}
        try:
            if names[topic["name"]] > 1:
                raise TopicError(ErrorCode.INVALID_REQUEST, f"topic {topic['name']!r} appears twice in the request")
            if ctx.topics.partitions(topic["name"]) is not None:
                _check_assignments(ctx, topic)
            await ctx.io.run(ctx.topics.add_partitions, topic["name"], topic["count"], request["validate_only"])
        except TopicError as exc:
            result.update(error_code=exc.code, error_message=error_text(exc))
        except OSError as exc:
            result.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, error_message=error_text(exc))
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}
