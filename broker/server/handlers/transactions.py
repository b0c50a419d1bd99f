"""AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit: a transactional producer's calls
to its transaction coordinator (``ctx.transactions``) and, for TxnOffsetCommit, to the group
coordinator (``ctx.groups``); DescribeTransactions and ListTransactions, the transaction tools'
view of the ids this broker coordinates.

Answers come once the coordinator's record is appended to ``__transaction_state``. Versions 0-1 of
AddPartitionsToTxn, AddOffsetsToTxn and EndTxn predate PRODUCER_FENCED: a fenced producer is told
INVALID_PRODUCER_EPOCH there, as Kafka does. AddOffsetsToTxn adds the group's partition of
``__consumer_offsets`` to the transaction; TxnOffsetCommit holds the offsets in the group
coordinator until the transaction's marker reaches that partition (committed then, or dropped on
abort). TxnOffsetCommit v0-1 are told COORDINATOR_NOT_AVAILABLE for COORDINATOR_LOAD_IN_PROGRESS.
Authorization is Kafka's: Write on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for
all four; Write on each topic added (TOPIC_AUTHORIZATION_FAILED, the other partitions then
OPERATION_NOT_ATTEMPTED); Read on the group for AddOffsetsToTxn and TxnOffsetCommit
(GROUP_AUTHORIZATION_FAILED) and on each topic committed for TxnOffsetCommit; Describe on the
transactional id for DescribeTransactions (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and
ListTransactions (ids the principal may not Describe are left out).
"""

from broker.coordinator.group_coordinator import OffsetCommit
from broker.coordinator.offset_manager import OFFSETS_TOPIC
from broker.coordinator.transaction_metadata import TxnState
from broker.protocol.errors import ErrorCode
from broker.security.acls import Operation, ResourceType

from ..topics import TopicError

FIRST_PRODUCER_FENCED_VERSION = 2
FIRST_LOAD_IN_PROGRESS_TXN_OFFSET_COMMIT_VERSION = 2


def fenced_for(version: int, code: ErrorCode) -> ErrorCode:
    """PRODUCER_FENCED as a request of ``version`` knows it."""
    if code == ErrorCode.PRODUCER_FENCED and version < FIRST_PRODUCER_FENCED_VERSION:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


def _may_write_id(ctx, transactional_id: str) -> bool:
    return ctx.allows(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)


