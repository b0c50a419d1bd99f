"""InitProducerId: a fresh producer id (epoch 0) for an idempotent producer.

Transactions are not supported: a request with a transactional id is refused with INVALID_REQUEST.
"""

from broker.protocol.errors import ErrorCode


async def handle(ctx, header, request) -> dict:
    if request["transactional_id"] is not None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST, "producer_id": -1,
                "producer_epoch": -1}
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": await ctx.io.run(ctx.producer_ids.next_id),
            "producer_epoch": 0}
