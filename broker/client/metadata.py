"""Cluster metadata as the client holds it: the brokers, each partition's leader and replicas, the
controller; read from a Metadata answer (sans I/O: the client sends the request), and forgotten
piece by piece when a transient failure makes it stale (``ClusterMetadata.forget_after``).
"""

import re
from collections.abc import Sequence
from typing import NamedTuple

from broker.protocol.errors import ErrorCode

from .connection import Body, BrokerConnectionError
from .retry import RETRIABLE, RetriableError, TopicPartition

SHOWN_PARTITIONS = 20  # partitions named in an error, at most


class Broker(NamedTuple):
    node_id: int
    host: str
    port: int


class Metadata(NamedTuple):
    brokers: dict[int, Broker]  # node id -> Broker
    leaders: dict[TopicPartition, int]  # (topic, partition) -> leader node id (-1 when none)
    topic_errors: dict[str, int]  # topic -> error code, for topics the broker answered with an error
    controller_id: int = -1
    internal: frozenset[str] = frozenset()  # topics the cluster marks internal (__consumer_offsets)
    cluster_id: str | None = None  # None from brokers before Metadata v2
    replicas: dict[TopicPartition, tuple[int, ...]] = {}  # (topic, partition) -> the ids of its replicas
    isr: dict[TopicPartition, tuple[int, ...]] = {}  # (topic, partition) -> the ids of its in-sync replicas


NO_METADATA = Metadata({}, {}, {})


def request_body(version: int, topics: Sequence[str] | None, create: bool) -> Body:
    """A Metadata request for ``topics`` (all when None: v0 says so with an empty list)."""
    wanted: list[dict[str, str]] | None
    if topics is None:
        wanted = [] if version == 0 else None
    else:
        wanted = [{"name": t} for t in topics]
    return {"topics": wanted, "allow_auto_topic_creation": create}


def from_response(response: Body) -> Metadata:
    """The Metadata of an answer; RetriableError when a topic's error is transient."""
    brokers = {b["node_id"]: Broker(b["node_id"], b["host"], b["port"]) for b in response["brokers"]}
    leaders: dict[TopicPartition, int] = {}
    replicas: dict[TopicPartition, tuple[int, ...]] = {}
    isr: dict[TopicPartition, tuple[int, ...]] = {}
    topic_errors: dict[str, int] = {}
    internal: set[str] = set()
    for topic in response["topics"]:
        if topic["is_internal"]:
            internal.add(topic["name"])
        if topic["error_code"] in RETRIABLE:
            raise RetriableError(f"topic {topic['name']}: error {topic['error_code']}", topic["error_code"])
        if topic["error_code"]:
            topic_errors[topic["name"]] = topic["error_code"]
        for p in topic["partitions"]:
            leaders[(topic["name"], p["partition_index"])] = p["leader_id"]
            replicas[(topic["name"], p["partition_index"])] = tuple(p["replica_nodes"])
            isr[(topic["name"], p["partition_index"])] = tuple(p["isr_nodes"])
    return Metadata(
        brokers,
        leaders,
        topic_errors,
        response["controller_id"],
        frozenset(internal),
        response.get("cluster_id"),
        replicas,
        isr,
    )


class ClusterMetadata:
    """The metadata last fetched (``current``)."""

    def __init__(self) -> None:
        self.current = NO_METADATA

    def update(self, answer: Metadata, topics: Sequence[str] | None) -> None:
        """Take in the ``answer`` to a request for ``topics`` (all when None): the brokers and the
        controller as it says, its topics' partitions; what is known of the other topics stays."""
        if topics is None:
            self.current = answer
            return
        asked = set(topics)
        kept = self.current
        self.current = answer._replace(
            leaders={**{tp: n for tp, n in kept.leaders.items() if tp[0] not in asked}, **answer.leaders},
            topic_errors={**{t: c for t, c in kept.topic_errors.items() if t not in asked}, **answer.topic_errors},
            internal=frozenset(t for t in kept.internal if t not in asked) | answer.internal,
            replicas={**{tp: r for tp, r in kept.replicas.items() if tp[0] not in asked}, **answer.replicas},
            isr={**{tp: r for tp, r in kept.isr.items() if tp[0] not in asked}, **answer.isr},
        )

    def forget_after(self, failure: BrokerConnectionError | RetriableError) -> None:
        """Forget what ``failure`` made stale: after a broken connection all of it (the cluster may
        have moved: the next request bootstraps again); after a transient error code the leaders of
        the partitions it concerns (the next request for them fetches their metadata anew)."""
        if isinstance(failure, BrokerConnectionError):
            self.current = NO_METADATA
        elif failure.partitions:
            stale = set(failure.partitions)
            self.current = self.current._replace(
                leaders={tp: leader for tp, leader in self.current.leaders.items() if tp not in stale}
            )

    def leaders(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """``{(topic, partition): leader node id}`` by ``current`` (which must list each of them);
        one RetriableError naming every partition without a leader (and the brokers holding them)."""
        found = {tp: self.current.leaders[tp] for tp in partitions}
        leaderless = sorted(tp for tp, leader in found.items() if leader < 0)
        if leaderless:
            raise RetriableError(no_leader(self.current, leaderless), ErrorCode.LEADER_NOT_AVAILABLE, tuple(leaderless))
        return found


def no_leader(metadata: Metadata, partitions: list[TopicPartition]) -> str:
    """``t-1, t-4 have no leader (LEADER_NOT_AVAILABLE): broker 2, which holds them, is down (live
    brokers: 1, 3)``; the brokers named when the metadata lists the partitions' replicas."""
    names = ", ".join(f"{t}-{p}" for t, p in partitions[:SHOWN_PARTITIONS]) + (
        f" and {len(partitions) - SHOWN_PARTITIONS} more" if len(partitions) > SHOWN_PARTITIONS else ""
    )
    one = len(partitions) == 1
    message = f"{names} {'has' if one else 'have'} no leader (LEADER_NOT_AVAILABLE)"
    down = sorted({r for tp in partitions for r in metadata.replicas.get(tp, ()) if r not in metadata.brokers})
    if not down:
        return message
    live = ", ".join(map(str, sorted(metadata.brokers))) or "none"
    return (
        f"{message}: broker{'s' if len(down) > 1 else ''} {', '.join(map(str, down))}, which "
        f"{'hold' if len(down) > 1 else 'holds'} {'it' if one else 'them'}, {'are' if len(down) > 1 else 'is'} "
        f"down (live brokers: {live})"
    )


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` -> ``[("h1", 9092), ("h2", 9093)]``; ValueError with an example if malformed.
    A listener name before an address (``PLAINTEXT://h1:9092``) is ignored, as Kafka's clients ignore it."""
    out = []
    for item in (re.sub(r"^[A-Za-z0-9_]+://", "", s.strip()) for s in servers.split(",")):
        host, sep, port = item.rpartition(":")
        if (
            not item
            or not sep
            or not host
            or any(c.isspace() for c in host)
            or not port.isascii()
            or not port.isdigit()
            or not 0 < int(port) < 65536
        ):
            raise ValueError(f"{servers!r} is not a list of host:port (for example 127.0.0.1:9092,broker2:9092)")
        out.append((host.strip("[]"), int(port)))
    return out
