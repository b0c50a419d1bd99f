"""DescribeLogDirs (v0-1): the size on disk of each partition, in this broker's one log directory.

A null topic list means every partition; partitions this broker does not hold are left out, as
Kafka does. With a single replica the offset lag is always 0, and there are no future logs.
"""

from broker.protocol.errors import ErrorCode


def _wanted(request_topics, partition_log) -> bool:
    if request_topics is None:
        return True
    return any(t["topic"] == partition_log.topic and partition_log.partition in t["partitions"]
               for t in request_topics)


async def handle(ctx, header, request) -> dict:
    topics: dict[str, list] = {}
    logs = sorted(ctx.log_manager.all_logs(), key=lambda lg: (lg.topic, lg.partition))
    for partition_log in (lg for lg in logs if _wanted(request["topics"], lg)):
        topics.setdefault(partition_log.topic, []).append({
            "partition_index": partition_log.partition, "partition_size": partition_log.size_in_bytes,
            "offset_lag": 0, "is_future_key": False})
    return {"throttle_time_ms": 0, "results": [{
        "error_code": ErrorCode.NONE, "log_dir": ctx.log_manager.log_dir,
        "topics": [{"name": name, "partitions": partitions} for name, partitions in topics.items()]}]}
