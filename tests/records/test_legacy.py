"""Legacy message sets (magic 0 and 1): decoding against kafka-python's own reader, uncompressed and
gzip/snappy/lz4 wrappers, relative inner offsets, LogAppendTime wrappers, CRC-32 checks, malformed
entries, the magic-0 LZ4 refusal, and up-conversion of legacy sets to one v2 batch."""

import struct
import zlib

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from broker.records import batch, legacy, record_set
from broker.records.batch import Record, TimestampType
from broker.records.compression import Codec, compress
from broker.records.errors import CorruptRecordError, UnsupportedCodecError

MESSAGES = [
    (0, 1_600_000_000_000, b"key-0", b"value-0" * 30),
    (1, 1_600_000_000_500, None, b"value-1" * 30),
    (2, 1_599_999_999_000, b"key-2", None),
    (3, 1_600_000_000_001, b"", b""),
    (4, 1_600_000_000_002, b"key-4", b"\x00\xff" * 200),
]

# (magic, codec) pairs kafka-python can build: lz4 in magic 0 needs a non-standard frame.
BUILDABLE = [
    (0, Codec.NONE),
    (0, Codec.GZIP),
    (0, Codec.SNAPPY),
    (1, Codec.NONE),
    (1, Codec.GZIP),
    (1, Codec.SNAPPY),
    (1, Codec.LZ4),
]
BUILDABLE_IDS = [f"magic{m}-{c.name.lower()}" for m, c in BUILDABLE]
COMPRESSED_V1 = [Codec.GZIP, Codec.SNAPPY, Codec.LZ4]


def kp_build(magic, codec, messages=MESSAGES) -> bytes:
    """A legacy message set built by kafka-python."""
    builder = LegacyRecordBatchBuilder(magic, int(codec), batch_size=1 << 22)
    for offset, timestamp, key, value in messages:
        assert builder.append(offset, timestamp=timestamp, key=key, value=value) is not None
    return bytes(builder.build())


def kp_set(magic, codec, messages=MESSAGES) -> bytes:
    """kafka-python's set as a broker stores it: a compressed wrapper carries the last inner offset."""
    built = kp_build(magic, codec, messages)
    if codec == Codec.NONE:
        return built
    return rewrite_wrapper(built, offset=messages[-1][0])


def kp_read(buf) -> list:
    """``(offset, timestamp, key, value)`` of every message, as kafka-python's reader sees them."""
    out = []
    records = MemoryRecords(bytes(buf))
    while records.has_next():
        for r in records.next_batch():
            assert r.validate_crc()
            out.append((r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value))
    return out


def ours(buf) -> list:
    return [(r.offset, r.timestamp, r.key, r.value) for d in record_set.iter_batches(buf) for r in d.records]


def expected_for(magic, messages=MESSAGES) -> list:
    return [(o, ts if magic == 1 else -1, k, v) for o, ts, k, v in messages]


