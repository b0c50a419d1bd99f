"""The group coordinator: Kafka's classic group membership protocol, sans I/O.

Kafka's ``GroupCoordinator``: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the commits and
fetches of offsets with their membership checks, and the group admin calls, on the groups the
``OffsetManager`` caches and stores. Nothing here blocks or sleeps: a request whose answer must
wait (a JoinGroup until the rebalance completes, a SyncGroup until the leader's assignment is
stored) passes a ``respond`` callable, called later; time comes from the ``clock`` passed in
(milliseconds), and the owner arms one timer for ``next_deadline()`` and calls ``tick()`` when it
fires: session expiry, rebalance timeouts, the initial rebalance delay, offset expiry.
It coordinates the groups of the ``__consumer_offsets`` partitions its broker leads, told by
``begin_loading`` and ``unload``; a group of any other partition is answered NOT_COORDINATOR.
Until ``install`` hands in the replayed partition its groups are loading, answered as Kafka does:
COORDINATOR_LOAD_IN_PROGRESS, except Heartbeat (NONE: the member's state comes back with the load)
and SyncGroup (REBALANCE_IN_PROGRESS: the rebalance in progress is lost, the member joins again).
"""

import logging
import uuid
from collections.abc import Callable, Collection
from typing import NamedTuple

from broker.common.settings import LONG_MAX
from broker.protocol.errors import ErrorCode

from .config import MAX_GROUP_ID_LENGTH, MAX_MEMBER_METADATA_BYTES, GroupConfig
from .consumer_protocol import ConsumerProtocolError, decode_subscription
from .group import Group, GroupState, Member, protocols_bytes
from .offset_manager import OffsetManager, Offsets, OffsetsStore, Replayed, StoreError, TopicPartition, warn_on_failure
from .offsets_records import OffsetValue
from .timers import Deadlines

log = logging.getLogger(__name__)

NO_GENERATION = -1
NO_MEMBER = ""
_ACTIVE = (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE)

