"""FindCoordinator, ListGroups, DescribeGroups and DeleteGroups.

FindCoordinator answers with the leader of the group's partition of ``__consumer_offsets`` (its
endpoint for the listener the request came in on, ``ctx.session.listener``, as Metadata does: this
broker on a single node), after creating the topic if it does not exist yet (as Kafka does on first
use); the other group requests are answered NOT_COORDINATOR by any other broker. For key type 1
it answers the leader of the transactional id's partition of ``__transaction_state`` likewise
(Describe on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
DescribeGroups shows a Stable group's protocol and each member's metadata and assignment (other
states: members without them), and an unknown group as Dead with no error, as Kafka does. A group
named more than once is answered once (Kafka answers every mention; each answer may carry up to
``group.max.metadata.bytes``, so a short request could ask for gigabytes).
Authorization is Kafka's: FindCoordinator and DescribeGroups need Describe on the group,
DeleteGroups Delete on it (GROUP_AUTHORIZATION_FAILED); ListGroups lists every group to a principal
that may Describe the cluster, and to others the groups they may Describe. DescribeGroups v3+
answers, when asked, the operations the principal may do on each group.
"""

from broker.coordinator.group import GroupState
from broker.coordinator.offset_manager import OFFSETS_TOPIC
from broker.coordinator.transaction_coordinator import TRANSACTION_STATE_TOPIC
from broker.protocol.errors import ErrorCode
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType, operations_bits

from ..context import error_text
from ..topics import TopicError

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def _refused(code: ErrorCode, message: str) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}


def _coordinator_of(ctx, topic: str, index: int):
    """The live broker leading partition ``index`` of a coordinator's topic, or None."""
    partitions = ctx.metadata.partitions(topic) or ()
    leader = partitions[index].leader if index < len(partitions) else None
    return next((b for b in ctx.metadata.alive_brokers() if b.node_id == leader), None)


async def handle_find_coordinator(ctx, header, request) -> dict:
    key = request["key"]
    if request["key_type"] == GROUP_KEY_TYPE:
        what, runtime, topic = "group", ctx.groups, OFFSETS_TOPIC
        resource, refusal = ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED
        index = ctx.groups.coordinator.offsets.partition_of(key) if key else 0
    elif request["key_type"] == TRANSACTION_KEY_TYPE:
        what, runtime, topic = "transactional id", ctx.transactions, TRANSACTION_STATE_TOPIC
        resource, refusal = ResourceType.TRANSACTIONAL_ID, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        index = ctx.transactions.coordinator.partition_of(key)
    else:
        return _refused(ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {request['key_type']}")
    if not key:
        return _refused(ErrorCode.INVALID_REQUEST, f"the {what} is empty")
    if not ctx.allows(Operation.DESCRIBE, resource, key):
        return _refused(refusal, f"not authorized to describe {what} {key!r}")
    try:
        await runtime.ensure_topic()
    except TopicError as exc:
        return _refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, error_text(exc))
    coordinator = _coordinator_of(ctx, topic, index)
    if coordinator is None:
        return _refused(
            ErrorCode.COORDINATOR_NOT_AVAILABLE, f"the partition of {topic} that holds {what} {key!r} has no leader now"
        )
    endpoint = coordinator.endpoint(ctx.session.listener)  # its address for the request's listener, as Metadata
    if endpoint is None:
        return _refused(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            f"broker {coordinator.node_id} has no endpoint for listener {ctx.session.listener}",
        )
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "node_id": coordinator.node_id,
        "host": endpoint.host,
        "port": endpoint.port,
    }


async def handle_list(ctx, header, request) -> dict:
    coordinator = ctx.groups.coordinator
    every_group = ctx.allows(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False)
    groups = [
        {"group_id": g.group_id, "protocol_type": g.protocol_type or ""}
        for g in coordinator.list_groups()
        if every_group or ctx.allows(Operation.DESCRIBE, ResourceType.GROUP, g.group_id, log_denied=False)
    ]
    error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if coordinator.offsets.loading else ErrorCode.NONE
    return {"throttle_time_ms": 0, "error_code": error, "groups": groups}


def _describe(ctx, coordinator, group_id: str) -> dict:
    allowed = ctx.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id)
    error, group = coordinator.describe(group_id) if allowed else (ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    if error or group is None:
        return {
            "error_code": error,
            "group_id": group_id,
            "group_state": GroupState.DEAD.value,
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
        }
    stable = group.is_(GroupState.STABLE)
    return {
        "error_code": ErrorCode.NONE,
        "group_id": group_id,
        "group_state": group.state.value,
        "protocol_type": group.protocol_type or "",
        "protocol_data": (group.protocol or "") if stable else "",
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata_for(group.protocol) if stable else b"",
                "member_assignment": m.assignment if stable else b"",
            }
            for m in group.members.values()
        ],
    }


async def handle_describe(ctx, header, request) -> dict:
    coordinator = ctx.groups.coordinator
    groups = [_describe(ctx, coordinator, g) for g in dict.fromkeys(request["groups"])]
    if request["include_authorized_operations"]:
        for group in groups:
            group["authorized_operations"] = operations_bits(
                ctx.allowed_operations(ResourceType.GROUP, group["group_id"])
            )
    return {"throttle_time_ms": 0, "groups": groups}


async def handle_delete(ctx, header, request) -> dict:
    results = []
    for group_id in dict.fromkeys(request["groups_names"]):
        if not ctx.allows(Operation.DELETE, ResourceType.GROUP, group_id):
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        else:
            error = await ctx.groups.wait(ctx.groups.coordinator.delete_group, group_id)
        results.append({"group_id": group_id, "error_code": error})
    return {"throttle_time_ms": 0, "results": results}
