"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup: the group membership protocol, answered by the coordinator.

A JoinGroup or SyncGroup that must wait (for the other members, for the leader's assignment to be
stored) awaits an asyncio future: no thread is held and the event loop goes on serving heartbeats.
JoinGroup v4+ gives a new dynamic member its id first (MEMBER_ID_REQUIRED); v5 and SyncGroup,
Heartbeat v3 carry a static member's ``group_instance_id``; LeaveGroup v3 leaves a batch of
members, each answered on its own, and v0-2 one member. Each needs Read on the group
(GROUP_AUTHORIZATION_FAILED), as in Kafka.
"""

from broker.coordinator.group_coordinator import JoinRequest
from broker.protocol.errors import ErrorCode
from broker.security.acls import Operation, ResourceType

from ..context import client_host

FIRST_MEMBER_ID_REQUIRED_VERSION = 4
FIRST_BATCHED_LEAVE_VERSION = 3


def _refused(ctx, request) -> dict | None:
    """The answer to a principal that may not Read the group, or None."""
    if ctx.allows(Operation.READ, ResourceType.GROUP, request["group_id"]):
        return None
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
        "generation_id": -1,
        "protocol_name": "",
        "leader": "",
        "member_id": "",
        "members": [],
        "assignment": b"",
    }


async def handle_join(ctx, header, request) -> dict:
    refused = _refused(ctx, request)
    if refused:
        return refused
    coordinator = ctx.groups.coordinator
    rebalance_timeout = request["rebalance_timeout_ms"]
    join = JoinRequest(
        request["group_id"],
        request["member_id"],
        request["group_instance_id"],
        header.client_id or "",
        client_host.get(),
        request["session_timeout_ms"],
        request["session_timeout_ms"] if rebalance_timeout == -1 else rebalance_timeout,  # v0: no rebalance timeout
        request["protocol_type"],
        [(p["name"], bytes(p["metadata"])) for p in request["protocols"]],
        header.api_version >= FIRST_MEMBER_ID_REQUIRED_VERSION,
    )
    result = await ctx.groups.wait(coordinator.join, join)
    return {
        "throttle_time_ms": 0,
        "error_code": result.error,
        "generation_id": result.generation,
        "protocol_name": result.protocol,
        "leader": result.leader,
        "member_id": result.member_id,
        "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "metadata": metadata}
            for member_id, instance_id, metadata in result.members
        ],
    }


async def handle_sync(ctx, header, request) -> dict:
    refused = _refused(ctx, request)
    if refused:
        return refused
    assignments = [(a["member_id"], bytes(a["assignment"])) for a in request["assignments"]]
    result = await ctx.groups.wait(
        ctx.groups.coordinator.sync,
        request["group_id"],
        request["generation_id"],
        request["member_id"],
        request["group_instance_id"],
        assignments,
    )
    return {"throttle_time_ms": 0, "error_code": result.error, "assignment": result.assignment}


async def handle_heartbeat(ctx, header, request) -> dict:
    refused = _refused(ctx, request)
    if refused:
        return refused
    error = ctx.groups.call(
        ctx.groups.coordinator.heartbeat,
        request["group_id"],
        request["generation_id"],
        request["member_id"],
        request["group_instance_id"],
    )
    return {"throttle_time_ms": 0, "error_code": error}


async def handle_leave(ctx, header, request) -> dict:
    refused = _refused(ctx, request)
    if refused:
        return refused
    batched = header.api_version >= FIRST_BATCHED_LEAVE_VERSION
    members = (
        [(m["member_id"], m["group_instance_id"]) for m in request["members"]]
        if batched
        else [(request["member_id"], None)]
    )
    error, errors = ctx.groups.call(ctx.groups.coordinator.leave, request["group_id"], members)
    if not batched:
        error = error or errors[0]
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "error_code": member_error}
            for (member_id, instance_id), member_error in zip(members, errors, strict=True)
        ],
    }
