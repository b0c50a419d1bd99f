"""The records of ``__consumer_offsets``, in Kafka's own key and value formats and versions.

Every key and value starts with an int16 version. Keys: versions 0 and 1 are an offset commit key
(group, topic, partition), version 2 a group metadata key (group). Offset commit values: v0
(offset, metadata, commit timestamp), v1 (+ expire timestamp), v2 (as v0), v3 (+ leader epoch);
Kafka writes v1 when an expire timestamp is set, else v3. Group metadata values v0-v3: protocol
type, generation, protocol, leader, current state timestamp (v2+), and members with member id,
group instance id (v3), client id, host, rebalance timeout (v1+; v0 readers take the session
timeout, as Kafka does), session timeout, subscription and assignment bytes. Both values have a
flexible v4 (KIP-915; the fields of v3, compact encodings, tagged fields) that Kafka 3.5+ reads;
it is read and written here too, but v3 stays the default, as in Kafka. A null value is a
tombstone: it deletes its key.

Decoders take bytes and return values, refusing malformed input with ``OffsetsRecordError`` (one
line naming the part that is wrong); lengths are bounded by the bytes present. Encoders refuse a
version that cannot carry a value (a leader epoch at v1, say) instead of dropping it silently.
"""

import struct
from dataclasses import asdict, dataclass, field
from typing import Any, overload

from broker.protocol.flexible import (
    COMPACT_BYTES,
    COMPACT_NULLABLE_STRING,
    COMPACT_STRING,
    CompactArray,
    FlexibleStruct,
)
from broker.protocol.types import (
    BYTES,
    INT32,
    INT64,
    NULLABLE_STRING,
    STRING,
    Array,
    Field,
    FieldType,
    ProtocolError,
    Reader,
    Struct,
    Writer,
)

OFFSET_KEY_VERSIONS = (0, 1)
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSIONS = range(0, 5)
GROUP_VALUE_VERSIONS = range(0, 5)
GROUP_VALUE_VERSION_WRITTEN = 3

_VERSION = struct.Struct(">h")

Fields = dict[str, Any]  # a struct's fields by name, as the protocol types decode and encode them

_OFFSET_KEY = Struct(("group", STRING), ("topic", STRING), ("partition", INT32))
_GROUP_KEY = Struct(("group", STRING))


def _offset_value(struct: type[Struct], string: FieldType) -> Struct:
    return struct(
        ("offset", INT64),
        Field("leader_epoch", INT32, since=3, default=-1),
        ("metadata", string),
        ("commit_timestamp", INT64),
        Field("expire_timestamp", INT64, since=1, until=1, default=-1),
    )


def _group_value(
    struct: type[Struct], array: type[Array[Any]], string: FieldType, nullable_string: FieldType, opaque: FieldType
) -> Struct:
    member = struct(
        ("member_id", string),
        Field("group_instance_id", nullable_string, since=3),
        ("client_id", string),
        ("client_host", string),
        Field("rebalance_timeout", INT32, since=1),
        ("session_timeout", INT32),
        ("subscription", opaque),
        ("assignment", opaque),
    )
    return struct(
        ("protocol_type", string),
        ("generation", INT32),
        ("protocol", nullable_string),
        ("leader", nullable_string),
        Field("current_state_timestamp", INT64, since=2, default=-1),
        ("members", array(member)),
    )


_OFFSET_VALUE = _offset_value(Struct, STRING)
_GROUP_VALUE = _group_value(Struct, Array, STRING, NULLABLE_STRING, BYTES)
# v4 and later are flexible (KIP-915); Kafka writes v3 (v1 with an expire timestamp) and reads v4
_FLEXIBLE_OFFSET_VALUE = _offset_value(FlexibleStruct, COMPACT_STRING)
_FLEXIBLE_GROUP_VALUE = _group_value(
    FlexibleStruct, CompactArray, COMPACT_STRING, COMPACT_NULLABLE_STRING, COMPACT_BYTES
)
FIRST_FLEXIBLE_VERSION = 4


