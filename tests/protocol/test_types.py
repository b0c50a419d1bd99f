"""The primitives of ``broker.protocol.types``: round trips against hand-packed bytes, nullable
versus non-nullable handling, the Reader's errors (always ProtocolError, never IndexError,
struct.error or UnicodeDecodeError), Writer parts, Struct/Field/Array semantics, and the two
flexible-header primitives (unsigned varints and tagged-field sections)."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.schemas.fields.codecs import UnsignedVarInt32

from broker.protocol.types import (
    BOOLEAN,
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    NULLABLE_BYTES,
    NULLABLE_STRING,
    RECORDS,
    STRING,
    Array,
    Field,
    ProtocolError,
    Reader,
    Struct,
    Writer,
)

from .layout import array, i16, i32, nbytes, string

INTS = [(INT8, ">b", 8), (INT16, ">h", 16), (INT32, ">i", 32), (INT64, ">q", 64)]
INT_IDS = ["INT8", "INT16", "INT32", "INT64"]


def encode(type_, value, version=0) -> bytes:
    writer = Writer()
    type_.encode(writer, value, version)
    return b"".join(writer.finish())


def decode(type_, data, version=0):
    """Decode one value and check that exactly ``data`` was used."""
    reader = Reader(data)
    value = type_.decode(reader, version)
    assert reader.remaining == 0
    return value


# --- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("type_, fmt, bits", INTS, ids=INT_IDS)
def test_integer_bounds_round_trip(type_, fmt, bits):
    for value in (-(2 ** (bits - 1)), -1, 0, 1, 2 ** (bits - 1) - 1):
        data = encode(type_, value)
        assert data == struct.pack(fmt, value)
        assert decode(type_, data) == value


@pytest.mark.parametrize("type_, fmt, bits", INTS, ids=INT_IDS)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_integers_round_trip(type_, fmt, bits, data):
    value = data.draw(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
    assert encode(type_, value) == struct.pack(fmt, value)
    assert decode(type_, struct.pack(fmt, value)) == value


@pytest.mark.parametrize("type_, fmt, bits", INTS, ids=INT_IDS)
def test_integers_out_of_range_are_not_wrapped(type_, fmt, bits):
    for value in (2 ** (bits - 1), -(2 ** (bits - 1)) - 1):
        with pytest.raises((ValueError, struct.error)):
            encode(type_, value)


def test_boolean():
    assert encode(BOOLEAN, True) == b"\x01" and encode(BOOLEAN, False) == b"\x00"
    assert decode(BOOLEAN, b"\x00") is False
    assert decode(BOOLEAN, b"\x01") is True
    assert decode(BOOLEAN, b"\xff") is True  # like Java's readBoolean: any non-zero byte
    assert BOOLEAN.default is False


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_strings_round_trip(text):
    assert encode(STRING, text) == string(text)
    assert encode(NULLABLE_STRING, text) == string(text)
    assert decode(STRING, string(text)) == text
    assert decode(NULLABLE_STRING, string(text)) == text


def test_string_length_counts_utf8_bytes():
    assert encode(STRING, "\u00e9\U0001f389") == i16(6) + "\u00e9\U0001f389".encode()
    assert encode(STRING, "") == i16(0)


def test_longest_string():
    text = "x" * 32767
    assert decode(STRING, encode(STRING, text)) == text


def test_string_too_long_for_int16_length_is_not_truncated():
    with pytest.raises((ValueError, struct.error)):
        encode(STRING, "x" * 32768)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_bytes_round_trip(data):
    for type_ in (BYTES, NULLABLE_BYTES, RECORDS):
        assert encode(type_, data) == nbytes(data)
        decoded = decode(type_, nbytes(data))
        assert bytes(decoded) == data


def test_bytes_accept_any_buffer_when_encoding():
    assert encode(BYTES, bytearray(b"ab")) == nbytes(b"ab")
    assert encode(BYTES, memoryview(b"abc")[1:]) == nbytes(b"bc")


def test_decoded_bytes_are_views_of_the_input():
    buf = bytearray(nbytes(b"hello"))
    view = decode(BYTES, buf)
    buf[4] = ord("j")
    assert bytes(view) == b"jello"


@pytest.mark.parametrize(
    "type_", [NULLABLE_STRING, NULLABLE_BYTES, RECORDS], ids=["NULLABLE_STRING", "NULLABLE_BYTES", "RECORDS"]
)
def test_nullable_types_round_trip_null(type_):
    data = encode(type_, None)
    assert data == (i16(-1) if type_ is NULLABLE_STRING else i32(-1))
    assert decode(type_, data) is None
    assert type_.default is None


def test_non_nullable_defaults():
    assert STRING.default == "" and BYTES.default == b""
    assert (INT8.default, INT16.default, INT32.default, INT64.default) == (0, 0, 0, 0)


# --- nulls where they are not allowed -----------------------------------------------------------


@pytest.mark.parametrize(
    "type_",
    [STRING, BYTES, Array(INT32), Array(STRING, nullable_since=5)],
    ids=["STRING", "BYTES", "ARRAY", "ARRAY-nullable-from-v5"],
)
def test_encoding_null_into_non_nullable_raises_value_error(type_):
    with pytest.raises(ValueError):
        encode(type_, None, version=4)


@pytest.mark.parametrize(
    "type_", [INT8, INT16, INT32, INT64, BOOLEAN], ids=["INT8", "INT16", "INT32", "INT64", "BOOLEAN"]
)
def test_encoding_null_into_fixed_width_type_raises_value_error(type_):
    """No fixed-width type is nullable: None must not be written (BOOLEAN must not turn it into false)."""
    with pytest.raises(ValueError):
        encode(type_, None)


@pytest.mark.parametrize(
    "type_, data",
    [
        (STRING, i16(-1)),
        (BYTES, i32(-1)),
    ],
    ids=["STRING", "BYTES"],
)
def test_decoding_null_from_non_nullable_raises_protocol_error(type_, data):
    with pytest.raises(ProtocolError):
        type_.decode(Reader(data), 0)


def test_array_nullable_from_a_version():
    items = Array(INT32, nullable_since=1)
    with pytest.raises(ProtocolError):
        items.decode(Reader(i32(-1)), 0)
    with pytest.raises(ValueError):
        encode(items, None, version=0)
    for version in (1, 2, 100):
        assert encode(items, None, version) == i32(-1)
        assert decode(items, i32(-1), version) is None
    with pytest.raises(ProtocolError):
        Array(INT32).decode(Reader(i32(-1)), 100)


# --- Reader errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "type_, size",
    [(INT8, 1), (INT16, 2), (INT32, 4), (INT64, 8), (BOOLEAN, 1)],
    ids=["INT8", "INT16", "INT32", "INT64", "BOOLEAN"],
)
def test_truncated_fixed_width_values(type_, size):
    for available in range(size):
        with pytest.raises(ProtocolError):
            type_.decode(Reader(b"\x01" * available), 0)


@pytest.mark.parametrize(
    "type_, data",
    [
        (STRING, b""),
        (STRING, b"\x00"),
        (STRING, i16(3) + b"ab"),
        (NULLABLE_STRING, i16(1)),
        (BYTES, i16(0)),
        (BYTES, i32(4) + b"abc"),
        (NULLABLE_BYTES, i32(2**31 - 1)),
        (RECORDS, i32(1)),
        (Array(INT32), b"\x00\x00"),
        (Array(INT32), i32(2) + i32(1)),
        (Array(INT64), i32(1) + i32(1)),
        (Array(STRING), i32(1) + i16(5) + b"abc"),
    ],
    ids=lambda v: v.hex() if isinstance(v, bytes) else type(v).__name__,
)
def test_truncated_variable_length_values(type_, data):
    with pytest.raises(ProtocolError):
        type_.decode(Reader(data), 0)


@pytest.mark.parametrize(
    "type_, data",
    [
        (STRING, i16(-2) + b"ab"),
        (STRING, i16(-32768)),
        (NULLABLE_STRING, i16(-2) + b"ab"),
        (NULLABLE_STRING, i16(-32768)),
        (BYTES, i32(-2) + b"ab"),
        (NULLABLE_BYTES, i32(-2) + b"ab"),
        (RECORDS, i32(-(2**31))),
        (Array(INT8), i32(-2) + b"ab"),
        (Array(INT8, nullable_since=0), i32(-2) + b"ab"),
        (Array(INT8, nullable_since=0), i32(-(2**31))),
    ],
    ids=lambda v: v.hex() if isinstance(v, bytes) else type(v).__name__,
)
def test_negative_lengths_other_than_minus_one(type_, data):
    with pytest.raises(ProtocolError):
        type_.decode(Reader(data), 0)


@pytest.mark.parametrize(
    "raw", [b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\x80", b"ok\x80"], ids=lambda b: b.hex()
)
@pytest.mark.parametrize("type_", [STRING, NULLABLE_STRING], ids=["STRING", "NULLABLE_STRING"])
def test_invalid_utf8(type_, raw):
    with pytest.raises(ProtocolError):
        type_.decode(Reader(i16(len(raw)) + raw), 0)


@pytest.mark.parametrize("count", [1, 3, 4, 1000, 2**31 - 1])
def test_array_count_larger_than_remaining_bytes(count):
    """Every element takes at least one byte: an impossible count is refused before any allocation."""
    with pytest.raises(ProtocolError):
        Array(INT8).decode(Reader(i32(count) + b"\x00\x00"[: max(0, min(2, count - 1))]), 0)
    with pytest.raises(ProtocolError):
        Array(Struct(("name", STRING))).decode(Reader(i32(count)), 0)


def test_array_count_equal_to_remaining_bytes():
    assert decode(Array(INT8), i32(3) + b"\x01\x02\x03") == [1, 2, 3]


def test_reader_errors_do_not_move_the_cursor_past_the_end():
    reader = Reader(b"\x00\x01\x02")
    with pytest.raises(ProtocolError):
        reader.int32()
    assert reader.remaining == 3
    with pytest.raises(ProtocolError):
        reader.take(4)
    with pytest.raises(ProtocolError):
        reader.take(-1)
    assert reader.int16() == 1 and reader.remaining == 1


def test_reader_starts_at_a_position():
    reader = Reader(b"\xff\xff" + i32(7), pos=2)
    assert reader.remaining == 4 and reader.int32() == 7 and reader.remaining == 0


# --- Writer -------------------------------------------------------------------------------------


class FileSlice:
    def __init__(self, data: bytes):
        self.data, self.size = data, len(data)

    def read(self) -> bytes:
        return self.data


def test_writer_merges_bytes_into_one_part():
    writer = Writer()
    writer.write(b"ab")
    writer.pack(struct.Struct(">h"), 3)
    writer.write(memoryview(b"cd"))
    assert writer.finish() == [b"ab\x00\x03cd"]
    assert writer.size == 6


def test_writer_keeps_slices_apart_and_counts_their_size():
    writer = Writer()
    first, second = FileSlice(b"12345"), FileSlice(b"")
    writer.write(b"head")
    writer.add_slice(first)
    writer.add_slice(second)
    writer.write(b"tail")
    parts = writer.finish()
    assert parts == [b"head", first, second, b"tail"]
    assert parts[1] is first and parts[2] is second
    assert writer.size == 4 + 5 + 0 + 4


def test_empty_writer():
    writer = Writer()
    assert writer.finish() == [] and writer.size == 0


def test_records_accept_a_file_slice():
    file_slice = FileSlice(b"batch")
    writer = Writer()
    RECORDS.encode(writer, file_slice, 0)
    assert writer.finish() == [i32(5), file_slice]
    assert writer.size == 9


def test_bytes_like_values_are_not_taken_for_slices():
    writer = Writer()
    RECORDS.encode(writer, b"abc", 0)
    RECORDS.encode(writer, bytearray(b"d"), 0)
    assert writer.finish() == [nbytes(b"abc") + nbytes(b"d")]


# --- Struct, Field, Array -----------------------------------------------------------------------

EXAMPLE = Struct(
    ("a", INT16),
    Field("b", STRING, since=2),
    Field("c", INT32, until=1, default=-1),
    Field("d", Array(Struct(("e", INT8), Field("f", NULLABLE_STRING, since=3)))),
    Field("g", BOOLEAN, since=5, default=True),
)


def test_field_presence_range():
    field = Field("x", INT8, since=2, until=4)
    assert [v for v in range(7) if field.present_in(v)] == [2, 3, 4]
    assert Field("y", INT8).present_in(0) and Field("y", INT8).present_in(2**15 - 1)


def test_struct_accepts_tuples_for_fields():
    assert EXAMPLE.fields[0] == Field("a", INT16)


@pytest.mark.parametrize(
    "version, data, value",
    [
        (0, i16(1) + i32(9) + array([b"\x05"]), {"a": 1, "b": "", "c": 9, "d": [{"e": 5, "f": None}], "g": True}),
        (
            2,
            i16(1) + string("s") + array([b"\x05"]),
            {"a": 1, "b": "s", "c": -1, "d": [{"e": 5, "f": None}], "g": True},
        ),
        (
            3,
            i16(1) + string("s") + array([b"\x05" + string("z")]),
            {"a": 1, "b": "s", "c": -1, "d": [{"e": 5, "f": "z"}], "g": True},
        ),
        (5, i16(1) + string("s") + array([]) + b"\x00", {"a": 1, "b": "s", "c": -1, "d": [], "g": False}),
    ],
)
def test_struct_versions(version, data, value):
    assert decode(EXAMPLE, data, version) == value
    assert encode(EXAMPLE, value, version) == data


def test_struct_encode_uses_defaults_for_missing_keys_and_ignores_unknown_ones():
    assert encode(EXAMPLE, {"unknown": 1}, 0) == i16(0) + i32(-1) + array([])
    assert encode(EXAMPLE, {}, 5) == i16(0) + string("") + array([]) + b"\x01"


def test_decoded_struct_has_every_field():
    assert set(decode(EXAMPLE, i16(1) + i32(9) + array([]), 0)) == {"a", "b", "c", "d", "g"}


def test_array_of_arrays():
    nested = Array(Array(INT16))
    data = array([array([i16(1), i16(2)]), array([])])
    assert decode(nested, data) == [[1, 2], []]
    assert encode(nested, [[1, 2], []]) == data


# --- unsigned varints and tagged fields ---------------------------------------------------------


@pytest.mark.parametrize(
    "value, hexed",
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16383, "ff7f"),
        (16384, "808001"),
        (2**21 - 1, "ffff7f"),
        (2**28 - 1, "ffffff7f"),
        (2**28, "8080808001"),
        (2**31 - 1, "ffffffff07"),
        (2**32 - 1, "ffffffff0f"),
    ],
)
def test_uvarint_known_encodings(value, hexed):
    reader = Reader(bytes.fromhex(hexed) + b"\xaa")
    assert reader.uvarint() == value
    assert reader.remaining == 1


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_uvarint_matches_kafka_python(value):
    reader = Reader(UnsignedVarInt32.encode(value))
    assert reader.uvarint() == value and reader.remaining == 0


def test_uvarint_non_minimal_encoding_is_read():
    assert Reader(b"\x80\x00").uvarint() == 0


@pytest.mark.parametrize("hexed", ["", "80", "ff", "8080", "ffffffff"])
def test_uvarint_truncated(hexed):
    with pytest.raises(ProtocolError):
        Reader(bytes.fromhex(hexed)).uvarint()


@pytest.mark.parametrize("hexed", ["ffffffffff01", "8080808080", "8080808080808001"])
def test_uvarint_longer_than_five_bytes(hexed):
    with pytest.raises(ProtocolError):
        Reader(bytes.fromhex(hexed)).uvarint()


def test_empty_tagged_fields_are_one_byte():
    reader = Reader(b"\x00rest")
    reader.skip_tagged_fields()
    assert bytes(reader.take(reader.remaining)) == b"rest"


def test_tagged_fields_are_skipped_whole():
    tags = b"\x03" + b"\x00\x03abc" + b"\x01\x00" + b"\x8f\x01\x81\x01" + bytes(129)  # tag 143, 129 bytes
    reader = Reader(tags + b"\x07")
    reader.skip_tagged_fields()
    assert reader.remaining == 1 and reader.int8() == 7


@pytest.mark.parametrize("hexed", ["", "01", "0100", "010005616263", "02000100", "ffffffff0f00", "0100ffffffff0f"])
def test_truncated_tagged_fields(hexed):
    with pytest.raises(ProtocolError):
        Reader(bytes.fromhex(hexed)).skip_tagged_fields()