def _bytes_field(data) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def make_message(magic, offset, key, value, *, attributes=0, timestamp=0, crc=None, size_delta=0) -> bytes:
    """One legacy entry by hand (for what kafka-python cannot or will not build)."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += _bytes_field(key) + _bytes_field(value)
    if crc is None:
        crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4 + size_delta, crc) + body


def rewrite_wrapper(entry, *, offset=None, attributes=None, timestamp=None) -> bytes:
    """Patch fields of a legacy entry and recompute its CRC-32."""
    buf = bytearray(entry)
    if offset is not None:
        struct.pack_into(">q", buf, 0, offset)
    if attributes is not None:
        buf[17] = attributes
    if timestamp is not None:
        struct.pack_into(">q", buf, 18, timestamp)
    struct.pack_into(">I", buf, 12, zlib.crc32(buf[16:]))
    return bytes(buf)


# --- helpers agree with kafka-python -------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
def test_hand_made_message_matches_kafka_python(magic):
    ts = 1_600_000_000_000 if magic == 1 else -1
    kp = kp_build(magic, Codec.NONE, [(7, ts, b"k", b"v")])
    assert make_message(magic, 7, b"k", b"v", timestamp=ts) == kp


# --- decoding, compared with kafka-python's reader -----------------------------------------


@pytest.mark.parametrize("magic, codec", BUILDABLE, ids=BUILDABLE_IDS)
def test_decoding_matches_kafka_python_reader(magic, codec):
    buf = kp_set(magic, codec)
    assert buf[17] & 0x07 == codec  # kafka-python really used the codec
    assert ours(buf) == kp_read(buf) == expected_for(magic)


@pytest.mark.parametrize("magic, codec", BUILDABLE, ids=BUILDABLE_IDS)
def test_decoded_batch_metadata(magic, codec):
    decoded = list(record_set.iter_batches(kp_set(magic, codec)))
    assert len(decoded) == (len(MESSAGES) if codec == Codec.NONE else 1)
    for d in decoded:
        assert d.magic == magic
        assert d.timestamp_type == (TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else TimestampType.CREATE_TIME)
        assert d.is_control is False
        assert d.is_transactional is False
        assert d.producer_id == -1
        assert all(r.headers == () for r in d.records)
        assert all(
            isinstance(r.key, (bytes, type(None))) and isinstance(r.value, (bytes, type(None))) for r in d.records
        )


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_set_yields_one_entry_per_message(magic):
    buf = kp_build(magic, Codec.NONE)
    entries = list(record_set.iter_entries(buf))
    assert [h.offset for _, h in entries] == [0, 1, 2, 3, 4]
    assert all(h.magic == magic for _, h in entries)
    assert sum(h.size for _, h in entries) == len(buf)


@pytest.mark.parametrize("magic, codec", BUILDABLE, ids=BUILDABLE_IDS)
def test_legacy_decode_of_each_entry_matches(magic, codec):
    buf = kp_set(magic, codec)
    records = []
    for pos, header in record_set.iter_entries(buf):
        entry = buf[pos : pos + header.size]
        assert legacy.validate(entry) == header
        records.extend(legacy.decode(entry).records)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == expected_for(magic)


# --- offsets and timestamps of compressed wrappers -----------------------------------------


@pytest.mark.parametrize("codec", COMPRESSED_V1, ids=lambda c: c.name.lower())
def test_v1_wrapper_with_relative_inner_offsets_yields_absolute_offsets(codec):
    wrapper = kp_build(1, codec)
    inner_offsets = [o for o, _, _, _ in MESSAGES]
    assert inner_offsets == [0, 1, 2, 3, 4]
    placed = rewrite_wrapper(wrapper, offset=1004)  # the broker writes the last absolute offset
    decoded = legacy.decode(placed)
    assert [r.offset for r in decoded.records] == [1000, 1001, 1002, 1003, 1004]
    assert (decoded.base_offset, decoded.last_offset) == (1000, 1004)
    assert ours(placed) == kp_read(placed)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY], ids=lambda c: c.name.lower())
def test_v0_wrapper_inner_offsets_are_absolute(codec):
    messages = [(50 + i, -1, k, v) for i, (_, _, k, v) in enumerate(MESSAGES)]
    placed = rewrite_wrapper(kp_build(0, codec, messages), offset=54)
    decoded = legacy.decode(placed)
    assert [r.offset for r in decoded.records] == [50, 51, 52, 53, 54]
    assert (decoded.base_offset, decoded.last_offset) == (50, 54)
    assert ours(placed) == kp_read(placed)


@pytest.mark.parametrize("codec", COMPRESSED_V1, ids=lambda c: c.name.lower())
def test_log_append_time_wrapper_gives_every_inner_record_its_timestamp(codec):
    append_time = 1_700_000_123_456
    placed = rewrite_wrapper(kp_build(1, codec), offset=4, attributes=int(codec) | 0x08, timestamp=append_time)
    decoded = legacy.decode(placed)
    assert decoded.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in decoded.records] == [append_time] * len(MESSAGES)
    assert [(r.offset, r.key, r.value) for r in decoded.records] == [(o, k, v) for o, _, k, v in MESSAGES]
    assert ours(placed) == kp_read(placed)


@pytest.mark.parametrize("codec", COMPRESSED_V1, ids=lambda c: c.name.lower())
def test_create_time_wrapper_keeps_inner_timestamps(codec):
    placed = rewrite_wrapper(kp_build(1, codec), offset=4, timestamp=42)
    assert [r.timestamp for r in legacy.decode(placed).records] == [ts for _, ts, _, _ in MESSAGES]


def test_uncompressed_v1_log_append_time_message():
    entry = make_message(1, 3, b"k", b"v", attributes=0x08, timestamp=123)
    decoded = legacy.decode(entry)
    assert decoded.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert decoded.records == [Record(3, 123, b"k", b"v", ())]


def test_parse_header_fields():
    entry = make_message(1, 9, b"key", b"value", attributes=0x08 | 0x01, timestamp=77)
    header = legacy.parse_header(entry)
    assert header.offset == 9
    assert header.size == len(entry)
    assert header.magic == 1
    assert header.compression == Codec.GZIP
    assert header.timestamp == header.max_timestamp == 77
    assert header.last_offset == 9
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert legacy.parse_header(make_message(0, 1, None, b"")).timestamp == -1


# --- CRC-32 --------------------------------------------------------------------------------


@pytest.mark.parametrize("magic, codec", BUILDABLE, ids=BUILDABLE_IDS)
def test_crc32_corruption_is_detected(magic, codec):
    buf = kp_build(magic, codec, MESSAGES[:2])
    pos, header = next(record_set.iter_entries(buf))
    entry = buf[: header.size]
    for index in range(12, len(entry)):  # the stored CRC, then everything it covers
        corrupted = bytearray(entry)
        corrupted[index] ^= 0x01
        with pytest.raises(CorruptRecordError):
            legacy.decode(bytes(corrupted))
        with pytest.raises(CorruptRecordError):
            legacy.validate(bytes(corrupted))
        with pytest.raises(CorruptRecordError):
            list(record_set.iter_batches(bytes(corrupted) + buf[header.size :]))


def test_offset_and_size_are_outside_the_crc():
    entry = make_message(1, 5, b"k", b"v", timestamp=1)
    moved = bytearray(entry)
    struct.pack_into(">q", moved, 0, 123456)
    assert legacy.decode(bytes(moved)).records == [Record(123456, 1, b"k", b"v", ())]


@pytest.mark.parametrize("index", range(8, 12))
def test_changed_size_field_is_detected(index):
    corrupted = bytearray(make_message(1, 5, b"k", b"v" * 300, timestamp=1))
    corrupted[index] ^= 0x01
    with pytest.raises(CorruptRecordError):
        legacy.decode(bytes(corrupted))


def test_bad_crc_of_an_inner_message_is_detected():
    inner = make_message(1, 0, b"a", b"1", timestamp=5) + make_message(1, 1, b"b", b"2", timestamp=6, crc=0)
    wrapper = make_message(1, 1, None, compress(Codec.GZIP, inner), attributes=int(Codec.GZIP), timestamp=6)
    legacy.validate(wrapper)  # the wrapper itself is fine
    with pytest.raises(CorruptRecordError, match="CRC"):
        legacy.decode(wrapper)
    assert [r.value for r in legacy.decode(wrapper, verify_crc=False).records] == [b"1", b"2"]


# --- malformed entries ---------------------------------------------------------------------


def _wrap(inner: bytes, codec=Codec.GZIP, magic=1) -> bytes:
    return make_message(magic, 0, None, compress(codec, inner), attributes=int(codec), timestamp=1)


MALFORMED_ENTRIES = {
    "magic0-size-below-minimum": make_message(0, 0, None, None, size_delta=-1),
    "magic1-size-below-minimum": make_message(1, 0, None, None, size_delta=-1),
    "negative-size": struct.pack(">qiIbb", 0, -20, 0, 1, 0) + b"\x00" * 16,
    "bad-magic-3": struct.pack(">qiIbb", 0, 22, 0, 3, 0) + b"\x00" * 16,
    "bad-magic-minus-1": struct.pack(">qiIbb", 0, 22, 0, -1, 0) + b"\x00" * 16,
    "shorter-than-prefix": b"\x00" * 10,
    "magic1-missing-timestamp": make_message(1, 0, None, None)[:20],
    "bytes-after-value": rewrite_wrapper(make_message(1, 0, b"k", b"v", size_delta=2) + b"\x00\x00"),
    "key-length-overruns": rewrite_wrapper(
        make_message(1, 0, b"k", b"v")[:30] + struct.pack(">i", 99) + make_message(1, 0, b"k", b"v")[34:]
    ),
    "value-length-overruns": rewrite_wrapper(make_message(0, 0, None, b"value")[:22] + struct.pack(">i", 6) + b"value"),
    "compressed-wrapper-with-null-value": make_message(1, 0, None, None, attributes=1),
    "nested-compression": _wrap(_wrap(make_message(1, 0, b"k", b"v"))),
    "truncated-inner-message": _wrap(make_message(1, 0, b"k", b"value")[:-2]),
    "inner-garbage": _wrap(b"\x00" * 40),
    "wrapper-value-not-compressed": make_message(1, 0, None, b"not gzip at all", attributes=1),
}


@pytest.mark.parametrize("name", list(MALFORMED_ENTRIES))
def test_malformed_legacy_entries_raise_corrupt_record_error(name):
    entry = MALFORMED_ENTRIES[name]
    with pytest.raises(CorruptRecordError):
        legacy.decode(entry)
    with pytest.raises(CorruptRecordError):
        record_set.decode_entry(entry)


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_id_in_legacy_attributes_raises_unsupported_codec_error(codec_id):
    entry = make_message(1, 0, None, b"payload", attributes=codec_id, timestamp=1)
    legacy.validate(entry)
    with pytest.raises(UnsupportedCodecError):
        legacy.decode(entry)
    with pytest.raises(UnsupportedCodecError):
        list(record_set.iter_batches(entry))


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_upconvert_with_unknown_legacy_codec_raises_unsupported_codec_error(codec_id):
    entry = make_message(1, 0, None, b"payload", attributes=codec_id, timestamp=1)
    with pytest.raises(UnsupportedCodecError):
        record_set.upconvert(entry)


@pytest.mark.parametrize("cut", [1, 20, 50, 52, 55])
def test_truncated_entry_is_corrupt_even_without_crc_check(cut):
    entry = make_message(1, 0, b"key", b"value" * 10, timestamp=1)
    truncated = entry[:-cut]
    with pytest.raises(CorruptRecordError):
        legacy.decode(truncated)
    with pytest.raises(CorruptRecordError):
        legacy.decode(truncated, verify_crc=False)


def test_empty_compressed_inner_set_decodes_to_no_records():
    wrapper = _wrap(b"")
    decoded = legacy.decode(wrapper)
    assert decoded.records == []


# --- magic 0 + LZ4 -------------------------------------------------------------------------


def _magic0_lz4_wrapper() -> bytes:
    inner = kp_build(0, Codec.NONE, [(0, -1, b"k", b"v"), (1, -1, None, b"w")])
    return make_message(0, 1, None, compress(Codec.LZ4, inner), attributes=int(Codec.LZ4))


def test_magic0_lz4_wrapper_raises_unsupported_codec_error():
    wrapper = _magic0_lz4_wrapper()
    legacy.validate(wrapper)
    with pytest.raises(UnsupportedCodecError):
        legacy.decode(wrapper)
    with pytest.raises(UnsupportedCodecError):
        list(record_set.iter_batches(wrapper))
    with pytest.raises(UnsupportedCodecError):
        record_set.upconvert(wrapper)


def test_same_inner_set_in_a_magic1_lz4_wrapper_decodes():
    inner = kp_build(1, Codec.NONE, [(0, 10, b"k", b"v"), (1, 11, None, b"w")])
    wrapper = make_message(1, 1, None, compress(Codec.LZ4, inner), attributes=int(Codec.LZ4), timestamp=11)
    assert legacy.decode(wrapper).records == [Record(0, 10, b"k", b"v", ()), Record(1, 11, None, b"w", ())]


# --- up-conversion -------------------------------------------------------------------------


@pytest.mark.parametrize("magic, codec", BUILDABLE, ids=BUILDABLE_IDS)
def test_upconvert_makes_one_v2_batch_with_offsets_from_zero(magic, codec):
    legacy_set = kp_build(magic, codec, [(100 + i, ts, k, v) for i, (_, ts, k, v) in enumerate(MESSAGES)])
    converted = record_set.upconvert(legacy_set)
    header = batch.validate(converted)  # exactly one complete v2 batch, valid CRC
    assert header.magic == 2
    assert header.base_offset == 0
    assert header.records_count == len(MESSAGES)
    assert header.last_offset_delta == len(MESSAGES) - 1
    assert header.compression == codec
    assert header.timestamp_type == TimestampType.CREATE_TIME
    assert header.producer_id == -1
    decoded = batch.decode(converted)
    assert decoded.records == [
        Record(i, ts if magic == 1 else -1, k, v, ()) for i, (_, ts, k, v) in enumerate(MESSAGES)
    ]


@pytest.mark.parametrize("codec", COMPRESSED_V1, ids=lambda c: c.name.lower())
def test_upconvert_of_a_log_append_time_wrapper_keeps_the_wrapper_timestamp(codec):
    placed = rewrite_wrapper(kp_build(1, codec), offset=4, attributes=int(codec) | 0x08, timestamp=999)
    decoded = batch.decode(record_set.upconvert(placed))
    assert [r.timestamp for r in decoded.records] == [999] * len(MESSAGES)


def test_upconvert_joins_several_legacy_entries_and_takes_the_first_compressed_codec():
    plain = make_message(1, 0, b"a", b"1", timestamp=10)
    snappy_wrapper = rewrite_wrapper(kp_build(1, Codec.SNAPPY, [(0, 11, b"b", b"2"), (1, 12, b"c", b"3")]), offset=2)
    gzip_wrapper = rewrite_wrapper(kp_build(1, Codec.GZIP, [(0, 13, b"d", b"4")]), offset=3)
    converted = record_set.upconvert(plain + snappy_wrapper + gzip_wrapper)
    assert batch.validate(converted).compression == Codec.SNAPPY
    assert batch.decode(converted).records == [
        Record(0, 10, b"a", b"1", ()),
        Record(1, 11, b"b", b"2", ()),
        Record(2, 12, b"c", b"3", ()),
        Record(3, 13, b"d", b"4", ()),
    ]


@pytest.mark.parametrize("codec", list(Codec), ids=lambda c: c.name.lower())
def test_upconvert_passes_v2_bytes_through_unchanged(codec):
    one = batch.build([Record(0, 1, b"a", b"1" * 50)], compression=codec)
    two = batch.build([Record(1, 2, None, b"2" * 50)], base_offset=1, compression=codec)
    assert record_set.upconvert(one) == one
    assert record_set.upconvert(one + two) == one + two
    assert record_set.upconvert(bytearray(one)) == one


def test_upconvert_rejects_v2_mixed_with_legacy():
    v2 = batch.build([Record(0, 1, b"a", b"1")])
    old = kp_build(1, Codec.NONE, MESSAGES[:1])
    for mixed in (v2 + old, old + v2):
        with pytest.raises(CorruptRecordError, match="mixes"):
            record_set.upconvert(mixed)


def test_upconvert_rejects_empty_and_partial_input():
    old = kp_build(1, Codec.NONE, MESSAGES[:2])
    for bad in (b"", old[:-1], old[:10]):
        with pytest.raises(CorruptRecordError):
            record_set.upconvert(bad)


def test_upconvert_rejects_a_corrupt_legacy_crc():
    corrupted = bytearray(kp_build(1, Codec.GZIP))
    corrupted[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        record_set.upconvert(bytes(corrupted))


def test_upconvert_of_only_empty_wrappers_is_rejected():
    with pytest.raises(CorruptRecordError):
        record_set.upconvert(_wrap(b""))
