"""The records of ``__transaction_state``, in Kafka's key and value formats.

Both start with an int16 version. Key v0: the transactional id (a STRING). Value v0: producer id,
producer epoch, transaction timeout, status (the state's id), the partitions of the open
transaction (a nullable array of topic and partition ids; null in Empty), the last update and the
transaction start timestamps. Value v1 has the same fields in the flexible encoding plus tagged
fields (previous and next producer id, the client's transaction version, KIP-890) that are skipped
here. Kafka writes v0 until the ``transaction.version`` feature is raised, and so does this broker;
it reads both. A null value is a tombstone: the id expired.

Decoders take bytes and refuse malformed input with ``TransactionLogError`` (one line naming the
part that is wrong).
"""

import struct
from typing import Any

from broker.protocol.flexible import COMPACT_STRING, CompactArray, FlexibleStruct, write_uvarint
from broker.protocol.types import INT8, INT16, INT32, INT64, STRING, Array, ProtocolError, Reader, Struct, Writer

from .transaction_metadata import TopicPartition, TransactionMetadata, TxnState

KEY_VERSION = 0
VALUE_VERSIONS = (0, 1)
VALUE_VERSION_WRITTEN = 0
_FIRST_FLEXIBLE = 1

_VERSION = struct.Struct(">h")


class TransactionLogError(ValueError):
    """A ``__transaction_state`` key or value that is malformed or of an unknown version."""


class _NullableCompactArray(CompactArray[Any]):
    """A compact array whose length 0 stands for null."""

    def decode(self, reader: Reader, version: int) -> list[Any] | None:  # type: ignore[override]
        if reader.remaining and reader.buf[reader.pos] == 0:
            reader.uvarint()
            return None
        return super().decode(reader, version)

    def encode(self, writer: Writer, value: list[Any] | None, version: int) -> None:
        if value is None:
            write_uvarint(writer, 0)
        else:
            super().encode(writer, value, version)


def _value_schema(struct_type: type[Struct], nullable_array: Any, int32_array: Any, string: Any) -> Struct:
    return struct_type(
        ("producer_id", INT64),
        ("producer_epoch", INT16),
        ("timeout_ms", INT32),
        ("status", INT8),
        ("partitions", nullable_array(struct_type(("topic", string), ("partition_ids", int32_array)))),
        ("last_update_ms", INT64),
        ("start_ms", INT64),
    )


_KEY = Struct(("transactional_id", STRING))
_VALUE_V0 = _value_schema(Struct, lambda item: Array(item, nullable_since=0), Array(INT32), STRING)
_VALUE_V1 = _value_schema(FlexibleStruct, _NullableCompactArray, CompactArray(INT32), COMPACT_STRING)


def encode_key(transactional_id: str) -> bytes:
    return _encode(_KEY, {"transactional_id": transactional_id}, KEY_VERSION, "transaction log key")


def decode_key(data: bytes | None) -> str:
    """The transactional id of a key."""
    body, version = _versioned(data, "transaction log key")
    if version != KEY_VERSION:
        raise TransactionLogError(f"transaction log key: unknown version {version}")
    return str(_decode(_KEY, body, version, "transaction log key")["transactional_id"])


def encode_value(metadata: TransactionMetadata | None, version: int = VALUE_VERSION_WRITTEN) -> bytes | None:
    """The value recording ``metadata`` (None: a tombstone)."""
    if metadata is None:
        return None
    if version not in VALUE_VERSIONS:
        raise TransactionLogError(f"transaction log value: unknown version {version}")
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(metadata.partitions):
        by_topic.setdefault(topic, []).append(partition)
    fields = {
        "producer_id": metadata.producer_id,
        "producer_epoch": metadata.producer_epoch,
        "timeout_ms": metadata.timeout_ms,
        "status": metadata.state.value,
        "partitions": None
        if metadata.state is TxnState.EMPTY
        else [{"topic": t, "partition_ids": ids} for t, ids in by_topic.items()],
        "last_update_ms": metadata.last_update_ms,
        "start_ms": metadata.start_ms,
    }
    return _encode(_value_schema_of(version), fields, version, "transaction log value")


def decode_value(transactional_id: str, data: bytes | None) -> TransactionMetadata | None:
    """The metadata a value records (None for a tombstone)."""
    if data is None:
        return None
    body, version = _versioned(data, "transaction log value")
    if version not in VALUE_VERSIONS:
        raise TransactionLogError(f"transaction log value: unknown version {version}")
    fields = _decode(_value_schema_of(version), body, version, "transaction log value")
    try:
        state = TxnState(fields["status"])
    except ValueError:
        raise TransactionLogError(f"transaction log value v{version}: unknown status {fields['status']}") from None
    partitions: set[TopicPartition] = {
        (entry["topic"], index) for entry in fields["partitions"] or () for index in entry["partition_ids"]
    }
    return TransactionMetadata(
        transactional_id,
        fields["producer_id"],
        fields["producer_epoch"],
        fields["timeout_ms"],
        state,
        partitions,
        fields["start_ms"],
        fields["last_update_ms"],
    )


def _value_schema_of(version: int) -> Struct:
    return _VALUE_V1 if version >= _FIRST_FLEXIBLE else _VALUE_V0


def _versioned(data: bytes | None, what: str) -> tuple[bytes, int]:
    if data is None or len(data) < _VERSION.size:
        raise TransactionLogError(f"{what}: {'null' if data is None else 'shorter than its version'}")
    return bytes(data), _VERSION.unpack_from(data)[0]


def _decode(schema: Struct, data: bytes, version: int, what: str) -> dict[str, Any]:
    reader = Reader(data, _VERSION.size)
    try:
        fields = schema.decode(reader, version)
    except (ProtocolError, UnicodeDecodeError) as exc:
        raise TransactionLogError(f"{what} v{version}: {exc}") from None
    if reader.remaining:
        raise TransactionLogError(f"{what} v{version}: {reader.remaining} bytes after the last field")
    return fields


def _encode(schema: Struct, fields: dict[str, Any], version: int, what: str) -> bytes:
    writer = Writer()
    writer.pack(_VERSION, version)
    try:
        schema.encode(writer, fields, version)
    except ValueError as exc:
        raise TransactionLogError(f"{what} v{version}: {exc}") from None
    return writer.finish_bytes()
