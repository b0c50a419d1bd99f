"""Metadata: this broker (also the controller), and topics with this broker leading every partition.

The broker's address is the one advertised for the listener the request came in on, as in Kafka:
a client of the TLS listener is sent to the TLS port, one of the plaintext listener to its port.

Unknown topics are created on the spot when ``auto.create.topics.enable`` (and, from v4, the
request) allow it (on the I/O pool), so clients get the new topic's metadata at once. Version 0 asks for all
topics with an empty list; later versions with null (an empty list then means none). A topic
named twice is answered once, as Kafka's set of names does (a small request naming a topic of
many partitions a thousand times would otherwise get a response a thousand times its size).

From v8 a client may ask which operations it is allowed on the cluster and on each topic; with
no authorizer, as here, Kafka answers every operation the resource supports.
"""

from broker.protocol.apis import UNREQUESTED_AUTHORIZED_OPERATIONS
from broker.protocol.errors import ErrorCode

from ..context import LEADER_EPOCH
from ..topics import TopicError

# Kafka's AclOperation codes, as bits: what a topic and the cluster support
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = \
    3, 4, 5, 6, 7, 8, 9, 10, 11, 12
TOPIC_OPERATIONS = sum(1 << op for op in (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
                                          ALTER_CONFIGS))
CLUSTER_OPERATIONS = sum(1 << op for op in (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
                                            ALTER_CONFIGS, IDEMPOTENT_WRITE))


def _operations(requested: bool, supported: int) -> int:
    return supported if requested else UNREQUESTED_AUTHORIZED_OPERATIONS


def _topic_metadata(ctx, name: str, operations: int) -> dict:
    node = ctx.node_id
    return {
        "error_code": ErrorCode.NONE, "name": name, "is_internal": False, "topic_authorized_operations": operations,
        "partitions": [{"error_code": ErrorCode.NONE, "partition_index": p, "leader_id": node,
                        "leader_epoch": LEADER_EPOCH, "replica_nodes": [node], "isr_nodes": [node],
                        "offline_replicas": []}
                       for p in range(ctx.topics.partitions(name))],
    }


async def handle(ctx, header, request) -> dict:
    requested = request["topics"]
    if requested is None or (header.api_version == 0 and not requested):
        names = ctx.topics.names()
    else:
        names = list(dict.fromkeys(t["name"] for t in requested))  # a topic named twice is answered once
    auto_create = ctx.config.auto_create_topics and request["allow_auto_topic_creation"]
    topic_operations = _operations(request["include_topic_authorized_operations"], TOPIC_OPERATIONS)
    topics = []
    for name in names:
        if ctx.topics.partitions(name) is None:
            if not auto_create:
                topics.append({"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []})
                continue
            try:
                await ctx.io.run(ctx.topics.create, name, ctx.config.num_partitions)
            except TopicError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    topics.append({"error_code": exc.code, "name": name, "partitions": []})
                    continue
        topics.append(_topic_metadata(ctx, name, topic_operations))
    host, port = ctx.advertised_address(ctx.session.listener)
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": ctx.node_id, "host": host, "port": port, "rack": None}],
        "cluster_id": ctx.log_manager.cluster_id,
        "controller_id": ctx.node_id,
        "topics": topics,
        "cluster_authorized_operations": _operations(request["include_cluster_authorized_operations"],
                                                     CLUSTER_OPERATIONS),
    }
