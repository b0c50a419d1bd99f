"""DescribeLogDirs (v0-1): the size on disk of each partition, in this broker's one log directory.

A null topic list means every partition; partitions this broker does not hold are left out, as
Kafka does. With a single replica the offset lag is always 0, and there are no future logs.
It needs Describe on the cluster: others get no log directories, as from Kafka before v3 (which
has no error code to say why).
"""

from broker.protocol.errors import ErrorCode
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType


async def handle(ctx, header, request) -> dict:
    if not ctx.allows(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "results": []}
    topics: dict[str, list] = {}
    logs = sorted(ctx.replicas.local_logs(), key=lambda lg: (lg.topic, lg.partition))
    if request["topics"] is not None:  # a set: a hostile request may name millions of partitions
        wanted = {(t["topic"], p) for t in request["topics"] for p in t["partitions"]}
        logs = [lg for lg in logs if (lg.topic, lg.partition) in wanted]
    for partition_log in logs:
        topics.setdefault(partition_log.topic, []).append(
            {
                "partition_index": partition_log.partition,
                "partition_size": partition_log.size_in_bytes,
                "offset_lag": 0,
                "is_future_key": False,
            }
        )
    return {
        "throttle_time_ms": 0,
        "results": [
            {
                "error_code": ErrorCode.NONE,
                "log_dir": ctx.replicas.log_dir,
                "topics": [{"name": name, "partitions": partitions} for name, partitions in topics.items()],
            }
        ],
    }
