"""Fetch: whole batches from the one containing each fetch offset, as file slices (large ones sent with sendfile).

Every requested partition is in the response, in request order, even when it has nothing (a full
fetch response must list them all); a partition named more than once is answered once, at its
first place with its last fetch position, as Kafka's request map does. ``records`` is never null.
The response size budget is ``max_bytes`` but never more than the broker's ``fetch.max.bytes``
(55 MiB by default, whatever the request asks); it is soft for the first partition that has data,
as in Kafka (KIP-74). The reads run on the I/O pool. With less than ``min_bytes`` available the
request waits, up to ``max_wait_ms``, for new data in any of its partitions (a marker that moves
the last stable offset wakes it too). There are no fetch sessions (``session_id`` 0). With
``isolation_level`` 1 (read_committed, v4+) only batches below the last stable offset are returned,
with the aborted transactions (producer id, first offset) overlapping them; with 0 the aborted list
is empty. Each topic needs Read (TOPIC_AUTHORIZATION_FAILED).
"""

import time

from broker.log.errors import LogDeletedError, OffsetOutOfRangeError
from broker.log.file_records import FileSlice, iter_headers
from broker.protocol.errors import ErrorCode
from broker.replica.replica_manager import PartitionError
from broker.security.acls import Operation, ResourceType

from .partition_lists import distinct

READ_COMMITTED = 1


def _next_offset_after(found: FileSlice) -> int:
    """The offset after the last batch of a slice read from a log."""
    last_offset = -1
    for _, header in iter_headers(found.file.fileno(), found.position, found.position + found.size):
        last_offset = header.last_offset
    return last_offset + 1


def _read(ctx, topics, max_bytes: int, read_committed: bool):
    """One pass over the partitions: ``(responses, bytes found, any partition failed)`` (on an I/O thread)."""
    budget = max_bytes
    min_one_batch = True
    total = 0
    failed = False
    responses = []
    for name, wanted_partitions in topics:
        partitions = []
        for wanted in wanted_partitions:
            data = {
                "partition_index": wanted["partition"],
                "error_code": ErrorCode.NONE,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": [],
                "preferred_read_replica": -1,
                "records": b"",
            }
            partitions.append(data)
            if not ctx.allows(Operation.READ, ResourceType.TOPIC, name):
                data["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                failed = True
                continue
            try:
                partition = ctx.replicas.leader_partition(name, wanted["partition"], wanted["current_leader_epoch"])
            except PartitionError as exc:
                data["error_code"] = exc.code
                failed = True
                continue
            high_watermark = partition.high_watermark
            last_stable_offset = partition.last_stable_offset
            data.update(
                high_watermark=high_watermark,
                last_stable_offset=last_stable_offset,
                log_start_offset=partition.log_start_offset,
            )
            limit = min(wanted["partition_max_bytes"], budget)
            if limit <= 0 and not min_one_batch:
                continue
            try:
                found = partition.read(
                    wanted["fetch_offset"],
                    max(limit, 0),
                    min_one_batch,
                    max_offset=last_stable_offset if read_committed else None,
                )
            except OffsetOutOfRangeError:
                data["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                failed = True
                continue
            except LogDeletedError:  # the topic was deleted after the partition was looked up
                data["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                failed = True
                continue
            if found is not None:
                data["records"] = found
                if read_committed:
                    upper_bound = _next_offset_after(found)
                    data["aborted_transactions"] = [
                        {"producer_id": producer_id, "first_offset": first_offset}
                        for producer_id, first_offset in partition.aborted_transactions(
                            wanted["fetch_offset"], upper_bound
                        )
                    ]
                total += found.size
                budget -= found.size
                min_one_batch = False
        responses.append({"topic": name, "partitions": partitions})
    return responses, total, failed


async def handle(ctx, header, request) -> dict:
    deadline = time.monotonic() + max(request["max_wait_ms"], 0) / 1000
    topics = distinct(request["topics"], "topic", "partition")
    wanted = [(name, p["partition"]) for name, partitions in topics for p in partitions]
    max_bytes = min(request["max_bytes"], ctx.config.fetch_max_bytes)
    read_committed = header.api_version >= 4 and request["isolation_level"] == READ_COMMITTED
    while True:
        with ctx.waiters.watching(wanted) as wait_for_data:
            responses, total, failed = await ctx.io.run(_read, ctx, topics, max_bytes, read_committed)
            remaining = deadline - time.monotonic()
            if failed or total >= request["min_bytes"] or remaining <= 0 or ctx.stopping:
                return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}
            await wait_for_data(remaining)
