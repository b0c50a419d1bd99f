"""Consumer-group calls of the project's client, for tools such as ``kafkalog groups``: find a
group's coordinator, list the groups, describe one (state, members, their assignments), fetch and
commit its offsets, delete offsets or whole groups.

They work against any Kafka cluster with a group coordinator: the first call for a group finds its
coordinator (FindCoordinator, to any broker), remembered for the next calls; a coordinator that is
loading, moving, not yet available or unreachable (COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, a broken connection) is looked up again and the request
retried, with the client's retries and backoff. A broker that does not offer a group API (this
project's broker before its coordinator, librdkafka's mock cluster for ListGroups and
DescribeGroups) gives a ``GroupsUnsupportedError`` naming it. Offsets are committed as Kafka's
tools commit them: generation -1 and no member id, which a coordinator accepts only while the group
has no active members.

Member assignments are decoded with the consumer-protocol codec of ``broker.coordinator`` (pure,
no I/O: the one place that knows those bytes).
"""

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from broker.coordinator.consumer_protocol import ConsumerProtocolError, decode_assignment
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode

from .client import KafkaClient
from .connection import Body, BrokerConnectionError
from .errors import KafkaError, error_for
from .retry import RetriableError, TopicPartition

GROUP_KEY_TYPE = 0  # FindCoordinator key_type of a consumer group (1 is a transactional id)
NO_GENERATION, NO_MEMBER = -1, ""  # an offset commit from outside the group (an admin tool)
CONSUMER_PROTOCOL = "consumer"
_COORDINATOR_MOVED = {
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
}
_NEEDED_FOR = {
    ApiKey.LIST_GROUPS: "listing consumer groups",
    ApiKey.DESCRIBE_GROUPS: "describing consumer groups",
    ApiKey.DELETE_GROUPS: "deleting consumer groups",
    ApiKey.OFFSET_DELETE: "deleting a group's offsets",
}


class GroupsUnsupportedError(KafkaError):
    """A broker does not offer a consumer-group API this call needs; ``api`` is which."""

    def __init__(self, address: str, api: ApiKey):
        super().__init__(
            f"{address} does not support {_NEEDED_FOR.get(api, 'consumer groups')} (it offers no {_api_name(api)} API)",
            ErrorCode.UNSUPPORTED_VERSION,
        )
        self.api = api


class MemberDescription(NamedTuple):
    """A member as ``describe`` shows it (``membership.GroupMember`` is a member this process runs)."""

    member_id: str
    instance_id: str | None  # static membership's group.instance.id
    client_id: str
    host: str
    assignment: dict[str, list[int]]  # topic -> sorted partitions assigned to this member


class GroupDescription(NamedTuple):
    group_id: str
    state: str  # Kafka's: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    protocol_type: str  # "consumer" for consumer groups
    protocol: str  # the chosen assignor, e.g. "range"
    members: list[MemberDescription]


class CommittedOffset(NamedTuple):
    offset: int
    leader_epoch: int  # -1 when unknown
    metadata: str | None


