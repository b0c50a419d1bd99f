"""One member of a consumer group, run by this process: Kafka's classic group membership protocol
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup) over the project's synchronous client.

``GroupMember.join()`` joins (answering MEMBER_ID_REQUIRED with the id the coordinator gave), and
when the coordinator makes it the leader it assigns every member's partitions with the assignor
the group chose (``assignors``: range or roundrobin, offered in that order) from the members'
subscriptions; it returns this member's partitions. The caller then calls ``alive()`` between its
fetches: a heartbeat when one is due (every third of the session timeout), False when the group
is rebalancing or has dropped this member, after which the caller commits what it has processed
and joins again. ``commit`` commits as the member (its generation and id), ``leave`` leaves at
once so the others take over without waiting for the session timeout.

Heartbeats travel between the caller's fetches (no thread): a caller that does not come back
within the session timeout is dropped by the coordinator, and learns it from its next heartbeat
or commit (UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION).
"""

import logging
import time
from collections.abc import Iterable, Mapping

from broker.coordinator.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode

from .assignors import ASSIGNORS
from .client import KafkaClient
from .errors import KafkaError
from .groups import CONSUMER_PROTOCOL, NO_GENERATION, NO_MEMBER, GroupClient, _raise_for_group
from .retry import TopicPartition

log = logging.getLogger(__name__)

SUBSCRIPTION_VERSION = ASSIGNMENT_VERSION = 0  # eager rebalancing: no owned partitions to send
# One member leaving needs nothing of LeaveGroup v3 (several members, instance ids), and librdkafka's
# mock cluster answers v3 without its members array.
LEAVE_GROUP_VERSION = 2
JOIN_ATTEMPTS = 10  # rejoins in a row (new member id, a rebalance during SyncGroup) before giving up
_REJOIN = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID}


