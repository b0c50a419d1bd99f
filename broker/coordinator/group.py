"""One consumer group as the coordinator holds it: members, state, generation, protocol, offsets.

Kafka's ``GroupMetadata`` and ``MemberMetadata``, without I/O: the states (Empty,
PreparingRebalance, CompletingRebalance, Stable, Dead) and their legal transitions, the members
with their protocols and the response each is waiting for, static members by instance id, the
choice of the protocol every member supports, and the group's committed offsets. The rules of
the protocol (who may join, when a rebalance completes) are the coordinator's
(``group_coordinator``); this module keeps the group consistent.
"""

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .offsets_records import GroupMember, GroupValue, OffsetValue

if TYPE_CHECKING:  # the coordinator's answers (it imports this module)
    from .group_coordinator import JoinResult, SyncResult


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_LEGAL_PREVIOUS = {  # Kafka's GroupMetadata.validPreviousStates
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: {
        GroupState.STABLE,
        GroupState.PREPARING_REBALANCE,
        GroupState.COMPLETING_REBALANCE,
        GroupState.EMPTY,
        GroupState.DEAD,
    },
}


def protocols_bytes(protocols: dict[str, bytes]) -> int:
    """The size of a member's protocols (names and metadata, all together): what the bounds count."""
    return sum(len(name) + len(data) for name, data in protocols.items())


@dataclass
class Member:
    """A member: its protocols in preference order (name -> opaque metadata), its assignment, and
    the JoinGroup or SyncGroup response it is waiting for (a callable, or None)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: dict[str, bytes]
    assignment: bytes = b""
    awaiting_join: "Callable[[JoinResult], None] | None" = None
    awaiting_sync: "Callable[[SyncResult], None] | None" = None

    @property
    def metadata_bytes(self) -> int:
        return protocols_bytes(self.protocols)

    def metadata_for(self, protocol: str) -> bytes:
        return self.protocols[protocol]

    def same_protocols(self, protocols: dict[str, bytes]) -> bool:
        return list(self.protocols.items()) == list(protocols.items())


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp: int = -1  # when it last changed state (ms): offsets of an Empty group expire from it
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # group instance id -> member id
    pending_members: set[str] = field(default_factory=set)  # told MEMBER_ID_REQUIRED, not yet rejoined
    offsets: dict[tuple[str, int], OffsetValue] = field(default_factory=dict)
    new_member_joined: bool = False  # during the initial delay: extend it once more
    initial_delay_left_ms: int = 0  # how much longer the initial delay may still be extended

    def transition(self, state: GroupState, now: int) -> None:
        if self.state not in _LEGAL_PREVIOUS[state]:
            raise AssertionError(f"group {self.group_id!r}: {self.state.value} -> {state.value} is not a legal change")
        self.state = state
        self.state_timestamp = now

    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def size(self) -> int:
        """Members and members-to-be: what ``group.max.size`` bounds."""
        return len(self.members) + len(self.pending_members)

    def metadata_bytes_without(self, member_id: str | None) -> int:
        """The protocol metadata of all members but ``member_id``: what ``group.max.metadata.bytes`` bounds."""
        return sum(m.metadata_bytes for m in self.members.values() if m.member_id != member_id)

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader is None:
            self.leader = member.member_id

    def remove(self, member_id: str) -> Member:
        member = self.members.pop(member_id)
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, new_member_id: str) -> Member:
        """Give the member of ``instance_id`` a new member id (a restarted static member); its old id is fenced."""
        member = self.members.pop(self.static_members[instance_id])
        if self.leader == member.member_id:
            self.leader = new_member_id
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[instance_id] = new_member_id
        return member

    def is_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A static member whose instance id now belongs to another member id (an impostor or a zombie)."""
        return instance_id is not None and self.static_members.get(instance_id, member_id) != member_id

    def supports(self, protocol_type: str, protocols: dict[str, bytes]) -> bool:
        """Whether a member with these protocols may join: same type, and one protocol in common with all."""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(self.candidate_protocols() & protocols.keys())

    def candidate_protocols(self) -> set[str]:
        common = None
        for member in self.members.values():
            common = set(member.protocols) if common is None else common & member.protocols.keys()
        return common or set()

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its most preferred candidate; the most votes wins
        (ties: the first such candidate in the first member's preference order)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(p for p in member.protocols if p in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=votes.__getitem__)

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join is not None for m in self.members.values())

    def value(self, now: int) -> GroupValue:
        """The group metadata record of the current generation (``__consumer_offsets``)."""
        return GroupValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation,
            protocol=self.protocol,
            leader=self.leader,
            current_state_timestamp=now,
            members=tuple(
                GroupMember(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.protocols.get(self.protocol, b"") if self.protocol is not None else b"",
                    m.assignment,
                )
                for m in self.members.values()
            ),
        )

    @classmethod
    def loaded(cls, group_id: str, value: GroupValue, now: int) -> "Group":
        """A group as its last metadata record describes it: Stable with its members, or Empty."""
        group = cls(
            group_id,
            generation=value.generation,
            protocol_type=value.protocol_type or None,
            protocol=value.protocol,
            state_timestamp=value.current_state_timestamp if value.current_state_timestamp != -1 else now,
        )
        for m in value.members:
            group.add(
                Member(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.session_timeout,
                    m.rebalance_timeout,
                    value.protocol_type,
                    {value.protocol: m.subscription} if value.protocol is not None else {},
                    m.assignment,
                )
            )
        group.leader = value.leader if value.leader in group.members else group.leader
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        return group