def _offset_value_schema(version: int) -> Struct:
    return _FLEXIBLE_OFFSET_VALUE if version >= FIRST_FLEXIBLE_VERSION else _OFFSET_VALUE


def _group_value_schema(version: int) -> Struct:
    return _FLEXIBLE_GROUP_VALUE if version >= FIRST_FLEXIBLE_VERSION else _GROUP_VALUE


class OffsetsRecordError(ValueError):
    """A ``__consumer_offsets`` key or value that is malformed, of an unknown version, or not encodable."""


@dataclass(frozen=True)
class OffsetKey:
    """The key of a committed offset: one partition of one topic, for one group."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    """The key of a group's metadata."""

    group: str


@dataclass(frozen=True)
class OffsetValue:
    """A committed offset. -1 means absent for the leader epoch and the expire timestamp."""

    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int = -1


@dataclass(frozen=True)
class GroupMember:
    """One member of a group, with its opaque subscription and assignment (consumer_protocol)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes = b""
    assignment: bytes = b""


@dataclass(frozen=True)
class GroupValue:
    """A group's metadata as the coordinator stores it after each generation."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[GroupMember, ...] = field(default_factory=tuple)


def version_of(data: bytes | None, what: str = "record") -> int:
    """The int16 version every key and value starts with."""
    return _versioned(data, what)[1]


def _versioned(data: bytes | None, what: str) -> tuple[bytes, int]:
    """``data`` and its version; OffsetsRecordError when it has none (None, or fewer than 2 bytes)."""
    if data is None or len(data) < 2:
        size = 0 if data is None else len(data)
        raise OffsetsRecordError(f"__consumer_offsets {what} of {size} bytes has no version")
    version: int = _VERSION.unpack_from(data)[0]
    return data, version


def encode_key(key: OffsetKey | GroupKey, version: int | None = None) -> bytes:
    """An offset key (version 1 unless given: 0 and 1 are the same layout) or a group key (version 2)."""
    if isinstance(key, OffsetKey):
        version = OFFSET_KEY_VERSIONS[-1] if version is None else version
        if version not in OFFSET_KEY_VERSIONS:
            raise OffsetsRecordError(f"an offset commit key has version 0 or 1, not {version}")
        return _encode(_OFFSET_KEY, asdict(key), version, "offset commit key")
    if version not in (None, GROUP_KEY_VERSION):
        raise OffsetsRecordError(f"a group metadata key has version 2, not {version}")
    return _encode(_GROUP_KEY, asdict(key), GROUP_KEY_VERSION, "group metadata key")


def decode_key(data: bytes | None) -> OffsetKey | GroupKey:
    """The key of a ``__consumer_offsets`` record; OffsetsRecordError for unknown versions or bad bytes."""
    data, version = _versioned(data, "key")
    if version in OFFSET_KEY_VERSIONS:
        return OffsetKey(**_decode(_OFFSET_KEY, data, version, "offset commit key"))
    if version == GROUP_KEY_VERSION:
        return GroupKey(**_decode(_GROUP_KEY, data, version, "group metadata key"))
    raise OffsetsRecordError(
        f"__consumer_offsets key version {version} is unknown (0 and 1: offset commit, 2: group metadata)"
    )


def encode_value(value: OffsetValue | GroupValue | None, version: int | None = None) -> bytes | None:
    """The value bytes; None (a tombstone) for None. Default versions are the ones Kafka writes."""
    if value is None:
        return None
    if isinstance(value, OffsetValue):
        if version is None:
            version = 1 if value.expire_timestamp != -1 else 3
        return _encode_checked(
            _offset_value_schema(version), asdict(value), version, OFFSET_VALUE_VERSIONS, "offset commit value"
        )
    if version is None:
        version = GROUP_VALUE_VERSION_WRITTEN
    fields = asdict(value)
    if version == 0:  # v0 readers take the session timeout as the rebalance timeout
        if any(m.rebalance_timeout != m.session_timeout for m in value.members):
            raise OffsetsRecordError(
                "group metadata value v0 cannot carry a rebalance timeout other than the session timeout"
            )
        for member in fields["members"]:
            del member["rebalance_timeout"]
    return _encode_checked(_group_value_schema(version), fields, version, GROUP_VALUE_VERSIONS, "group metadata value")


