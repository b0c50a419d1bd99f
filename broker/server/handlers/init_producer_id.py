"""InitProducerId: a fresh producer id (epoch 0) for an idempotent producer, or, with a
transactional id, the id's producer id and its next epoch from the transaction coordinator (which
fences the id's previous producer and aborts its open transaction: CONCURRENT_TRANSACTIONS until
that is done, and the client retries).

An idempotent
producer needs IdempotentWrite on the cluster or, as since Kafka 3.0, Write on some topic
(CLUSTER_AUTHORIZATION_FAILED); a transactional one Write on its transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from broker.protocol.errors import ErrorCode
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType

from ..topics import TopicError


def _refused(code: ErrorCode) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}


async def handle(ctx, header, request) -> dict:
    transactional_id = request["transactional_id"]
    if transactional_id is not None:
        return await _transactional(ctx, transactional_id, request["transaction_timeout_ms"])
    if not (
        ctx.allows(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False)
        or ctx.allows_any(Operation.WRITE, ResourceType.TOPIC)
    ):
        return _refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    producer_id = await ctx.io.run(ctx.producer_ids.next_id)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": producer_id, "producer_epoch": 0}


async def _transactional(ctx, transactional_id: str, timeout_ms: int) -> dict:
    if not ctx.allows(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return _refused(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    try:
        await ctx.transactions.ensure_topic()
    except TopicError:
        return _refused(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    fresh = await ctx.io.run(ctx.producer_ids.next_id)  # used if the id is new (else one id goes unused)
    code, producer_id, epoch = await ctx.transactions.wait(
        ctx.transactions.coordinator.init_producer_id, transactional_id, timeout_ms, fresh
    )
    if code != ErrorCode.NONE:
        return _refused(code)
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": producer_id, "producer_epoch": epoch}
