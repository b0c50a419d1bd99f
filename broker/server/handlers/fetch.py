"""Fetch: whole batches from the one containing each fetch offset, as file slices (large ones sent with sendfile).

Every requested partition is in the response, in request order, even when it has nothing (a full
fetch response must list them all). ``records`` is never null. The response size budget
(``max_bytes``) is soft for the first partition that has data, as in Kafka (KIP-74). With less
than ``min_bytes`` available the request waits, up to ``max_wait_ms``, for new data in any of its
partitions. There are no fetch sessions (``session_id`` 0) and no transactions (the last stable
offset is the high watermark, the aborted list is empty).
"""

import time

from broker.log.errors import OffsetOutOfRangeError
from broker.protocol.errors import ErrorCode

from ..context import LEADER_EPOCH


def _check_leader_epoch(requested: int) -> ErrorCode:
    return ErrorCode.UNKNOWN_LEADER_EPOCH if requested > LEADER_EPOCH else ErrorCode.NONE


def _read(ctx, request):
    """One pass over the requested partitions: ``(responses, bytes found, any partition failed)``."""
    budget = request["max_bytes"]
    min_one_batch = True
    total = 0
    failed = False
    responses = []
    for topic in request["topics"]:
        partitions = []
        for wanted in topic["partitions"]:
            data = {"partition_index": wanted["partition"], "error_code": ErrorCode.NONE, "high_watermark": -1,
                    "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": [],
                    "preferred_read_replica": -1, "records": b""}
            partitions.append(data)
            log = ctx.log_manager.get_log(topic["topic"], wanted["partition"])
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if log is None else \
                _check_leader_epoch(wanted["current_leader_epoch"])
            if error:
                data["error_code"] = error
                failed = True
                continue
            high_watermark = log.high_watermark
            data.update(high_watermark=high_watermark, last_stable_offset=high_watermark,
                        log_start_offset=log.log_start_offset)
            limit = min(wanted["partition_max_bytes"], budget)
            if limit <= 0 and not min_one_batch:
                continue
            try:
                found = log.read(wanted["fetch_offset"], max(limit, 0), min_one_batch=min_one_batch)
            except OffsetOutOfRangeError:
                data["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                failed = True
                continue
            if found is not None:
                data["records"] = found
                total += found.size
                budget -= found.size
                min_one_batch = False
        responses.append({"topic": topic["topic"], "partitions": partitions})
    return responses, total, failed


async def handle(ctx, header, request) -> dict:
    deadline = time.monotonic() + max(request["max_wait_ms"], 0) / 1000
    wanted = [(t["topic"], p["partition"]) for t in request["topics"] for p in t["partitions"]]
    while True:
        responses, total, failed = _read(ctx, request)
        remaining = deadline - time.monotonic()
        if failed or total >= request["min_bytes"] or remaining <= 0 or ctx.stopping:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}
        await ctx.waiters.wait(wanted, remaining)