async def handle_add_partitions(ctx, header, request) -> dict:
    order = [(t["name"], p) for t in request["topics"] for p in t["partitions"]]
    results: dict[tuple[str, int], ErrorCode] = {}
    if not _may_write_id(ctx, request["transactional_id"]):
        results = dict.fromkeys(order, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        for topic, partition in order:
            if not ctx.allows(Operation.WRITE, ResourceType.TOPIC, topic):
                results[(topic, partition)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not 0 <= partition < (ctx.topics.partitions(topic) or 0):
                results[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if results:  # nothing is added when any partition is refused
            results = {key: results.get(key, ErrorCode.OPERATION_NOT_ATTEMPTED) for key in order}
        else:
            code = await ctx.transactions.wait(
                ctx.transactions.coordinator.add_partitions,
                request["transactional_id"],
                request["producer_id"],
                request["producer_epoch"],
                order,
            )
            results = dict.fromkeys(order, fenced_for(header.api_version, code))
    topics: dict[str, list] = {}
    for (topic, partition), code in results.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": code})
    return {
        "throttle_time_ms": 0,
        "results_by_topic": [{"name": n, "results_by_partition": r} for n, r in topics.items()],
    }


async def handle_add_offsets(ctx, header, request) -> dict:
    if not _may_write_id(ctx, request["transactional_id"]):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.allows(Operation.READ, ResourceType.GROUP, request["group_id"]):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif not request["group_id"]:
        code = ErrorCode.INVALID_GROUP_ID
    else:
        try:
            await ctx.groups.ensure_topic()
        except TopicError:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE}
        partition = ctx.groups.coordinator.offsets.partition_of(request["group_id"])
        code = await ctx.transactions.wait(
            ctx.transactions.coordinator.add_partitions,
            request["transactional_id"],
            request["producer_id"],
            request["producer_epoch"],
            [(OFFSETS_TOPIC, partition)],
        )
    return {"throttle_time_ms": 0, "error_code": fenced_for(header.api_version, code)}


async def handle_end_txn(ctx, header, request) -> dict:
    if not _may_write_id(ctx, request["transactional_id"]):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        code = await ctx.transactions.wait(
            ctx.transactions.coordinator.end_txn,
            request["transactional_id"],
            request["producer_id"],
            request["producer_epoch"],
            request["committed"],
        )
    return {"throttle_time_ms": 0, "error_code": fenced_for(header.api_version, code)}


async def handle_txn_offset_commit(ctx, header, request) -> dict:
    order = [(t["name"], p["partition_index"]) for t in request["topics"] for p in t["partitions"]]
    results: dict[tuple[str, int], ErrorCode] = {}
    if not _may_write_id(ctx, request["transactional_id"]):
        results = dict.fromkeys(order, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif not ctx.allows(Operation.READ, ResourceType.GROUP, request["group_id"]):
        results = dict.fromkeys(order, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    else:
        commits = []
        for t in request["topics"]:
            allowed = ctx.allows(Operation.READ, ResourceType.TOPIC, t["name"])
            for p in t["partitions"]:
                key = (t["name"], p["partition_index"])
                if not allowed:
                    results[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif not 0 <= key[1] < (ctx.topics.partitions(key[0]) or 0):
                    results[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    commits.append(
                        OffsetCommit(
                            key[0],
                            key[1],
                            p["committed_offset"],
                            p["committed_leader_epoch"],
                            p["committed_metadata"],
                        )
                    )
        if commits:
            results.update(await _txn_commit(ctx, request["transactional_id"], request["group_id"], request, commits))
    if header.api_version < FIRST_LOAD_IN_PROGRESS_TXN_OFFSET_COMMIT_VERSION:
        results = {
            key: ErrorCode.COORDINATOR_NOT_AVAILABLE if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else code
            for key, code in results.items()
        }
    topics: dict[str, list] = {}
    for topic, partition in order:
        topics.setdefault(topic, []).append({"partition_index": partition, "error_code": results[(topic, partition)]})
    return {"throttle_time_ms": 0, "topics": [{"name": n, "partitions": p} for n, p in topics.items()]}


async def _txn_commit(ctx, transactional_id: str, group_id: str, request, commits: list[OffsetCommit]) -> dict:
    """The offsets held for the transaction, once the producer is known to be its current one (when
    the id's coordinator is this broker; another one's is not asked)."""
    code, metadata = ctx.transactions.coordinator.describe(transactional_id)
    if code == ErrorCode.NOT_COORDINATOR:
        code = ErrorCode.NONE
    elif code == ErrorCode.NONE and metadata is not None:
        if metadata.producer_id != request["producer_id"]:
            code = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif metadata.producer_epoch != request["producer_epoch"]:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        elif (OFFSETS_TOPIC, ctx.groups.coordinator.offsets.partition_of(group_id)) not in metadata.partitions:
            code = ErrorCode.INVALID_TXN_STATE  # AddOffsetsToTxn first
    elif code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
        code = ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if code != ErrorCode.NONE:
        return {(c.topic, c.partition): code for c in commits}
    return ctx.groups.call(ctx.groups.coordinator.txn_commit_offsets, group_id, request["producer_id"], commits)


async def handle_describe_transactions(ctx, header, request) -> dict:
    coordinator = ctx.transactions.coordinator
    states = []
    for transactional_id in dict.fromkeys(request["transactional_ids"]):
        answer = {
            "error_code": ErrorCode.NONE,
            "transactional_id": transactional_id,
            "transaction_state": "",
            "transaction_timeout_ms": 0,
            "transaction_start_time_ms": -1,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
        if not ctx.allows(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            answer["error_code"] = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        else:
            code, metadata = coordinator.describe(transactional_id)
            answer["error_code"] = code
            if metadata is not None:
                by_topic: dict[str, list[int]] = {}
                for topic, partition in sorted(metadata.partitions):
                    by_topic.setdefault(topic, []).append(partition)
                answer.update(
                    transaction_state=metadata.state.display_name,
                    transaction_timeout_ms=metadata.timeout_ms,
                    transaction_start_time_ms=metadata.start_ms,
                    producer_id=metadata.producer_id,
                    producer_epoch=metadata.producer_epoch,
                    topics=[{"topic": t, "partitions": p} for t, p in by_topic.items()],
                )
        states.append(answer)
    return {"throttle_time_ms": 0, "transaction_states": states}


async def handle_list_transactions(ctx, header, request) -> dict:
    coordinator = ctx.transactions.coordinator
    wanted = {name: TxnState.from_name(name) for name in request["state_filters"]}
    unknown = [name for name, state in wanted.items() if state is None]
    now = coordinator.clock()
    duration = request["duration_filter"]
    listed = [
        m
        for m in coordinator.list_transactions(
            [s for s in wanted.values() if s is not None], request["producer_id_filters"]
        )
        if (not wanted or any(s is not None for s in wanted.values()))
        and (duration < 0 or (m.state is TxnState.ONGOING and now - m.start_ms >= duration))
        and ctx.allows(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, m.transactional_id, log_denied=False)
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if coordinator.loading else ErrorCode.NONE,
        "unknown_state_filters": unknown,
        "transaction_states": [
            {
                "transactional_id": m.transactional_id,
                "producer_id": m.producer_id,
                "transaction_state": m.state.display_name,
            }
            for m in listed
        ],
    }
