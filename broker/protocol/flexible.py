"""The flexible (KIP-482) encodings: compact strings, bytes and arrays, unsigned varints, tagged fields.

Flexible versions use them (today the ``__consumer_offsets`` values v4, KIP-915: Kafka 3.5+ reads
them, so a later Kafka may write them; no request version the broker advertises is flexible).
Strings, bytes and arrays carry an unsigned varint of length + 1 (0 for null), and every struct
ends with tagged fields, which are skipped when read and written as none. The types follow the
interface of ``broker.protocol.types`` (``decode(reader, version)``, ``encode(writer, value,
version)``) so that the same ``Field`` lists describe both encodings.
"""

from typing import Any

from broker.records.buffers import Bytes
from broker.records.varint import encode_unsigned

from .types import Array, ItemType, Message, ProtocolError, Reader, Struct, Writer


def write_uvarint(writer: Writer, value: int) -> None:
    writer.write(encode_unsigned(value))


def _length(reader: Reader, what: str, nullable: bool) -> int | None:
    size = reader.uvarint() - 1
    if size == -1 and nullable:
        return None
    if size < 0:
        raise ProtocolError(f"null for a non-nullable {what} at {reader.pos}")
    return size


class CompactString:
    def __init__(self, nullable: bool):
        self.nullable = nullable
        self.default: str | None = None if nullable else ""

    def decode(self, reader: Reader, version: int) -> str | None:
        size = _length(reader, "compact string", self.nullable)
        return None if size is None else reader.text(size)

    def encode(self, writer: Writer, value: str | None, version: int) -> None:
        data = None if value is None else value.encode("utf-8")
        _write_compact(writer, data, self.nullable, "compact string")


class CompactBytes:
    def __init__(self, nullable: bool):
        self.nullable = nullable
        self.default: bytes | None = None if nullable else b""

    def decode(self, reader: Reader, version: int) -> memoryview | None:
        size = _length(reader, "compact bytes", self.nullable)
        return None if size is None else reader.take(size)

    def encode(self, writer: Writer, value: Bytes | None, version: int) -> None:
        _write_compact(writer, value, self.nullable, "compact bytes")


def _write_compact(writer: Writer, data: Bytes | None, nullable: bool, what: str) -> None:
    if data is None:
        if not nullable:
            raise ValueError(f"null for a non-nullable {what}")
        write_uvarint(writer, 0)
        return
    write_uvarint(writer, len(data) + 1)
    writer.write(data)


class CompactArray(Array[ItemType]):
    def decode(self, reader: Reader, version: int) -> list[Any]:
        count = _length(reader, "compact array", False)
        assert count is not None  # not nullable
        if count > reader.remaining:  # every element takes at least one byte
            raise ProtocolError(f"array of {count} elements at {reader.pos} ({reader.remaining} bytes left)")
        return [self.item.decode(reader, version) for _ in range(count)]

    def encode(self, writer: Writer, value: list[Any] | None, version: int) -> None:
        if value is None:
            raise TypeError("null for a compact array")
        write_uvarint(writer, len(value) + 1)
        for element in value:
            self.item.encode(writer, element, version)


class FlexibleStruct(Struct):
    """A struct followed by its tagged fields (skipped on reading, none written)."""

    def decode(self, reader: Reader, version: int) -> Message:
        fields = super().decode(reader, version)
        reader.skip_tagged_fields()
        return fields

    def encode(self, writer: Writer, value: Message, version: int) -> None:
        super().encode(writer, value, version)
        write_uvarint(writer, 0)


COMPACT_STRING = CompactString(nullable=False)
COMPACT_NULLABLE_STRING = CompactString(nullable=True)
COMPACT_BYTES = CompactBytes(nullable=False)
