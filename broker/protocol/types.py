"""Kafka protocol primitives and a small declarative schema: the wire codec, without I/O.

A message is a ``Struct`` of ``Field``s, each valid for a range of API versions (``since`` ..
``until``). ``Struct.decode(reader, version)`` returns a dict holding every field of the schema
(fields absent from that version get their default); ``Struct.encode(writer, value, version)``
writes the fields of that version from a dict. These are the non-flexible encodings (the broker
advertises no flexible version); the two compact primitives needed to read a flexible request
header live on ``Reader``, and the flexible (compact) types built on them in ``flexible``.

``RECORDS`` encodes either bytes or any object with ``size`` and ``read()`` (a file slice): the
``Writer`` keeps such objects as separate parts, so the network layer can send them with sendfile.
"""

import struct
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast

from broker.records.buffers import Bytes
from broker.records.varint import read_unsigned

MAX_VERSION = 2**15 - 1
_MAX_UVARINT_BYTES = 5

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


# a decoded struct: each field's name and value (values are as dynamic as the schemas that hold them)
Message = dict[str, Any]


class ProtocolError(ValueError):
    """The bytes do not follow the schema (truncated, negative lengths, bad strings)."""


class FileSlice(Protocol):
    """A part of a message sent from a file (``broker.log.file_records.FileSlice``)."""

    @property
    def size(self) -> int: ...

    def read(self) -> bytes: ...


Part = bytes | FileSlice


class FieldType(Protocol):
    """What a ``Field`` holds: a type, a ``Struct`` or an ``Array``, with the value it defaults to."""

    @property
    def default(self) -> Any: ...

    def decode(self, reader: "Reader", version: int) -> Any: ...

    def encode(self, writer: "Writer", value: Any, version: int) -> None: ...