class GroupClient:
    """Group calls through a ``KafkaClient`` (its connections, metadata, retries and timeout)."""

    def __init__(self, client: KafkaClient):
        self.client = client
        self.principal = client.security.principal  # named when the broker denies it access
        self._coordinators: dict[str, int] = {}  # group -> its coordinator's node id, until it moves

    # -- the coordinator -------------------------------------------------------------------

    def _find_coordinator(self, group: str) -> int:
        """The node id of the group's coordinator (FindCoordinator to the controller or any broker)."""
        node_id = self.client.controller_or_any()
        response = self._request(node_id, ApiKey.FIND_COORDINATOR, {"key": group, "key_type": GROUP_KEY_TYPE})
        _raise_for_group(response["error_code"], group, response["error_message"], principal=self.principal)
        coordinator: int = response["node_id"]
        if coordinator not in self.client.cluster.current.brokers:
            self.client.refresh_metadata([])
        if coordinator not in self.client.cluster.current.brokers:
            raise RetriableError(
                f"coordinator {coordinator} of {group!r} is not in the metadata", ErrorCode.COORDINATOR_NOT_AVAILABLE
            )
        return coordinator

    def _to_coordinator(
        self,
        group: str,
        api_key: ApiKey,
        body: Body,
        what: str,
        extra_wait: float = 0.0,
        max_version: int | None = None,
    ) -> Body:
        """Send a request to the group's coordinator (found again, and retried, when it moved)."""

        def send() -> Body:
            if group not in self._coordinators:
                self._coordinators[group] = self._find_coordinator(group)
            try:
                response = self._request(self._coordinators[group], api_key, body, extra_wait, max_version)
            except BrokerConnectionError:
                del self._coordinators[group]
                raise
            moved = [code for code in _error_codes(response) if code in _COORDINATOR_MOVED]
            if moved:
                del self._coordinators[group]
                raise RetriableError(f"group {group!r}: {ErrorCode(moved[0]).name}", moved[0])
            return response

        return self.client.retrying(send, what)

    def _request(
        self, node_id: int, api_key: ApiKey, body: Body, extra_wait: float = 0.0, max_version: int | None = None
    ) -> Body:
        """``extra_wait``: seconds the coordinator may hold the answer on purpose (a JoinGroup waits
        for the other members up to the rebalance timeout)."""
        connection = self.client.connection(node_id)
        if api_key not in connection.versions:
            raise GroupsUnsupportedError(connection.address, api_key)
        return self.client.request(node_id, api_key, body, extra_wait, max_version)

    def txn_offset_commit(self, group: str, body: Body) -> Body:
        """TxnOffsetCommit to the group's coordinator: offsets committed with a producer's transaction
        (``broker.client.transactions``); the answer, its partitions' errors unread."""
        return self._to_coordinator(
            group, ApiKey.TXN_OFFSET_COMMIT, body, f"commit offsets of {group!r} in a transaction"
        )

    # -- groups ----------------------------------------------------------------------------

    def list_groups(self) -> dict[str, str]:
        """``{group id: protocol type}`` of every group of every broker (each lists those it coordinates)."""
        return self.client.retrying(self._list_groups, "list groups")

    def _list_groups(self) -> dict[str, str]:
        self.client.controller_or_any()
        groups: dict[str, str] = {}
        for node_id in sorted(self.client.cluster.current.brokers):
            response = self._request(node_id, ApiKey.LIST_GROUPS, {})
            _raise_for_group(response["error_code"], f"the groups of broker {node_id}", principal=self.principal)
            groups.update((g["group_id"], g["protocol_type"]) for g in response["groups"])
        return dict(sorted(groups.items()))

    def describe(self, group: str) -> GroupDescription:
        """The group's state and members, with each member's assigned partitions."""
        response = self._to_coordinator(
            group,
            ApiKey.DESCRIBE_GROUPS,
            {"groups": [group], "include_authorized_operations": False},
            f"describe group {group!r}",
        )
        [found] = response["groups"]
        _raise_for_group(found["error_code"], group, principal=self.principal)
        members = [
            MemberDescription(
                m["member_id"],
                m["group_instance_id"],
                m["client_id"],
                m["client_host"],
                assigned_partitions(m["member_assignment"]) if found["protocol_type"] == CONSUMER_PROTOCOL else {},
            )
            for m in found["members"]
        ]
        return GroupDescription(
            group,
            found["group_state"],
            found["protocol_type"],
            found["protocol_data"],
            sorted(members, key=lambda m: m.member_id),
        )

    def delete_groups(self, groups: list[str]) -> dict[str, KafkaError | None]:
        """Delete groups (and their offsets); ``{group: None}`` for each deleted, or its KafkaError
        (NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND...)."""
        results = {}
        for group in groups:
            response = self._to_coordinator(
                group, ApiKey.DELETE_GROUPS, {"groups_names": [group]}, f"delete group {group!r}"
            )
            for result in response["results"]:
                results[result["group_id"]] = _group_error(
                    result["error_code"], result["group_id"], principal=self.principal
                )
        return results

    # -- offsets ---------------------------------------------------------------------------

    def committed(
        self, group: str, topics: Mapping[str, Iterable[int]] | None = None
    ) -> dict[TopicPartition, CommittedOffset]:
        """``{(topic, partition): CommittedOffset}`` of the group: for ``{topic: [partitions]}``,
        or for every topic it committed to (None; OffsetFetch v2+). Partitions without a committed
        offset are left out."""
        wanted = None if topics is None else [{"name": t, "partition_indexes": list(ps)} for t, ps in topics.items()]
        response = self._to_coordinator(
            group, ApiKey.OFFSET_FETCH, {"group_id": group, "topics": wanted}, f"fetch the offsets of group {group!r}"
        )
        _raise_for_group(response["error_code"], group, principal=self.principal)
        if response["topics"] is None:  # a broker that cannot list them (librdkafka's mock): ask for every partition
            every: dict[str, list[int]] = {}
            for topic, partition in self.client.metadata(None).leaders:
                every.setdefault(topic, []).append(partition)
            return self.committed(group, every)
        offsets = {}
        for topic in response["topics"]:
            for p in topic["partitions"]:
                _raise_for_group(
                    p["error_code"], f"group {group!r} {topic['name']}-{p['partition_index']}", principal=self.principal
                )
                if p["committed_offset"] >= 0:
                    offsets[(topic["name"], p["partition_index"])] = CommittedOffset(
                        p["committed_offset"], p["committed_leader_epoch"], p["metadata"]
                    )
        return offsets

    def commit(
        self,
        group: str,
        offsets: Mapping[TopicPartition, int],
        metadata: str = "",
        generation: int = NO_GENERATION,
        member_id: str = NO_MEMBER,
    ) -> None:
        """Commit ``{(topic, partition): offset}`` for the group: by default from outside it (generation
        -1, no member id), which the coordinator refuses while the group has active members
        (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS, raised as a KafkaError); a
        member gives its generation and member id."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append(
                {
                    "partition_index": partition,
                    "committed_offset": offset,
                    "committed_leader_epoch": -1,
                    "commit_timestamp": -1,
                    "committed_metadata": metadata,
                }
            )
        body = {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }

        response = self._to_coordinator(group, ApiKey.OFFSET_COMMIT, body, f"commit offsets of group {group!r}")
        for topic in response["topics"]:
            for p in topic["partitions"]:
                _raise_for_group(
                    p["error_code"], f"group {group!r} {topic['name']}-{p['partition_index']}", principal=self.principal
                )

    def delete_offsets(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, KafkaError | None]:
        """Delete the group's committed offsets of ``[(topic, partition)]`` (OffsetDelete; refused
        for topics the group is subscribed to); ``{(topic, partition): None or KafkaError}``."""
        topics: dict[str, list[dict[str, int]]] = {}
        for topic, partition in sorted(partitions):
            topics.setdefault(topic, []).append({"partition_index": partition})
        response = self._to_coordinator(
            group,
            ApiKey.OFFSET_DELETE,
            {"group_id": group, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]},
            f"delete offsets of group {group!r}",
        )
        _raise_for_group(response["error_code"], group, principal=self.principal)
        return {
            (t["name"], p["partition_index"]): _group_error(
                p["error_code"], f"group {group!r} {t['name']}-{p['partition_index']}", principal=self.principal
            )
            for t in response["topics"]
            for p in t["partitions"]
        }


def _error_codes(response: Body) -> list[int]:
    """Every error code of a group response: its own, each group's or result's, each partition's."""
    codes = [response["error_code"]] if "error_code" in response else []
    for item in response.get("groups") or response.get("results") or ():
        codes.append(item["error_code"])
    for topic in response.get("topics") or ():
        codes.extend(p["error_code"] for p in topic["partitions"])
    return codes


def assigned_partitions(assignment: bytes | memoryview | None) -> dict[str, list[int]]:
    """``{topic: [partitions]}`` of a consumer-protocol assignment; ``{}`` for an empty or unreadable one."""
    if not assignment:
        return {}
    try:
        decoded = decode_assignment(bytes(assignment))
    except ConsumerProtocolError:
        return {}
    return {topic: sorted(partitions) for topic, partitions in decoded.partitions}


def _raise_for_group(code: int, subject: str, message: str | None = None, *, principal: str | None = None) -> None:
    if code in _COORDINATOR_MOVED:
        raise RetriableError(f"{subject}: {ErrorCode(code).name}", code)
    error = _group_error(code, subject, message, principal=principal)
    if error is not None:
        raise error


def _group_error(
    code: int, subject: str, message: str | None = None, *, principal: str | None = None
) -> KafkaError | None:
    subject = subject if subject.startswith(("group ", "the ")) else f"group {subject!r}"
    return error_for(code, subject, message, principal=principal)


def _api_name(api: ApiKey) -> str:
    return "".join(word.capitalize() for word in api.name.split("_"))
