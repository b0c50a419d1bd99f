"""Metadata: the live brokers, the controller and each topic's partitions (leader, leader epoch,
replicas, in-sync replicas), from the metadata cache.

Each broker's address is its endpoint for the listener the request came in on (``ctx.session``), as
in Kafka: a client of the TLS listener is sent to the TLS ports, one of the plaintext listener to
theirs; a broker without that listener is not named.

``__consumer_offsets`` asked for is created by the group coordinator (as Kafka creates its
internal topics); no other internal topic is auto-created. Unknown topics are created on the spot
when ``auto.create.topics.enable`` (and, from v4, the request) allow it (on the I/O pool), so
clients get the new topic's metadata at once. Version 0 asks for all topics with an empty list;
later versions with null (an empty list then means none). A topic named twice is answered once,
as Kafka's set of names does (a small request naming a topic of many partitions a thousand times
would otherwise get a response a thousand times its size).

Authorization is Kafka's: a topic the principal may not Describe is left out of an all-topics
answer and is TOPIC_AUTHORIZATION_FAILED when named (its existence is not disclosed); creating an
unknown topic needs Create on the cluster or on the topic (TOPIC_AUTHORIZATION_FAILED otherwise).
From v8 a client may ask which operations it is allowed on the cluster and on each topic: those
the authorizer allows the principal (with no authorizer, every operation the resource supports).
"""

from broker.cluster.metadata_cache import NO_LEADER
from broker.cluster.topic_rules import INTERNAL_TOPICS
from broker.coordinator.offset_manager import OFFSETS_TOPIC
from broker.protocol.apis import UNREQUESTED_AUTHORIZED_OPERATIONS
from broker.protocol.errors import ErrorCode
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType, operations_bits

from ..topics import TopicError
from .admin import may_create


def _operations(ctx, requested: bool, resource_type: ResourceType, name: str) -> int:
    return (
        operations_bits(ctx.allowed_operations(resource_type, name)) if requested else UNREQUESTED_AUTHORIZED_OPERATIONS
    )


def _refused(name: str) -> dict:
    return {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": name, "partitions": []}


def _topic_metadata(name: str, partitions, operations: int) -> dict:
    return {
        "error_code": ErrorCode.NONE,
        "name": name,
        "is_internal": name in INTERNAL_TOPICS,
        "topic_authorized_operations": operations,
        "partitions": [
            {
                "error_code": ErrorCode.LEADER_NOT_AVAILABLE if state.leader == NO_LEADER else ErrorCode.NONE,
                "partition_index": index,
                "leader_id": state.leader,
                "leader_epoch": state.leader_epoch,
                "replica_nodes": list(state.replicas),
                "isr_nodes": list(state.isr),
                "offline_replicas": [],
            }
            for index, state in enumerate(partitions)
        ],
    }


def _brokers(brokers, listener: str) -> list[dict]:
    """Each live broker's endpoint for ``listener``; a broker without that listener is left out, as
    Kafka leaves it out (a client could not reach it with this listener's security protocol)."""
    answered = []
    for broker in brokers:
        endpoint = broker.endpoint(listener)
        if endpoint is not None:
            answered.append(
                {"node_id": broker.node_id, "host": endpoint.host, "port": endpoint.port, "rack": broker.rack}
            )
    return answered


async def handle(ctx, header, request) -> dict:
    requested = request["topics"]
    all_topics = requested is None or (header.api_version == 0 and not requested)
    if all_topics:
        names = ctx.metadata.topic_names()
    else:
        names = list(dict.fromkeys(t["name"] for t in requested))  # a topic named twice is answered once
    auto_create = ctx.config.auto_create_topics and request["allow_auto_topic_creation"]
    topics = []
    for name in names:
        if not ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, name, log_denied=not all_topics):
            if not all_topics:  # an all-topics answer just leaves it out, as Kafka's does
                topics.append(_refused(name))
            continue
        if name == OFFSETS_TOPIC and ctx.metadata.partitions(name) is None:
            try:
                await ctx.groups.ensure_topic()  # created as the coordinator wants it, whatever auto-creation says
            except TopicError as exc:
                topics.append({"error_code": exc.code, "name": name, "partitions": []})
                continue
        partitions = ctx.metadata.partitions(name)
        if partitions is None and auto_create and name not in INTERNAL_TOPICS:  # made by their coordinators alone
            if not may_create(ctx, name):
                topics.append(_refused(name))
                continue
            try:
                await ctx.io.run(
                    ctx.topics.create,
                    name,
                    ctx.config.num_partitions,
                    None,
                    False,
                    None,
                    ctx.config.default_replication_factor,
                )
            except TopicError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    topics.append({"error_code": exc.code, "name": name, "partitions": []})
                    continue
            partitions = ctx.metadata.partitions(name)
        if partitions is None:  # unknown (or deleted again since it was created here)
            topics.append({"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []})
            continue
        topics.append(
            _topic_metadata(
                name,
                partitions,
                _operations(ctx, request["include_topic_authorized_operations"], ResourceType.TOPIC, name),
            )
        )
    return {
        "throttle_time_ms": 0,
        "brokers": _brokers(ctx.metadata.alive_brokers(), ctx.session.listener),
        "cluster_id": ctx.metadata.cluster_id,
        "controller_id": ctx.metadata.controller_id,
        "topics": topics,
        "cluster_authorized_operations": _operations(
            ctx, request["include_cluster_authorized_operations"], ResourceType.CLUSTER, CLUSTER_NAME
        ),
    }