# Kafka's GroupMetadataManager: what a failed append to __consumer_offsets is answered with (the
# client of a storage error or a lost leadership looks for the coordinator again); other codes as
# they are.
_STORE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}
_TOO_LARGE = (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE)
_COMMIT_ERRORS = {
    **_STORE_ERRORS,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    **dict.fromkeys(_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
}
_GROUP_ERRORS = {
    **_STORE_ERRORS,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
    **dict.fromkeys(_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
}


def _answer_to(error: StoreError | None, table: dict[ErrorCode, ErrorCode]) -> ErrorCode:
    """The error code answering a write that ended with ``error`` (``_COMMIT_ERRORS`` for offsets,
    ``_GROUP_ERRORS`` for a group's metadata)."""
    if error is None:
        return ErrorCode.NONE
    return table.get(error.code, error.code)


class JoinRequest(NamedTuple):
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata) in preference order
    member_id_required: bool  # JoinGroup v4+: a new member first gets its id with MEMBER_ID_REQUIRED


class JoinResult(NamedTuple):
    error: ErrorCode
    generation: int = NO_GENERATION
    protocol: str = ""
    leader: str = ""
    member_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (member id, group instance id, metadata): the
    # leader's only


class SyncResult(NamedTuple):
    error: ErrorCode
    assignment: bytes = b""


class OffsetCommit(NamedTuple):
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


JoinRespond = Callable[[JoinResult], None]
SyncRespond = Callable[[SyncResult], None]
CommitRespond = Callable[[dict[TopicPartition, ErrorCode]], None]  # an error per partition
DeleteOffsetsRespond = Callable[[ErrorCode, dict[TopicPartition, ErrorCode]], None]  # the group's, per partition
DeleteGroupRespond = Callable[[ErrorCode], None]


class GroupCoordinator:
    def __init__(self, config: GroupConfig, store: OffsetsStore, clock: Callable[[], int]):
        self.config = config
        self.clock = clock
        self.offsets = OffsetManager(config, store)
        self.deadlines: Deadlines[tuple[str, ...]] = Deadlines()  # ("session", group id, member id), ...
        self.deadlines.set(("expire-offsets",), clock() + config.offsets_retention_check_interval_ms)
        # offsets committed in a transaction (TxnOffsetCommit), by producer id and group, held in
        # memory until the transaction's marker reaches the group's partition
        self.pending_txn_offsets: dict[int, dict[str, Offsets]] = {}

    @property
    def groups(self) -> dict[str, Group]:
        return self.offsets.groups

    def _group_error(self, group_id: str) -> ErrorCode:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if len(group_id) > MAX_GROUP_ID_LENGTH:
            return ErrorCode.INVALID_GROUP_ID
        if not self.offsets.owns(group_id):
            return ErrorCode.NOT_COORDINATOR
        if self.offsets.is_loading(group_id):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    # -- loading ------------------------------------------------------------------------------

    def install(self, partition: int, replayed: Replayed) -> None:
        """A replayed partition of ``__consumer_offsets`` is ready: its groups' members must now heartbeat."""
        for group in self.offsets.install(partition, replayed, self.clock()):
            for member in group.members.values():
                self._schedule_session(group, member)

    def begin_loading(self, partition: int) -> None:
        """This broker leads ``partition`` of ``__consumer_offsets`` now; its groups load until ``install``."""
        self.offsets.begin_loading(partition)

    def unload(self, partition: int) -> None:
        """This broker no longer leads ``partition``: its groups' waiting members are told NOT_COORDINATOR
        (they look for the new coordinator) and the groups are forgotten here."""
        for group in self.offsets.unload(partition):
            for member in group.members.values():
                self._answer_join(member, JoinResult(ErrorCode.NOT_COORDINATOR, member_id=member.member_id))
                self._answer_sync(member, SyncResult(ErrorCode.NOT_COORDINATOR))

    def remove_topics(self, topics: Collection[str]) -> None:
        """The ``topics`` were deleted: every group's offsets of them go, as Kafka's coordinator removes
        the offsets of deleted partitions (so a topic created again is read from auto.offset.reset)."""
        self.offsets.remove_topics(topics, self.clock())

    # -- JoinGroup ------------------------------------------------------------------------------

    def join(self, request: JoinRequest, respond: JoinRespond) -> None:
        error = self._group_error(request.group_id)
        if error:
            respond(JoinResult(error, member_id=request.member_id))
            return
        protocols = dict(request.protocols)
        if not self.config.min_session_timeout_ms <= request.session_timeout_ms <= self.config.max_session_timeout_ms:
            respond(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=request.member_id))
            return
        if len(protocols) != len(request.protocols) or protocols_bytes(protocols) > MAX_MEMBER_METADATA_BYTES:
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id))
            return
        group = self.groups.get(request.group_id)
        if group is None:
            group = self.groups[request.group_id] = Group(request.group_id, state_timestamp=self.clock())
        if group.is_(GroupState.DEAD):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=request.member_id))
            return
        if not group.supports(request.protocol_type, protocols):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id))
            return
        if self._over_metadata_bound(group, request.member_id, request.group_instance_id, protocols):
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id=request.member_id))
            return
        if request.member_id == NO_MEMBER:
            self._join_new(group, request, protocols, respond)
        else:
            self._join_known(group, request, protocols, respond)

    def _over_metadata_bound(
        self, group: Group, member_id: str, instance_id: str | None, protocols: dict[str, bytes]
    ) -> bool:
        """Whether the group's members would hold more than ``group.max.metadata.bytes`` of protocol
        metadata once this member's (new, or replacing its own) is in."""
        replaced = (
            member_id
            if member_id in group.members
            else group.static_members.get(instance_id)
            if instance_id is not None
            else None
        )
        total = group.metadata_bytes_without(replaced) + protocols_bytes(protocols)
        if total <= self.config.max_metadata_bytes:
            return False
        log.info(
            "group %r: refusing a member: its members' protocol metadata would be %d bytes, over "
            "group.max.metadata.bytes=%d",
            group.group_id,
            total,
            self.config.max_metadata_bytes,
        )
        return True

    def _join_new(self, group: Group, request: JoinRequest, protocols: dict[str, bytes], respond: JoinRespond) -> None:
        instance_id = request.group_instance_id
        member_id = f"{request.client_id or 'member'}-{uuid.uuid4()}"
        if instance_id is not None and instance_id in group.static_members:
            self._replace_static_member(group, request, instance_id, protocols, member_id, respond)
            return
        if group.size >= self.config.max_size:
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
            return
        if request.member_id_required and instance_id is None:
            group.pending_members.add(member_id)
            self.deadlines.set(("pending", group.group_id, member_id), self.clock() + request.session_timeout_ms)
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id))
            return
        self._add_and_rebalance(group, request, protocols, member_id, respond)

    def _join_known(
        self, group: Group, request: JoinRequest, protocols: dict[str, bytes], respond: JoinRespond
    ) -> None:
        member_id = request.member_id
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.deadlines.cancel(("pending", group.group_id, member_id))
            self._add_and_rebalance(group, request, protocols, member_id, respond)
            return
        if group.is_fenced(member_id, request.group_instance_id):
            respond(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=member_id))
            return
        member = group.members.get(member_id)
        if member is None:
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))
            return
        unchanged = member.same_protocols(protocols)
        if (
            group.is_(GroupState.COMPLETING_REBALANCE)
            and unchanged
            or group.is_(GroupState.STABLE)
            and unchanged
            and member_id != group.leader
        ):
            respond(self._join_result(group, member))  # a rejoin that changes nothing: this generation
            return
        self._update_member(member, request, protocols)
        self._answer_join(member, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member_id))  # superseded
        member.awaiting_join = respond
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"member {member_id} rejoined")

    def _replace_static_member(
        self,
        group: Group,
        request: JoinRequest,
        instance_id: str,
        protocols: dict[str, bytes],
        member_id: str,
        respond: JoinRespond,
    ) -> None:
        """A static member restarted: it takes its old place; in a Stable group whose protocol
        stays the one chosen (its metadata may differ: what it owned is gone) it gets the current
        generation back without a rebalance, as in Kafka."""
        old_id = group.static_members[instance_id]
        old = group.members[old_id]
        self._answer_join(old, JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        self._answer_sync(old, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        self.deadlines.cancel(("session", group.group_id, old_id))
        member = group.replace_static_member(instance_id, member_id)
        self._update_member(member, request, protocols)
        self._schedule_session(group, member)
        if group.is_(GroupState.STABLE) and group.select_protocol() == group.protocol:

            def stored(error: StoreError | None) -> None:
                respond(
                    self._join_result(group, member)
                    if error is None
                    else JoinResult(_answer_to(error, _GROUP_ERRORS), member_id=member_id)
                )

            self.offsets.store_group(group, self.clock(), stored)
            return
        member.awaiting_join = respond
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"static member {instance_id} rejoined")

    def _update_member(self, member: Member, request: JoinRequest, protocols: dict[str, bytes]) -> None:
        member.protocols = protocols
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.client_id, member.client_host = request.client_id, request.client_host

    def _add_and_rebalance(
        self, group: Group, request: JoinRequest, protocols: dict[str, bytes], member_id: str, respond: JoinRespond
    ) -> None:
        member = Member(
            member_id,
            request.group_instance_id,
            request.client_id,
            request.client_host,
            request.session_timeout_ms,
            request.rebalance_timeout_ms,
            request.protocol_type,
            protocols,
            awaiting_join=respond,
        )
        group.add(member)
        group.new_member_joined = True
        self._schedule_session(group, member)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, f"member {member_id} joined")

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        """Ask every member to rejoin; the join completes when all have, or at the rebalance timeout
        (for an empty group, after the initial delay)."""
        if group.is_(GroupState.COMPLETING_REBALANCE):
            for member in group.members.values():  # the leader's assignment of this generation is void
                self._answer_sync(member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        now = self.clock()
        was_empty = group.is_(GroupState.EMPTY)
        group.transition(GroupState.PREPARING_REBALANCE, now)
        log.info("group %r: preparing to rebalance (generation %d): %s", group.group_id, group.generation, reason)
        rebalance_timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if was_empty and self.config.initial_rebalance_delay_ms > 0:
            group.new_member_joined = False
            delay = min(self.config.initial_rebalance_delay_ms, rebalance_timeout)
            group.initial_delay_left_ms = rebalance_timeout - delay
            self.deadlines.set(("initial-delay", group.group_id), now + delay)
        else:
            self.deadlines.set(("join", group.group_id), now + rebalance_timeout)
            self._maybe_complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if group.all_members_joined() and not self._in_initial_delay(group):
            self._complete_join(group)

    def _in_initial_delay(self, group: Group) -> bool:
        return ("initial-delay", group.group_id) in self.deadlines

    def _complete_join(self, group: Group) -> None:
        self.deadlines.cancel(("join", group.group_id))
        for member in [m for m in group.members.values() if m.awaiting_join is None and m.group_instance_id is None]:
            self._remove_member(group, member, "did not rejoin in time")
        for member_id in list(group.pending_members):
            group.pending_members.discard(member_id)
            self.deadlines.cancel(("pending", group.group_id, member_id))
        now = self.clock()
        group.generation += 1
        if not group.members:
            group.protocol = None
            group.transition(GroupState.EMPTY, now)
            log.info("group %r: generation %d has no members", group.group_id, group.generation)
            self.offsets.store_group(
                group, now, warn_on_failure(f"group {group.group_id!r}: cannot store its metadata")
            )
            return
        group.protocol = group.select_protocol()
        group.transition(GroupState.COMPLETING_REBALANCE, now)
        log.info(
            "group %r: generation %d with %d member(s), protocol %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol,
        )
        for member in group.members.values():
            self._answer_join(member, self._join_result(group, member))
            self._schedule_session(group, member)

    def _join_result(self, group: Group, member: Member) -> JoinResult:
        members: tuple[tuple[str, str | None, bytes], ...] = ()
        if member.member_id == group.leader and group.protocol is not None:
            members = tuple(
                (m.member_id, m.group_instance_id, m.metadata_for(group.protocol)) for m in group.members.values()
            )
        return JoinResult(
            ErrorCode.NONE, group.generation, group.protocol or "", group.leader or "", member.member_id, members
        )

    # -- SyncGroup ------------------------------------------------------------------------------

    def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: list[tuple[str, bytes]],
        respond: SyncRespond,
    ) -> None:
        error = self._member_error(group_id, generation, member_id, instance_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:  # older clients do not expect it here
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error:
            respond(SyncResult(error))
            return
        group = self.groups[group_id]
        member = group.members[member_id]
        if group.is_(GroupState.PREPARING_REBALANCE):
            respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_(GroupState.STABLE):
            self._schedule_session(group, member)
            respond(SyncResult(ErrorCode.NONE, member.assignment))
        else:
            self._answer_sync(member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
            member.awaiting_sync = respond
            self._schedule_session(group, member)
            if member_id == group.leader:
                self._store_assignment(group, dict(assignments))

    def _store_assignment(self, group: Group, assignments: dict[str, bytes]) -> None:
        generation = group.generation
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")

        def stored(error: StoreError | None) -> None:
            if not group.is_(GroupState.COMPLETING_REBALANCE) or group.generation != generation:
                return  # a rebalance began meanwhile and answered the waiting members
            if error is not None:
                log.warning("group %r: cannot store generation %d: %s", group.group_id, generation, error)
                for member in group.members.values():
                    member.assignment = b""
                    self._answer_sync(member, SyncResult(_answer_to(error, _GROUP_ERRORS)))
                self._prepare_rebalance(group, "its metadata could not be stored")
                return
            group.transition(GroupState.STABLE, self.clock())
            for member in group.members.values():
                self._answer_sync(member, SyncResult(ErrorCode.NONE, member.assignment))

        self.offsets.store_group(group, self.clock(), stored)

    # -- Heartbeat and LeaveGroup ----------------------------------------------------------------

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        error = self._member_error(group_id, generation, member_id, instance_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:  # answered blindly: the load brings the member back
            return ErrorCode.NONE
        if error:
            return error
        group = self.groups[group_id]
        self._schedule_session(group, group.members[member_id])
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        """``members``: ``(member id, group instance id)`` pairs (a v3 batch, or one); the group's
        error (loading, an invalid id) and one error per member."""
        error = self._group_error(group_id)
        group = self.groups.get(group_id)
        if error:
            return error, [error] * len(members)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.UNKNOWN_MEMBER_ID, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        errors: list[ErrorCode] = []
        for member_id, instance_id in members:
            if instance_id is not None and member_id == NO_MEMBER:
                member_id = group.static_members.get(instance_id, NO_MEMBER)
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.deadlines.cancel(("pending", group_id, member_id))
                errors.append(ErrorCode.NONE)
            elif group.is_fenced(member_id, instance_id):
                errors.append(ErrorCode.FENCED_INSTANCE_ID)
            elif member_id not in group.members:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
            else:
                self._remove_member_and_rebalance(group, group.members[member_id], "left the group")
                errors.append(ErrorCode.NONE)
        return ErrorCode.NONE, errors

    def _member_error(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        error = self._group_error(group_id)
        if error:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def _remove_member_and_rebalance(self, group: Group, member: Member, reason: str) -> None:
        self._remove_member(group, member, reason)
        if group.is_(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member.member_id} {reason}")
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    def _remove_member(self, group: Group, member: Member, reason: str) -> None:
        log.info("group %r: member %s %s", group.group_id, member.member_id, reason)
        self._answer_join(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member.member_id))
        self._answer_sync(member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        self.deadlines.cancel(("session", group.group_id, member.member_id))
        group.remove(member.member_id)

    # -- timers -----------------------------------------------------------------------------

    def _schedule_session(self, group: Group, member: Member) -> None:
        self.deadlines.set(("session", group.group_id, member.member_id), self.clock() + member.session_timeout_ms)

    def next_deadline(self) -> int | None:
        return self.deadlines.next_deadline()

    def tick(self) -> None:
        """Act on every deadline that has passed."""
        now = self.clock()
        while (key := self.deadlines.pop_due(now)) is not None:
            kind, *rest = key
            group = self.groups.get(rest[0]) if rest else None
            if kind == "expire-offsets":
                self.offsets.expire(now)
                self.deadlines.set(key, now + self.config.offsets_retention_check_interval_ms)
            elif group is None:
                continue
            elif kind == "session":
                self._expire_session(group, rest[1])
            elif kind == "pending":
                group.pending_members.discard(rest[1])
                if group.is_(GroupState.PREPARING_REBALANCE):
                    self._maybe_complete_join(group)
            elif kind == "initial-delay":
                self._initial_delay_over(group)
            elif kind == "join" and group.is_(GroupState.PREPARING_REBALANCE):
                self._complete_join(group)

    def _expire_session(self, group: Group, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is None:
            return
        if member.awaiting_join is not None or member.awaiting_sync is not None:
            self._schedule_session(group, member)  # a member waiting for an answer is alive
            return
        self._remove_member_and_rebalance(group, member, "stopped sending heartbeats (session expired)")

    def _initial_delay_over(self, group: Group) -> None:
        """Kafka's InitialDelayedJoin: while members keep arriving, wait another delay, within the rebalance timeout."""
        if not group.is_(GroupState.PREPARING_REBALANCE):
            return
        if group.new_member_joined and group.initial_delay_left_ms > 0:
            group.new_member_joined = False
            delay = min(self.config.initial_rebalance_delay_ms, group.initial_delay_left_ms)
            group.initial_delay_left_ms -= delay
            self.deadlines.set(("initial-delay", group.group_id), self.clock() + delay)
            return
        self.deadlines.set(
            ("join", group.group_id),
            self.clock() + max((m.rebalance_timeout_ms for m in group.members.values()), default=0),
        )
        self._maybe_complete_join(group)

    # -- answers ------------------------------------------------------------------------------

    @staticmethod
    def _answer_join(member: Member, result: JoinResult | None) -> None:
        respond, member.awaiting_join = member.awaiting_join, None
        if respond is not None and result is not None:
            respond(result)

    @staticmethod
    def _answer_sync(member: Member, result: SyncResult) -> None:
        respond, member.awaiting_sync = member.awaiting_sync, None
        if respond is not None:
            respond(result)

    def shutdown(self) -> None:
        """Answer every waiting JoinGroup and SyncGroup (COORDINATOR_NOT_AVAILABLE: the client looks again)."""
        for group in self.groups.values():
            for member in group.members.values():
                self._answer_join(member, JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member.member_id))
                self._answer_sync(member, SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))

    # -- offsets ------------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        retention_ms: int,
        commits: list[OffsetCommit],
        respond: CommitRespond,
    ) -> None:
        """``respond({(topic, partition): error})``, after the append. Commits from outside the
        group protocol (generation -1, no member: ``assign()`` users) are accepted while the group
        has no members."""

        def answer(error: ErrorCode) -> None:
            respond({(c.topic, c.partition): error for c in commits})

        error = self._group_error(group_id)
        if error:
            answer(error)
            return
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                answer(ErrorCode.ILLEGAL_GENERATION)
                return
            group = self.groups[group_id] = Group(group_id, state_timestamp=self.clock())
        if group.is_(GroupState.DEAD):
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        elif generation < 0 and member_id == NO_MEMBER and group.is_(GroupState.EMPTY):
            error = ErrorCode.NONE
        elif group.is_fenced(member_id, instance_id):
            error = ErrorCode.FENCED_INSTANCE_ID
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            error = ErrorCode.REBALANCE_IN_PROGRESS
        elif member_id not in group.members:
            error = ErrorCode.UNKNOWN_MEMBER_ID
        elif generation != group.generation:
            error = ErrorCode.ILLEGAL_GENERATION
        else:
            self._schedule_session(group, group.members[member_id])
        if error:
            answer(error)
            return
        now = self.clock()
        results: dict[TopicPartition, ErrorCode] = {}
        values: Offsets = {}
        for c in commits:
            if c.metadata is not None and len(c.metadata.encode()) > self.config.offset_metadata_max_bytes:
                results[(c.topic, c.partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                expire = min(now + retention_ms, LONG_MAX) if retention_ms >= 0 else -1  # v2-4: any INT64 is sent
                values[(c.topic, c.partition)] = OffsetValue(c.offset, c.metadata or "", now, c.leader_epoch, expire)
        if not values:
            respond(results)
            return

        def stored(error: StoreError | None) -> None:
            code = _answer_to(error, _COMMIT_ERRORS)
            if error is not None:
                log.warning("group %r: cannot store its offsets: %s", group_id, error)
            respond({**results, **{partition: code for partition in values}})

        self.offsets.store_offsets(group, values, stored)

    def txn_commit_offsets(
        self, group_id: str, producer_id: int, commits: list[OffsetCommit]
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: the offsets wait for the transaction's end (``complete_txn_offsets``);
        an error per partition."""
        error = self._group_error(group_id)
        if error:
            return {(c.topic, c.partition): error for c in commits}
        now = self.clock()
        results: dict[TopicPartition, ErrorCode] = {}
        accepted: Offsets = {}
        for c in commits:
            if c.metadata is not None and len(c.metadata.encode()) > self.config.offset_metadata_max_bytes:
                results[(c.topic, c.partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[(c.topic, c.partition)] = OffsetValue(c.offset, c.metadata or "", now, c.leader_epoch)
                results[(c.topic, c.partition)] = ErrorCode.NONE
        if accepted:
            self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {}).update(accepted)
        return results

    def complete_txn_offsets(self, partition: int, producer_id: int, commit: bool) -> None:
        """The marker of ``producer_id``'s transaction reached ``partition``: its pending offsets of
        the groups there are committed (stored) or dropped."""
        by_group = self.pending_txn_offsets.get(producer_id, {})
        for group_id in [g for g in by_group if self.offsets.partition_of(g) == partition]:
            offsets = by_group.pop(group_id)
            if not commit or self._group_error(group_id):
                continue
            group = self.groups.get(group_id)
            if group is None or group.is_(GroupState.DEAD):
                group = self.groups[group_id] = Group(group_id, state_timestamp=self.clock())
            self.offsets.store_offsets(
                group, offsets, warn_on_failure(f"group {group_id!r}: cannot store its transactional offsets")
            )
        if not by_group:
            self.pending_txn_offsets.pop(producer_id, None)

    def has_pending_txn_offsets(self, group_id: str) -> bool:
        return any(group_id in by_group for by_group in self.pending_txn_offsets.values())

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetValue | None]]:
        """``(error, {(topic, partition): OffsetValue or None})``; all the group's offsets for None."""
        error = self._group_error(group_id)
        if error:
            return error, {}
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None and not group.is_(GroupState.DEAD) else {}
        if partitions is None:
            every: dict[TopicPartition, OffsetValue | None] = dict(offsets)
            return ErrorCode.NONE, every
        return ErrorCode.NONE, {p: offsets.get(p) for p in partitions}

    def delete_offsets(self, group_id: str, partitions: list[TopicPartition], respond: DeleteOffsetsRespond) -> None:
        """OffsetDelete: ``respond(group error, {partition: error})``; refused for the topics a member subscribes to."""
        error = self._group_error(group_id)
        group = self.groups.get(group_id)
        if error or group is None or group.is_(GroupState.DEAD):
            respond(error or ErrorCode.GROUP_ID_NOT_FOUND, {})
            return
        subscribed = self._subscribed_topics(group)
        results = {p: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC for p in partitions if p[0] in subscribed}
        deletable = [p for p in partitions if p not in results]

        def stored(error: StoreError | None) -> None:
            code = _answer_to(error, _COMMIT_ERRORS)
            respond(ErrorCode.NONE, {**results, **{p: code for p in deletable}})

        self.offsets.delete_offsets(group, deletable, stored)

    def _subscribed_topics(self, group: Group) -> set[str]:
        if not group.is_(*_ACTIVE) or group.protocol_type != "consumer":
            return set()
        topics: set[str] = set()
        for member in group.members.values():
            for data in member.protocols.values():
                try:
                    topics.update(decode_subscription(data).topics)
                except ConsumerProtocolError:
                    pass
        return topics

    # -- admin ---------------------------------------------------------------------------------

    def delete_group(self, group_id: str, respond: DeleteGroupRespond) -> None:
        """DeleteGroups for one group: ``respond(error)`` once its tombstones are written."""
        error = self._group_error(group_id)
        group = self.groups.get(group_id)
        if error or group is None or group.is_(GroupState.DEAD):
            respond(error or ErrorCode.GROUP_ID_NOT_FOUND)
            return
        if not group.is_(GroupState.EMPTY):
            respond(ErrorCode.NON_EMPTY_GROUP)
            return
        self.offsets.delete_group(group, self.clock(), lambda failure: respond(_answer_to(failure, _GROUP_ERRORS)))

    def describe(self, group_id: str) -> tuple[ErrorCode, Group | None]:
        error = self._group_error(group_id)
        if error:
            return error, None
        group = self.groups.get(group_id)
        return ErrorCode.NONE, group

    def list_groups(self) -> list[Group]:
        return [g for g in self.groups.values() if not g.is_(GroupState.DEAD)]