class Reader:
    """A cursor over a request's bytes."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: Bytes, pos: int = 0):
        self.buf = memoryview(buf)
        self.pos = pos

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def _unpack(self, fmt: struct.Struct) -> Any:
        end = self.pos + fmt.size
        if end > len(self.buf):
            raise ProtocolError(f"truncated: {fmt.size} bytes needed at {self.pos}, {self.remaining} left")
        (value,) = fmt.unpack_from(self.buf, self.pos)
        self.pos = end
        return value

    def int8(self) -> int:
        return int(self._unpack(_INT8))

    def int16(self) -> int:
        return int(self._unpack(_INT16))

    def int32(self) -> int:
        return int(self._unpack(_INT32))

    def int64(self) -> int:
        return int(self._unpack(_INT64))

    def take(self, size: int) -> memoryview:
        if size < 0 or self.pos + size > len(self.buf):
            raise ProtocolError(f"field of {size} bytes at {self.pos} overruns the message ({self.remaining} left)")
        view = self.buf[self.pos : self.pos + size]
        self.pos += size
        return view

    def text(self, size: int) -> str:
        try:
            return str(self.take(size), "utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(f"string at {self.pos - size} is not UTF-8") from None

    def uvarint(self) -> int:
        """An unsigned varint of at most five bytes (a flexible version's lengths and tags)."""
        end = len(self.buf)
        found = read_unsigned(self.buf, self.pos, end, _MAX_UVARINT_BYTES)
        if found is None:
            if end - self.pos < _MAX_UVARINT_BYTES:
                raise ProtocolError(f"truncated: unsigned varint at {self.pos}, {self.remaining} bytes left")
            raise ProtocolError(f"unsigned varint longer than {_MAX_UVARINT_BYTES} bytes at {self.pos}")
        value, self.pos = found
        return value

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


class Writer:
    """Accumulates an encoded message as a list of parts: bytes, and file slices kept apart."""

    __slots__ = ("parts", "_buf", "size")

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self._buf = bytearray()
        self.size = 0

    def write(self, data: Bytes) -> None:
        self._buf += data

    def pack(self, fmt: struct.Struct, value: Any) -> None:
        self._buf += fmt.pack(value)

    def finish_framed(self, prefix: struct.Struct) -> list[Part]:
        """``finish``, with the first bytes (a ``prefix`` written as a placeholder) set to the size of
        what follows them; patched in place while still buffered, so a large message is not copied."""
        following = self.size + len(self._buf) - prefix.size
        if self.parts:
            assert isinstance(self.parts[0], bytes)  # the prefix was written before any file slice
            first = bytearray(self.parts[0])
            prefix.pack_into(first, 0, following)
            self.parts[0] = bytes(first)
        else:
            prefix.pack_into(self._buf, 0, following)
        return self.finish()

    def add_slice(self, file_slice: FileSlice) -> None:
        """Add a part that is sent from a file (anything with ``size`` and ``read()``)."""
        self._flush()
        self.parts.append(file_slice)
        self.size += file_slice.size

    def _flush(self) -> None:
        if self._buf:
            self.parts.append(bytes(self._buf))
            self.size += len(self._buf)
            self._buf = bytearray()

    def finish(self) -> list[Part]:
        self._flush()
        return self.parts

    def finish_bytes(self) -> bytes:
        """``finish`` as one bytes object, for a message that holds no file slice."""
        parts = self.finish()
        data = [part for part in parts if isinstance(part, bytes)]
        if len(data) != len(parts):
            raise TypeError("a message holding file slices is not one bytes object")
        return b"".join(data)


class _Fixed:
    def __init__(self, name: str, fmt: struct.Struct, default: int | bool = 0):
        self.name, self.fmt, self.default = name, fmt, default

    def decode(self, reader: Reader, version: int) -> Any:
        return reader._unpack(self.fmt)

    def encode(self, writer: Writer, value: Any, version: int) -> None:
        if value is None:
            raise ValueError(f"null for a non-nullable {self.name}")
        try:
            writer.pack(self.fmt, value)
        except struct.error as exc:
            raise ValueError(f"{value!r} does not fit {self.name}: {exc}") from None


class _Boolean(_Fixed):
    def decode(self, reader: Reader, version: int) -> bool:
        return reader.int8() != 0

    def encode(self, writer: Writer, value: Any, version: int) -> None:
        if value is None:
            raise ValueError("null for a non-nullable BOOLEAN")
        writer.pack(_INT8, 1 if value else 0)


class _String:
    def __init__(self, nullable: bool):
        self.nullable = nullable
        self.default: str | None = None if nullable else ""

    def decode(self, reader: Reader, version: int) -> str | None:
        size = reader.int16()
        if size == -1 and self.nullable:
            return None
        if size < 0:
            raise ProtocolError(f"string length {size} at {reader.pos - 2}")
        return reader.text(size)

    def encode(self, writer: Writer, value: str | None, version: int) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError("null for a non-nullable string")
            writer.pack(_INT16, -1)
            return
        data = value.encode("utf-8")
        if len(data) > 0x7FFF:
            raise ValueError(f"string of {len(data)} bytes is longer than a protocol string (32767)")
        writer.pack(_INT16, len(data))
        writer.write(data)


class _Bytes:
    """BYTES / NULLABLE_BYTES; RECORDS also accepts file slices when encoding."""

    def __init__(self, nullable: bool):
        self.nullable = nullable
        self.default: bytes | None = None if nullable else b""

    def decode(self, reader: Reader, version: int) -> memoryview | None:
        size = reader.int32()
        if size == -1 and self.nullable:
            return None
        if size < 0:
            raise ProtocolError(f"bytes length {size} at {reader.pos - 4}")
        return reader.take(size)

    def encode(self, writer: Writer, value: Bytes | FileSlice | None, version: int) -> None:
        if value is None:
            if not self.nullable:
                raise ValueError("null for non-nullable bytes")
            writer.pack(_INT32, -1)
        elif hasattr(value, "read") and hasattr(value, "size"):
            file_slice = cast(FileSlice, value)
            writer.pack(_INT32, file_slice.size)
            writer.add_slice(file_slice)
        else:
            writer.pack(_INT32, len(value))
            writer.write(value)


INT8 = _Fixed("INT8", _INT8)
INT16 = _Fixed("INT16", _INT16)
INT32 = _Fixed("INT32", _INT32)
INT64 = _Fixed("INT64", _INT64)
BOOLEAN = _Boolean("BOOLEAN", _INT8, False)
STRING = _String(nullable=False)
NULLABLE_STRING = _String(nullable=True)
BYTES = _Bytes(nullable=False)
NULLABLE_BYTES = _Bytes(nullable=True)
RECORDS = NULLABLE_BYTES


ItemType = TypeVar("ItemType", bound=FieldType)


class Array(Generic[ItemType]):
    """ARRAY of a type or struct; null (-1) allowed from version ``nullable_since`` on."""

    def __init__(self, item: ItemType, nullable_since: int | None = None):
        self.item = item
        self.nullable_since = nullable_since

    @property
    def default(self) -> list[Any]:
        return []

    def _nullable(self, version: int) -> bool:
        return self.nullable_since is not None and version >= self.nullable_since

    def decode(self, reader: Reader, version: int) -> list[Any] | None:
        count = reader.int32()
        if count == -1 and self._nullable(version):
            return None
        if count < 0 or count > reader.remaining:  # every element takes at least one byte
            raise ProtocolError(f"array of {count} elements at {reader.pos - 4} ({reader.remaining} bytes left)")
        return [self.item.decode(reader, version) for _ in range(count)]

    def encode(self, writer: Writer, value: list[Any] | None, version: int) -> None:
        if value is None:
            if not self._nullable(version):
                raise ValueError("null for a non-nullable array")
            writer.pack(_INT32, -1)
            return
        writer.pack(_INT32, len(value))
        for element in value:
            self.item.encode(writer, element, version)


class Field(NamedTuple):
    name: str
    type: FieldType
    since: int = 0
    until: int = MAX_VERSION
    default: Any = None

    def present_in(self, version: int) -> bool:
        return self.since <= version <= self.until


class Struct:
    """An ordered list of fields. Decodes to a dict; encodes from a dict (missing keys: defaults)."""

    def __init__(self, *fields: Field | tuple[Any, ...]):
        self.fields = tuple(f if isinstance(f, Field) else Field(*f) for f in fields)
        self.default = None

    def _default(self, field: Field) -> Any:
        if field.default is not None:
            return field.default
        return [] if isinstance(field.type, Array) else field.type.default

    def decode(self, reader: Reader, version: int) -> Message:
        out = {}
        for field in self.fields:
            if field.present_in(version):
                out[field.name] = field.type.decode(reader, version)
            else:
                out[field.name] = self._default(field)
        return out

    def encode(self, writer: Writer, value: Message, version: int) -> None:
        for field in self.fields:
            if field.present_in(version):
                field.type.encode(writer, value.get(field.name, self._default(field)), version)
