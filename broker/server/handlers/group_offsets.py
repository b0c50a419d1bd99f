"""OffsetCommit, OffsetFetch and OffsetDelete: a group's committed offsets, kept by the offset manager.

A commit is answered once its records are appended to ``__consumer_offsets`` (under the log's
flush policy). A partition of a topic that does not exist is refused with
UNKNOWN_TOPIC_OR_PARTITION and not stored, as Kafka does; the others of the request go on.
OffsetFetch gives -1 (and empty metadata) for a partition with no commit; from v2 ``topics=null``
asks for all of the group's offsets, and errors of the whole group go in the top-level error
code (per partition before v2). The partitions asked for carry the group's error too: Kafka's answer
from v2 lists none, and aiokafka, which reads only the partitions' errors, would take a group still
loading (COORDINATOR_LOAD_IN_PROGRESS) for one with no commit.
Authorization is Kafka's: OffsetCommit needs Read on the group and on each topic, OffsetFetch
Describe on both (an all-offsets fetch leaves out the topics it may not Describe), OffsetDelete
Delete on the group and Read on each topic; GROUP_AUTHORIZATION_FAILED for the whole request,
TOPIC_AUTHORIZATION_FAILED for the partitions of a topic.
"""

from broker.coordinator.group_coordinator import OffsetCommit
from broker.protocol.errors import ErrorCode
from broker.security.acls import Operation, ResourceType

FIRST_TOP_LEVEL_ERROR_VERSION = 2


def _exists(ctx, topic: str, partition: int) -> bool:
    return 0 <= partition < (ctx.topics.partitions(topic) or 0)


def _topic_errors(ctx, order: list, operation: Operation) -> dict:
    """TOPIC_AUTHORIZATION_FAILED for each partition of a topic the session may not ``operation``."""
    refused = {
        name for name in dict.fromkeys(name for name, _ in order) if not ctx.allows(operation, ResourceType.TOPIC, name)
    }
    return {key: ErrorCode.TOPIC_AUTHORIZATION_FAILED for key in order if key[0] in refused}


def _by_topic(results: dict, order: list, partition_response) -> list[dict]:
    topics: dict[str, list] = {}
    for topic, partition in order:
        topics.setdefault(topic, []).append(partition_response(partition, results[(topic, partition)]))
    return [{"name": name, "partitions": partitions} for name, partitions in topics.items()]


async def handle_commit(ctx, header, request) -> dict:
    order = [(t["name"], p["partition_index"]) for t in request["topics"] for p in t["partitions"]]
    if not ctx.allows(Operation.READ, ResourceType.GROUP, request["group_id"]):
        return {
            "throttle_time_ms": 0,
            "topics": _by_topic(
                dict.fromkeys(order, ErrorCode.GROUP_AUTHORIZATION_FAILED),
                order,
                lambda partition, error: {"partition_index": partition, "error_code": error},
            ),
        }
    refused = _topic_errors(ctx, order, Operation.READ)
    commits = [
        OffsetCommit(
            t["name"], p["partition_index"], p["committed_offset"], p["committed_leader_epoch"], p["committed_metadata"]
        )
        for t in request["topics"]
        for p in t["partitions"]
        if (t["name"], p["partition_index"]) not in refused and _exists(ctx, t["name"], p["partition_index"])
    ]
    results = {key: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for key in order} | refused
    if commits:
        coordinator = ctx.groups.coordinator
        results.update(
            await ctx.groups.wait(
                coordinator.commit_offsets,
                request["group_id"],
                request["generation_id_or_member_epoch"],
                request["member_id"],
                request["group_instance_id"],
                request["retention_time_ms"],
                commits,
            )
        )
    return {
        "throttle_time_ms": 0,
        "topics": _by_topic(
            results, order, lambda partition, error: {"partition_index": partition, "error_code": error}
        ),
    }


async def handle_fetch(ctx, header, request) -> dict:
    wanted = (
        None
        if request["topics"] is None
        else [(t["name"], p) for t in request["topics"] for p in t["partition_indexes"]]
    )
    refused = {}
    if not ctx.allows(Operation.DESCRIBE, ResourceType.GROUP, request["group_id"]):
        error, offsets = ErrorCode.GROUP_AUTHORIZATION_FAILED, {}
    else:
        refused = {} if wanted is None else _topic_errors(ctx, wanted, Operation.DESCRIBE)
        error, offsets = ctx.groups.call(
            ctx.groups.coordinator.fetch_offsets,
            request["group_id"],
            None if wanted is None else [key for key in wanted if key not in refused],
        )
        if wanted is None:  # all of the group's offsets: only of the topics it may describe
            offsets = {
                key: value
                for key, value in offsets.items()
                if ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, key[0], log_denied=False)
            }
    per_partition_error = ErrorCode.NONE
    if error and wanted is None:  # all offsets asked (v2+): the group's error alone, as Kafka answers it
        return {"throttle_time_ms": 0, "error_code": error, "topics": []}
    if error and wanted is not None:  # each partition asked carries the group's error too: aiokafka reads only these
        per_partition_error, offsets = error, {p: None for p in wanted}
        if header.api_version < FIRST_TOP_LEVEL_ERROR_VERSION:
            error = ErrorCode.NONE

    def partition_response(partition: int, value) -> dict:
        if value is ErrorCode.TOPIC_AUTHORIZATION_FAILED:
            return {
                "partition_index": partition,
                "committed_offset": -1,
                "committed_leader_epoch": -1,
                "metadata": "",
                "error_code": value,
            }
        return {
            "partition_index": partition,
            "committed_offset": -1 if value is None else value.offset,
            "committed_leader_epoch": -1 if value is None else value.leader_epoch,
            "metadata": "" if value is None else value.metadata,
            "error_code": per_partition_error,
        }

    order = list(offsets) if wanted is None else wanted
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "topics": _by_topic({key: None for key in order} | offsets | refused, order, partition_response),
    }


async def handle_delete(ctx, header, request) -> dict:
    order = [(t["name"], p["partition_index"]) for t in request["topics"] for p in t["partitions"]]
    if not ctx.allows(Operation.DELETE, ResourceType.GROUP, request["group_id"]):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "throttle_time_ms": 0, "topics": []}
    refused = _topic_errors(ctx, order, Operation.READ)
    known = [key for key in order if key not in refused and _exists(ctx, *key)]
    error, results = await ctx.groups.wait(ctx.groups.coordinator.delete_offsets, request["group_id"], known)
    results = {**{key: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for key in order}, **results, **refused}
    topics = (
        []
        if error
        else _by_topic(results, order, lambda partition, code: {"partition_index": partition, "error_code": code})
    )
    return {"error_code": error, "throttle_time_ms": 0, "topics": topics}