@overload
def decode_value(key: OffsetKey, data: bytes | None) -> OffsetValue | None: ...
@overload
def decode_value(key: GroupKey, data: bytes | None) -> GroupValue | None: ...
@overload
def decode_value(key: OffsetKey | GroupKey, data: bytes | None) -> OffsetValue | GroupValue | None: ...


def decode_value(key: OffsetKey | GroupKey, data: bytes | None) -> OffsetValue | GroupValue | None:
    """The value of the record with ``key``: None for a tombstone."""
    if data is None:
        return None
    if isinstance(key, OffsetKey):
        version = _known_version(data, OFFSET_VALUE_VERSIONS, "offset commit value")
        return OffsetValue(**_decode(_offset_value_schema(version), data, version, "offset commit value"))
    version = _known_version(data, GROUP_VALUE_VERSIONS, "group metadata value")
    fields = _decode(_group_value_schema(version), data, version, "group metadata value")
    fields["members"] = tuple(_member(m, version) for m in fields["members"])
    return GroupValue(**fields)


def fields_in_version(value: OffsetValue | GroupValue, version: int) -> Fields:
    """The fields of ``value`` that its ``version`` carries (members as dicts too), as the record holds them."""
    schema = _offset_value_schema(version) if isinstance(value, OffsetValue) else _group_value_schema(version)
    return _present(schema, asdict(value), version)


def _present(schema: Struct, fields: Fields, version: int) -> Fields:
    out = {}
    for schema_field in schema.fields:
        if schema_field.present_in(version):
            value = fields[schema_field.name]
            if isinstance(schema_field.type, Array):
                value = [_present(schema_field.type.item, item, version) for item in value]
            out[schema_field.name] = value
    return out


def _member(fields: Fields, version: int) -> GroupMember:
    fields["subscription"], fields["assignment"] = bytes(fields["subscription"]), bytes(fields["assignment"])
    if version == 0:
        fields["rebalance_timeout"] = fields["session_timeout"]
    return GroupMember(**fields)


def _known_version(data: bytes, versions: range, what: str) -> int:
    return _checked_version(version_of(data, what), versions, what)


def _checked_version(version: int, versions: range, what: str) -> int:
    if version not in versions:
        raise OffsetsRecordError(f"{what} version {version} is unknown (known: {versions[0]}-{versions[-1]})")
    return version


def _decode(schema: Struct, data: bytes, version: int, what: str) -> Fields:
    reader = Reader(data, _VERSION.size)
    try:
        fields = schema.decode(reader, version)
    except ProtocolError as exc:
        raise OffsetsRecordError(f"{what} v{version}: {exc}") from None
    if reader.remaining:
        raise OffsetsRecordError(f"{what} v{version}: {reader.remaining} bytes after the last field")
    return fields


def _encode_checked(schema: Struct, fields: Fields, version: int, versions: range, what: str) -> bytes:
    _checked_version(version, versions, what)
    lost = _fields_lost(schema, fields, version)
    if lost:
        raise OffsetsRecordError(f"{what} v{version} cannot carry {lost}")
    return _encode(schema, fields, version, what)


def _fields_lost(schema: Struct, fields: Fields, version: int) -> str | None:
    """The first field holding a non-default value that ``version`` has no room for."""
    for schema_field in schema.fields:
        default = schema._default(schema_field)
        value = fields.get(schema_field.name, default)
        if not schema_field.present_in(version):
            if value != default:
                return f"{schema_field.name}={value!r}"
        elif isinstance(schema_field.type, Array):
            for item in value:
                lost = _fields_lost(schema_field.type.item, item, version)
                if lost:
                    return lost
    return None


def _encode(schema: Struct, fields: Fields, version: int, what: str) -> bytes:
    writer = Writer()
    writer.pack(_VERSION, version)
    try:
        schema.encode(writer, fields, version)
    except ValueError as exc:
        raise OffsetsRecordError(f"{what} v{version}: {exc}") from None
    return writer.finish_bytes()
