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

A consumer (``replica_id`` -1) reads below the high watermark only; a follower broker
(``replica_id`` its broker id) reads up to the log end, and its fetch offset is recorded as its log
end offset on the leader (which may move the high watermark and wake the fetches waiting on it);
it needs ClusterAction on the cluster, as in Kafka (CLUSTER_AUTHORIZATION_FAILED).
"""

import time

from broker.log.errors import LogDeletedError, OffsetOutOfRangeError
from broker.log.file_records import FileSlice, iter_headers
from broker.protocol.apis import READ_COMMITTED
from broker.protocol.errors import ErrorCode
from broker.replica.replica_manager import PartitionError
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType

from .partition_lists import distinct


def _next_offset_after(found: FileSlice) -> int:
    """The offset after the last batch of a slice read from a log."""
    last_offset = -1
    for _, header in iter_headers(found.file.fileno(), found.position, found.position + found.size):
        last_offset = header.last_offset
    return last_offset + 1


def _read(ctx, topics, max_bytes: int, replica_id: int, read_committed: bool):
    """One pass over the partitions: ``(responses, bytes found, any partition failed)`` (on an I/O
    thread); up to the log end for a follower (``replica_id`` >= 0), below the high watermark for a
    consumer (below the last stable offset under ``read_committed``)."""
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
            if replica_id >= 0 and replica_id not in partition.state.replicas:
                data["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
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
                    committed_only=replica_id < 0,
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


def _record_follower_fetches(ctx, replica: int, topics) -> None:
    """A follower's fetch tells the leader how far its log reaches: fetches waiting for the high
    watermark of a partition it moved are woken. A broker that is no replica of a partition it
    names is not recorded (its read answers the error)."""
    for name, partitions in topics:
        for wanted in partitions:
            try:
                partition = ctx.replicas.leader_partition(name, wanted["partition"], wanted["current_leader_epoch"])
                moved = ctx.replicas.record_follower_fetch(partition, replica, wanted["fetch_offset"])
            except PartitionError:
                continue
            if moved:
                ctx.waiters.notify((name, wanted["partition"]))


async def handle(ctx, header, request) -> dict:
    deadline = time.monotonic() + max(request["max_wait_ms"], 0) / 1000
    topics = distinct(request["topics"], "topic", "partition")
    wanted = [(name, p["partition"]) for name, partitions in topics for p in partitions]
    max_bytes = min(request["max_bytes"], ctx.config.fetch_max_bytes)
    from_follower = request["replica_id"] >= 0
    if from_follower and not ctx.allows(Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "session_id": 0,
            "responses": [],
        }
    if from_follower:
        _record_follower_fetches(ctx, request["replica_id"], topics)
    read_committed = header.api_version >= 4 and request["isolation_level"] == READ_COMMITTED
    while True:
        with ctx.waiters.watching(wanted) as wait_for_data:
            responses, total, failed = await ctx.io.run(
                _read, ctx, topics, max_bytes, request["replica_id"], read_committed
            )
            remaining = deadline - time.monotonic()
            if failed or total >= request["min_bytes"] or remaining <= 0 or ctx.stopping:
                return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}
            await wait_for_data(remaining)
