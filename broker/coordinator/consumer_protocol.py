"""The consumer protocol: the subscription and assignment bytes that ``consumer`` groups exchange.

The broker treats them as opaque (JoinGroup metadata, SyncGroup assignments, the members of a
group metadata value); the tools and the coordinator's describe decode them. Both start with an
int16 version. Subscription v0: topics, user data; v1: + owned partitions; v2: + generation id;
v3: + rack id. Assignment v0-v3 share one layout: assigned partitions, user data. Newer versions
only append fields, so, as Kafka's ``ConsumerProtocol`` and kafka-python do, a version above 3 is
read as version 3 and the fields it appends are skipped; a negative version is refused.
"""

import struct
from dataclasses import dataclass
from typing import Any

from broker.protocol.types import (
    INT32,
    NULLABLE_BYTES,
    NULLABLE_STRING,
    STRING,
    Array,
    Field,
    ProtocolError,
    Reader,
    Struct,
    Writer,
)

HIGHEST_VERSION = 3
_VERSION = struct.Struct(">h")
_TOPIC_PARTITIONS = Struct(("topic", STRING), ("partitions", Array(INT32)))
_SUBSCRIPTION = Struct(
    ("topics", Array(STRING)),
    ("user_data", NULLABLE_BYTES),
    Field("owned_partitions", Array(_TOPIC_PARTITIONS), since=1),
    Field("generation_id", INT32, since=2, default=-1),
    Field("rack_id", NULLABLE_STRING, since=3),
)
_ASSIGNMENT = Struct(("partitions", Array(_TOPIC_PARTITIONS)), ("user_data", NULLABLE_BYTES))

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]
"""Partitions grouped by topic: ``(("events", (0, 1)), ("clicks", (3,)))``."""


class ConsumerProtocolError(ValueError):
    """Subscription or assignment bytes that are malformed, or a value a version cannot carry."""


@dataclass(frozen=True)
class Subscription:
    """What a member asks for when it joins: its topics, and (v1+) what it owns from the last generation."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    """What the leader gives a member: partitions by topic."""

    partitions: TopicPartitions
    user_data: bytes | None = None


def encode_subscription(subscription: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    if subscription.owned_partitions and version < 1:
        raise ConsumerProtocolError(f"subscription v{version} cannot carry owned partitions")
    if subscription.generation_id != -1 and version < 2:
        raise ConsumerProtocolError(f"subscription v{version} cannot carry generation id {subscription.generation_id}")
    if subscription.rack_id is not None and version < 3:
        raise ConsumerProtocolError(f"subscription v{version} cannot carry rack id {subscription.rack_id!r}")
    fields = {
        "topics": subscription.topics,
        "user_data": subscription.user_data,
        "owned_partitions": _encodable(subscription.owned_partitions),
        "generation_id": subscription.generation_id,
        "rack_id": subscription.rack_id,
    }
    return _encode(_SUBSCRIPTION, fields, version, "subscription")


def decode_subscription(data: bytes) -> Subscription:
    fields = _decode(_SUBSCRIPTION, data, "subscription")
    return Subscription(
        tuple(fields["topics"]),
        _bytes(fields["user_data"]),
        _grouped(fields["owned_partitions"]),
        fields["generation_id"],
        fields["rack_id"],
    )


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    fields = {"partitions": _encodable(assignment.partitions), "user_data": assignment.user_data}
    return _encode(_ASSIGNMENT, fields, version, "assignment")


def decode_assignment(data: bytes) -> Assignment:
    fields = _decode(_ASSIGNMENT, data, "assignment")
    return Assignment(_grouped(fields["partitions"]), _bytes(fields["user_data"]))


def _encodable(partitions: TopicPartitions) -> list[dict[str, Any]]:
    return [{"topic": topic, "partitions": numbers} for topic, numbers in partitions]


def _grouped(items: list[dict[str, Any]]) -> TopicPartitions:
    return tuple((item["topic"], tuple(item["partitions"])) for item in items)


def _bytes(data: bytes | bytearray | memoryview | None) -> bytes | None:
    return None if data is None else bytes(data)


def _encode(schema: Struct, fields: dict[str, Any], version: int, what: str) -> bytes:
    if not 0 <= version <= HIGHEST_VERSION:
        raise ConsumerProtocolError(f"{what} version {version} is unknown (known: 0-{HIGHEST_VERSION})")
    writer = Writer()
    writer.pack(_VERSION, version)
    try:
        schema.encode(writer, fields, version)
    except ValueError as exc:
        raise ConsumerProtocolError(f"{what} v{version}: {exc}") from None
    return writer.finish_bytes()


def _decode(schema: Struct, data: bytes, what: str) -> dict[str, Any]:
    if len(data) < _VERSION.size:
        raise ConsumerProtocolError(f"{what} of {len(data)} bytes has no version")
    version = _VERSION.unpack_from(data)[0]
    if version < 0:
        raise ConsumerProtocolError(f"{what} version {version} is negative")
    reader = Reader(data, _VERSION.size)
    try:
        fields = schema.decode(reader, min(version, HIGHEST_VERSION))
    except ProtocolError as exc:
        raise ConsumerProtocolError(f"{what} v{version}: {exc}") from None
    if reader.remaining and version <= HIGHEST_VERSION:
        raise ConsumerProtocolError(f"{what} v{version}: {reader.remaining} bytes after the last field")
    return fields
