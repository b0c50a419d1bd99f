"""InitProducerId: a fresh producer id (epoch 0) for an idempotent producer.

Transactions are not supported: a request with a transactional id is refused with INVALID_REQUEST.
An idempotent producer needs IdempotentWrite on the cluster or, as since Kafka 3.0, Write on some
topic (CLUSTER_AUTHORIZATION_FAILED).
"""

from broker.protocol.errors import ErrorCode
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType


async def handle(ctx, header, request) -> dict:
    if request["transactional_id"] is not None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST, "producer_id": -1, "producer_epoch": -1}
    if not (
        ctx.allows(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False)
        or ctx.allows_any(Operation.WRITE, ResourceType.TOPIC)
    ):
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    producer_id = await ctx.io.run(ctx.producer_ids.next_id)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": producer_id, "producer_epoch": 0}
