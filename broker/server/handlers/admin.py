"""CreateTopics and DeleteTopics, with Kafka's checks and error codes.

Replication factors and manual replica assignments are checked against the live brokers of the
metadata cache and the placement rules (a factor above the live brokers is INVALID_REPLICATION_FACTOR;
-1, "the default", from v4, is ``default.replication.factor``; an assignment naming a broker twice or
one not live is INVALID_REPLICA_ASSIGNMENT); a valid assignment is handed to the topic store, which
places the partitions as it says. Each topic succeeds or fails on its own, and a name given twice
in one request is refused for both (INVALID_REQUEST, as Kafka's controller does); a storage failure
(a full disk) is KAFKA_STORAGE_ERROR for that topic and changes nothing (see ``topics``). Creating and
deleting files runs on the I/O pool; ``__consumer_offsets`` is created by the group coordinator alone,
as in Kafka, and no internal topic can be created or deleted by a client (INVALID_REQUEST,
INVALID_TOPIC_EXCEPTION); a deletion waits for the appends in flight to its partitions
(it is their partitions' next writer). Creating needs Create on the cluster or on the topic,
deleting needs Delete on the topic (TOPIC_AUTHORIZATION_FAILED).
"""

from broker.cluster.placement import PlacementError, check_assignment, check_replication_factor
from broker.cluster.topic_rules import INTERNAL_TOPICS, check_not_internal
from broker.coordinator.offset_manager import OFFSETS_TOPIC
from broker.protocol.errors import ErrorCode
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType

from ..topics import TopicError
from .topic_results import per_topic

DEFAULT = -1


def _replication_factor(ctx, topic: dict) -> int:
    """The replication factor asked for (the broker's default for -1), checked (TopicError if bad)."""
    factor = (
        ctx.config.default_replication_factor if topic["replication_factor"] == DEFAULT else topic["replication_factor"]
    )
    if not topic["assignments"]:
        try:
            check_replication_factor(factor, len(ctx.metadata.alive_brokers()))
        except PlacementError as exc:
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None
    return factor


def _partition_count(ctx, topic: dict) -> int:
    """The partition count asked for, from the count or the manual assignment (TopicError if bad)."""
    assignments = topic["assignments"]
    if not assignments:
        return ctx.config.num_partitions if topic["num_partitions"] == DEFAULT else topic["num_partitions"]
    if topic["num_partitions"] != DEFAULT or topic["replication_factor"] != DEFAULT:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "give either num_partitions and replication_factor or a replica assignment, not both",
        )
    if sorted(a["partition_index"] for a in assignments) != list(range(len(assignments))):
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions must be numbered 0..n-1 without gaps")
    check_assignments(ctx, assignments)
    return len(assignments)


def requested_replicas(assignments: list[dict] | None) -> list[list[int]] | None:
    """The replica lists of a manual assignment, in partition order (None when the client gave none)."""
    if not assignments:
        return None
    return [list(a["broker_ids"]) for a in assignments]


def may_create(ctx, topic: str) -> bool:
    """Kafka's rule for creating a topic: Create on the cluster, or else on the topic."""
    return ctx.allows(Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False) or ctx.allows(
        Operation.CREATE, ResourceType.TOPIC, topic
    )


def check_assignments(ctx, assignments: list[dict]) -> None:
    """TopicError(INVALID_REPLICA_ASSIGNMENT) unless every replica list can be placed."""
    live = [broker.node_id for broker in ctx.metadata.alive_brokers()]
    for assignment in assignments:
        try:
            check_assignment(assignment["broker_ids"], live)
        except PlacementError as exc:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(exc)) from None


async def handle_create(ctx, header, request) -> dict:
    async def create(topic: dict) -> None:
        if not may_create(ctx, topic["name"]):
            raise TopicError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"not authorized to create topic {topic['name']!r}")
        if topic["name"] in INTERNAL_TOPICS:
            hint = " (its partition count is offsets.topic.num.partitions)" if topic["name"] == OFFSETS_TOPIC else ""
            raise TopicError(
                ErrorCode.INVALID_REQUEST,
                f"topic {topic['name']!r} is an internal topic, made by its coordinator alone{hint}",
            )
        configs = {c["name"]: c["value"] for c in topic["configs"]}
        await ctx.io.run(
            ctx.topics.create,
            topic["name"],
            _partition_count(ctx, topic),
            configs,
            request["validate_only"],
            requested_replicas(sorted(topic["assignments"], key=lambda a: a["partition_index"])),
            _replication_factor(ctx, topic),
        )

    return {"throttle_time_ms": 0, "topics": await per_topic(request["topics"], create)}


async def handle_delete(ctx, header, request) -> dict:
    async def delete(topic: dict) -> None:
        name = topic["name"]
        if not ctx.allows(Operation.DELETE, ResourceType.TOPIC, name):
            raise TopicError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"not authorized to delete topic {name!r}")
        check_not_internal(name, "cannot be deleted")
        if not ctx.config.delete_topic_enable:
            raise TopicError(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false")
        partitions = [(name, p) for p in range(ctx.metadata.partition_count(name) or 0)]
        await ctx.io.write(partitions, ctx.topics.delete, name)  # after the appends in flight

    results = await per_topic([{"name": name} for name in request["topic_names"]], delete)
    return {"throttle_time_ms": 0, "responses": [{"name": r["name"], "error_code": r["error_code"]} for r in results]}