class GroupMember:
    """A member of ``group`` subscribed to ``topics``, through ``client`` (its retries and timeout)."""

    def __init__(
        self,
        client: KafkaClient,
        group: str,
        topics: list[str],
        *,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 30_000,
    ):
        self.client, self.group, self.topics = client, group, sorted(set(topics))
        self.session_timeout_ms, self.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
        self.groups = GroupClient(client)
        self.member_id, self.generation = NO_MEMBER, NO_GENERATION
        self.protocol: str | None = None  # the assignor the group chose
        self.leader = False
        self._members: dict[str, bytes] = {}  # as the leader: member id -> its subscription bytes
        self._next_heartbeat = 0.0

    # -- joining -------------------------------------------------------------------------

    def join(self) -> dict[str, list[int]]:
        """Join (or rejoin) the group; ``{topic: [partitions]}`` assigned to this member."""
        for _ in range(JOIN_ATTEMPTS):
            if not self._join_group():
                continue
            assignment = self._sync_group()
            if assignment is not None:
                self._next_heartbeat = time.monotonic() + self._heartbeat_interval
                return assignment
        raise KafkaError(
            f"group {self.group!r}: no stable membership after {JOIN_ATTEMPTS} attempts to join",
            ErrorCode.REBALANCE_IN_PROGRESS,
        )

    def _join_group(self) -> bool:
        """One JoinGroup; False when it must be sent again (a member id to use, or a stale one)."""
        metadata = encode_subscription(Subscription(tuple(self.topics)), SUBSCRIPTION_VERSION)
        body = {
            "group_id": self.group,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "member_id": self.member_id,
            "group_instance_id": None,
            "protocol_type": CONSUMER_PROTOCOL,
            "protocols": [{"name": name, "metadata": metadata} for name in ASSIGNORS],
        }
        response = self.groups._to_coordinator(
            self.group, ApiKey.JOIN_GROUP, body, f"join group {self.group!r}", self.rebalance_timeout_ms / 1000
        )
        code = response["error_code"]
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response["member_id"]
            return False
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = NO_MEMBER
            return False
        _raise_for_group(code, self.group, principal=self.groups.principal)
        self.member_id, self.generation = response["member_id"], response["generation_id"]
        self.protocol, self.leader = response["protocol_name"], response["leader"] == response["member_id"]
        self._members = {m["member_id"]: bytes(m["metadata"]) for m in response["members"]}
        return True

    def _sync_group(self) -> dict[str, list[int]] | None:
        """SyncGroup (with every member's assignment when leading); None when the group rebalanced meanwhile."""
        assignments = self._assign() if self.leader else {}
        body = {
            "group_id": self.group,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "group_instance_id": None,
            "assignments": [{"member_id": m, "assignment": a} for m, a in sorted(assignments.items())],
        }
        response = self.groups._to_coordinator(
            self.group, ApiKey.SYNC_GROUP, body, f"sync group {self.group!r}", self.rebalance_timeout_ms / 1000
        )
        if response["error_code"] in _REJOIN:
            self._forget_if_unknown(response["error_code"])
            return None
        _raise_for_group(response["error_code"], self.group, principal=self.groups.principal)
        if not response["assignment"]:
            return {}
        try:
            decoded = decode_assignment(bytes(response["assignment"]))
        except ConsumerProtocolError as exc:
            raise KafkaError(f"group {self.group!r}: the leader's assignment is unreadable: {exc}") from None
        return {topic: sorted(partitions) for topic, partitions in decoded.partitions}

    def _assign(self) -> dict[str, bytes]:
        """As the leader: ``{member id: assignment bytes}`` from the members' subscriptions."""
        assignor = ASSIGNORS.get(self.protocol or "")
        if assignor is None:
            raise KafkaError(
                f"group {self.group!r} chose assignor {self.protocol!r}, which this member does "
                f"not implement ({', '.join(ASSIGNORS)})",
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            )
        subscriptions: dict[str, set[str]] = {}
        for member, metadata in self._members.items():
            try:
                subscriptions[member] = set(decode_subscription(metadata).topics)
            except ConsumerProtocolError as exc:
                log.warning(
                    "group %r: member %s sent an unreadable subscription (%s): it gets nothing", self.group, member, exc
                )
                subscriptions[member] = set()
        wanted = sorted(set[str]().union(*subscriptions.values()))
        leaders = self.client.metadata(wanted).leaders if wanted else {}
        partitions: dict[str, list[int]] = {}
        for topic, partition in leaders:
            partitions.setdefault(topic, []).append(partition)
        return {
            member: encode_assignment(
                Assignment(tuple((t, tuple(ps)) for t, ps in sorted(assigned.items()))), ASSIGNMENT_VERSION
            )
            for member, assigned in assignor(subscriptions, partitions).items()
        }

    # -- staying in ------------------------------------------------------------------------

    @property
    def _heartbeat_interval(self) -> float:
        return self.session_timeout_ms / 3000

    def alive(self) -> bool:
        """Heartbeat when one is due; False when this member must join again (the group is
        rebalancing, or no longer knows this member or generation)."""
        if time.monotonic() < self._next_heartbeat:
            return True
        body = {
            "group_id": self.group,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "group_instance_id": None,
        }
        response = self.groups._to_coordinator(self.group, ApiKey.HEARTBEAT, body, f"heartbeat to group {self.group!r}")
        self._next_heartbeat = time.monotonic() + self._heartbeat_interval
        if response["error_code"] in _REJOIN:
            self._forget_if_unknown(response["error_code"])
            return False
        _raise_for_group(response["error_code"], self.group, principal=self.groups.principal)
        return True

    def commit(self, offsets: Mapping[TopicPartition, int], metadata: str = "") -> bool:
        """Commit ``{(topic, partition): next offset}`` as this member; False when the coordinator
        refused it because the group moved on (a rebalance, or this member was dropped): the next
        owner of those partitions then starts from the previous commit."""
        if not offsets:
            return True
        try:
            self.groups.commit(self.group, offsets, metadata, self.generation, self.member_id)
        except KafkaError as exc:
            if exc.code not in _REJOIN:
                raise
            log.info("group %r: commit refused (%s)", self.group, ErrorCode(exc.code).name)
            self._forget_if_unknown(exc.code)
            return False
        return True

    def committed(self, partitions: Mapping[str, Iterable[int]]) -> dict[TopicPartition, int]:
        """``{(topic, partition): offset}`` the group committed, of ``{topic: [partitions]}``."""
        return {tp: c.offset for tp, c in self.groups.committed(self.group, partitions).items()}

    def leave(self) -> None:
        """Leave the group now (its other members take this member's partitions at once)."""
        if self.member_id == NO_MEMBER:
            return
        body = {
            "group_id": self.group,
            "member_id": self.member_id,
            "members": [{"member_id": self.member_id, "group_instance_id": None}],
        }
        response = self.groups._to_coordinator(
            self.group, ApiKey.LEAVE_GROUP, body, f"leave group {self.group!r}", max_version=LEAVE_GROUP_VERSION
        )
        codes = [response["error_code"]] + [m["error_code"] for m in response["members"] or ()]
        self.member_id, self.generation = NO_MEMBER, NO_GENERATION
        for code in codes:
            if code != ErrorCode.UNKNOWN_MEMBER_ID:  # already dropped: left all the same
                _raise_for_group(code, self.group, principal=self.groups.principal)

    def _forget_if_unknown(self, code: int) -> None:
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = NO_MEMBER
