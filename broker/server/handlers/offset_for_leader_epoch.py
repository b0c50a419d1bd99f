"""OffsetForLeaderEpoch: where a leader epoch ends in the log of a partition this broker leads.

For each partition the answer is the largest epoch at or below the one asked and the offset where
the next epoch starts (the log end for the current epoch), from the partition's leader epoch
cache; ``(-1, -1)`` when the log knows no such epoch. A follower cuts its log there before it
fetches, so a tail the leader does not have is removed; a consumer (KIP-320) checks its position.
``current_leader_epoch`` (v2+) fences a stale requester (FENCED_LEADER_EPOCH) and tells one ahead
of this broker to retry (UNKNOWN_LEADER_EPOCH). A partition not led here is NOT_LEADER_OR_FOLLOWER
(UNKNOWN_TOPIC_OR_PARTITION if the cluster does not have it). As in Kafka, ClusterAction on the
cluster (brokers) or Describe on the topic (consumers) allows a topic, whatever the ``replica_id``
(v3+, the follower's id or -1). A partition named more than once is answered once per mention."""

from broker.log.errors import LogDeletedError
from broker.protocol.errors import ErrorCode
from broker.replica.replica_manager import PartitionError
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType


async def handle(ctx, header, request) -> dict:
    return await ctx.io.run(_offsets_for_leader_epochs, ctx, request)


def _offsets_for_leader_epochs(ctx, request) -> dict:
    cluster_action = ctx.allows(Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False)
    topics = []
    for topic in request["topics"]:
        allowed = cluster_action or ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, topic["topic"])
        partitions = []
        for wanted in topic["partitions"]:
            result = {
                "error_code": ErrorCode.NONE,
                "partition": wanted["partition"],
                "leader_epoch": -1,
                "end_offset": -1,
            }
            if not allowed:
                result["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                partitions.append(result)
                continue
            try:
                partition = ctx.replicas.leader_partition(
                    topic["topic"], wanted["partition"], wanted["current_leader_epoch"]
                )
                result["leader_epoch"], result["end_offset"] = partition.end_offset_for_epoch(wanted["leader_epoch"])
            except PartitionError as exc:
                result["error_code"] = exc.code
            except LogDeletedError:  # the topic was deleted after the partition was looked up
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            partitions.append(result)
        topics.append({"topic": topic["topic"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}
