"""WriteTxnMarkers (v0): the request a transaction coordinator sends to each partition's leader to
close a producer's transaction with a COMMIT or ABORT marker (``ReplicaManager.append_txn_marker``).

It needs ClusterAction or Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED for every partition
otherwise, as Kafka's). Each partition is answered on its own: Kafka's error when it is not led here,
INVALID_PRODUCER_EPOCH for a marker from an older producer epoch, TRANSACTION_COORDINATOR_FENCED for
one from an older coordinator epoch, KAFKA_STORAGE_ERROR when it cannot be written. Each marker is a
write of its partition on the I/O pool, in order with that partition's appends; fetches waiting on
the partition are woken (its last stable offset may have moved).
"""

from broker.log import errors as log_errors
from broker.protocol.errors import ErrorCode
from broker.replica.replica_manager import PartitionError
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType

_LOG_ERRORS = {
    log_errors.InvalidProducerEpochError: ErrorCode.INVALID_PRODUCER_EPOCH,
    log_errors.TransactionCoordinatorFencedError: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    log_errors.LogDeletedError: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
}


def _write_marker(ctx, topic: str, partition: int, marker: dict) -> ErrorCode:
    """The partition's error code (on an I/O thread)."""
    try:
        ctx.replicas.append_txn_marker(
            (topic, partition),
            marker["producer_id"],
            marker["producer_epoch"],
            marker["coordinator_epoch"],
            marker["transaction_result"],
        )
    except PartitionError as exc:
        return exc.code
    except log_errors.LogError as exc:
        return _LOG_ERRORS.get(type(exc), ErrorCode.KAFKA_STORAGE_ERROR)
    except OSError:
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode.NONE


async def handle(ctx, header, request) -> dict:
    authorized = ctx.allows(
        Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False
    ) or ctx.allows(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
    markers = []
    for marker in request["markers"]:
        topics = []
        for topic in marker["topics"]:
            partitions = []
            for index in topic["partition_indexes"]:
                code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                if authorized:
                    key = (topic["name"], index)
                    code = await ctx.io.write([key], _write_marker, ctx, topic["name"], index, marker)
                    if code == ErrorCode.NONE:
                        ctx.waiters.notify(key)
                partitions.append({"partition_index": index, "error_code": code})
            topics.append({"name": topic["name"], "partitions": partitions})
        markers.append({"producer_id": marker["producer_id"], "topics": topics})
    return {"markers": markers}
