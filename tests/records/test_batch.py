"""Record batch v2 (magic 2): the reference batch, header fields and attribute bits, CRC-32C
coverage, offset/epoch and LogAppendTime rewrites, control batches, malformed input, offset gaps
and partial trailing batches in a record set."""

import struct

import pytest

from broker.records import batch, record_set
from broker.records.batch import ControlType, Record, TimestampType
from broker.records.compression import Codec, compress
from broker.records.crc import crc32c
from broker.records.errors import CorruptRecordError, UnsupportedCodecError
from broker.records.varint import encode_varint

# A one-record batch laid out by hand: key "k", value "v", timestamp 1700000000000, 70 bytes.
REFERENCE_BATCH = bytes.fromhex(
    "00 00 00 00 00 00 00 00  00 00 00 3a  ff ff ff ff  02  e9 9b 8d d8  00 00  00 00 00 00"
    "00 00 01 8b cf e5 68 00  00 00 01 8b cf e5 68 00  ff ff ff ff ff ff ff ff  ff ff  ff ff ff ff"
    "00 00 00 01  10 00 00 00 02 6b 02 76 00"
)
REFERENCE_RECORD = Record(0, 1700000000000, b"k", b"v", ())

INT32_MAX = 2**31 - 1
ALL_CODECS = list(Codec)


def _sample_records(base_offset=0, base_ts=1_700_000_000_000):
    return [
        Record(base_offset, base_ts, b"key-0", b"value-0" * 20, (("h1", b"x"), ("h2", None))),
        Record(base_offset + 1, base_ts - 5, None, b"value-1" * 20, ()),
        Record(base_offset + 2, base_ts + 1000, b"key-2", None, (("\u00e9t\u00e9", b""),)),
        Record(base_offset + 3, base_ts + 7, b"", b"", ()),
    ]


def _batch_with_body(
    body: bytes, count: int, *, attributes: int = 0, base_offset: int = 0, base_timestamp: int = 0
) -> bytes:
    """A v2 batch with a correct header and CRC around an arbitrary (possibly malformed) body."""
    buf = bytearray(
        batch.HEADER.pack(
            base_offset,
            batch.HEADER_SIZE - batch.LOG_OVERHEAD + len(body),
            -1,
            batch.MAGIC,
            0,
            attributes,
            max(count - 1, 0),
            base_timestamp,
            base_timestamp,
            -1,
            -1,
            -1,
            count,
        )
    )
    buf += body
    struct.pack_into(">I", buf, 17, batch.compute_crc(buf))
    return bytes(buf)


def _record_body(fields: bytes) -> bytes:
    """A record: its fields prefixed by their varint length."""
    return encode_varint(len(fields)) + fields


def _v(n: int) -> bytes:
    return encode_varint(n)


# A well-formed record body: attributes 0, tsDelta 0, offsetDelta 0, key "k", value "v", 0 headers.
GOOD_FIELDS = b"\x00" + _v(0) + _v(0) + _v(1) + b"k" + _v(1) + b"v" + _v(0)


# --- the reference batch -------------------------------------------------------------------


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def test_reference_batch_decodes_to_exactly_one_record():
    decoded = batch.decode(REFERENCE_BATCH)
    assert decoded.records == [REFERENCE_RECORD]
    assert decoded.base_offset == 0
    assert decoded.last_offset == 0
    assert decoded.magic == 2
    assert decoded.timestamp_type == TimestampType.CREATE_TIME
    assert decoded.is_control is False
    assert decoded.is_transactional is False
    assert decoded.producer_id == -1


def test_reference_batch_header_fields():
    header = batch.validate(REFERENCE_BATCH)
    assert header == batch.BatchHeader(
        base_offset=0,
        batch_length=58,
        partition_leader_epoch=-1,
        magic=2,
        crc=0xE99B8DD8,
        attributes=0,
        last_offset_delta=0,
        base_timestamp=1700000000000,
        max_timestamp=1700000000000,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        records_count=1,
    )
    assert header.size == 70
    assert header.compression == Codec.NONE


def test_build_reproduces_reference_batch_bytes():
    built = batch.build([REFERENCE_RECORD], partition_leader_epoch=-1)
    assert len(built) == 70
    assert built == REFERENCE_BATCH


# --- header fields and attribute bits ------------------------------------------------------


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name.lower())
def test_header_fields_round_trip_through_build_and_parse_header(codec):
    records = _sample_records(base_offset=1000)
    built = batch.build(
        records,
        base_offset=1000,
        compression=codec,
        producer_id=123456789012,
        producer_epoch=7,
        base_sequence=42,
        partition_leader_epoch=9,
    )
    header = batch.parse_header(built)
    assert header.base_offset == 1000
    assert header.size == len(built)
    assert header.partition_leader_epoch == 9
    assert header.magic == 2
    assert header.compression == codec
    assert header.attributes == int(codec)
    assert header.last_offset_delta == 3
    assert header.last_offset == 1003
    assert header.base_timestamp == records[0].timestamp
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert header.producer_id == 123456789012
    assert header.producer_epoch == 7
    assert header.base_sequence == 42
    assert header.last_sequence == 45
    assert header.records_count == 4
    assert header.timestamp_type == TimestampType.CREATE_TIME
    assert not header.is_transactional and not header.is_control and not header.has_delete_horizon
    assert batch.validate(built) == header
    assert batch.decode(built).records == records


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name.lower())
@pytest.mark.parametrize("is_transactional", [False, True])
@pytest.mark.parametrize("is_control", [False, True])
def test_attribute_bits_are_set_exactly(codec, is_transactional, is_control):
    built = batch.build(
        _sample_records(),
        compression=codec,
        is_transactional=is_transactional,
        is_control=is_control,
        producer_id=5,
        producer_epoch=0,
        base_sequence=0,
    )
    header = batch.validate(built)
    expected = int(codec) | (0x10 if is_transactional else 0) | (0x20 if is_control else 0)
    assert header.attributes == expected
    assert header.is_transactional is is_transactional
    assert header.is_control is is_control
    assert header.compression == codec
    decoded = batch.decode(built)
    assert decoded.is_transactional is is_transactional
    assert decoded.is_control is is_control
    assert decoded.producer_id == 5


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name.lower())
def test_log_append_time_batch_carries_bit_and_max_timestamp(codec):
    records = _sample_records()
    append_time = 1_800_000_000_123
    built = batch.build(
        records, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=append_time
    )
    header = batch.validate(built)
    assert header.attributes & 0x08
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == append_time
    decoded = batch.decode(built)
    assert decoded.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert decoded.records == [r._replace(timestamp=append_time) for r in records]


def test_create_time_max_timestamp_defaults_to_largest_record_timestamp():
    records = [Record(0, 50, None, b"a"), Record(1, 900, None, b"b"), Record(2, 10, None, b"c")]
    header = batch.parse_header(batch.build(records))
    assert header.base_timestamp == 50
    assert header.max_timestamp == 900


def test_explicit_max_timestamp_is_stored_for_create_time():
    header = batch.parse_header(batch.build([Record(0, 5, None, b"a")], max_timestamp=77))
    assert header.max_timestamp == 77
    assert header.timestamp_type == TimestampType.CREATE_TIME


@pytest.mark.parametrize(
    "base_sequence, count, expected_last",
    [
        (0, 1, 0),
        (10, 5, 14),
        (INT32_MAX, 1, INT32_MAX),
        (INT32_MAX, 2, 0),
        (INT32_MAX - 1, 4, 1),
        (INT32_MAX - 2, 3, INT32_MAX),
        (-1, 3, -1),
    ],
)
def test_last_sequence_wraps_around_at_int32_max(base_sequence, count, expected_last):
    records = [Record(i, 1, None, b"x") for i in range(count)]
    built = batch.build(
        records, producer_id=1 if base_sequence >= 0 else -1, producer_epoch=0, base_sequence=base_sequence
    )
    header = batch.parse_header(built)
    assert header.base_sequence == base_sequence
    assert header.last_sequence == expected_last


def test_no_producer_fields_default_to_minus_one():
    header = batch.parse_header(batch.build([REFERENCE_RECORD]))
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert header.partition_leader_epoch == -1


def test_extreme_producer_field_values_round_trip():
    built = batch.build(
        [REFERENCE_RECORD],
        producer_id=2**63 - 1,
        producer_epoch=2**15 - 1,
        base_sequence=INT32_MAX,
        partition_leader_epoch=INT32_MAX,
    )
    header = batch.validate(built)
    assert header.producer_id == 2**63 - 1
    assert header.producer_epoch == 2**15 - 1
    assert header.base_sequence == INT32_MAX
    assert header.partition_leader_epoch == INT32_MAX


# --- CRC coverage --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crc_sample_batch():
    return batch.build(_sample_records(), producer_id=3, producer_epoch=1, base_sequence=0)


def test_sample_batch_is_valid(crc_sample_batch):
    batch.validate(crc_sample_batch)


def test_flipping_any_byte_from_21_on_fails_validation(crc_sample_batch):
    for index in range(batch.CRC_START, len(crc_sample_batch)):
        for mask in (0x01, 0x80, 0xFF):
            corrupted = bytearray(crc_sample_batch)
            corrupted[index] ^= mask
            with pytest.raises(CorruptRecordError):
                batch.validate(bytes(corrupted))
            with pytest.raises(CorruptRecordError):
                batch.decode(bytes(corrupted))


def test_flipping_a_stored_crc_byte_fails_validation(crc_sample_batch):
    for index in range(17, 21):
        corrupted = bytearray(crc_sample_batch)
        corrupted[index] ^= 0x01
        with pytest.raises(CorruptRecordError, match="CRC"):
            batch.validate(bytes(corrupted))


@pytest.mark.parametrize("index", list(range(0, 8)) + list(range(12, 16)))
def test_base_offset_and_leader_epoch_bytes_are_not_crc_covered(crc_sample_batch, index):
    changed = bytearray(crc_sample_batch)
    changed[index] ^= 0x5A
    header = batch.validate(bytes(changed))
    assert header.crc == batch.parse_header(crc_sample_batch).crc
    assert batch.decode(bytes(changed)).records[0].key == b"key-0"


@pytest.mark.parametrize("index", range(8, 12))
def test_changing_batch_length_fails_validation(crc_sample_batch, index):
    changed = bytearray(crc_sample_batch)
    changed[index] ^= 0x01
    with pytest.raises(CorruptRecordError):
        batch.validate(bytes(changed))


# --- with_offset_and_epoch / with_log_append_time -----------------------------------------


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name.lower())
def test_with_offset_and_epoch_changes_only_offset_and_epoch_bytes(codec):
    original = batch.build(_sample_records(), compression=codec, partition_leader_epoch=0)
    rewritten = b"".join(batch.with_offset_and_epoch(original, 987654321, 17))
    assert len(rewritten) == len(original)
    changed = {i for i, (a, b) in enumerate(zip(original, rewritten, strict=True)) if a != b}
    assert changed <= set(range(0, 8)) | set(range(12, 16))
    assert rewritten[:8] == struct.pack(">q", 987654321)
    assert rewritten[12:16] == struct.pack(">i", 17)
    header = batch.validate(rewritten)
    assert header.base_offset == 987654321
    assert header.partition_leader_epoch == 17
    assert header.crc == batch.parse_header(original).crc
    expected = [r._replace(offset=r.offset + 987654321) for r in _sample_records()]
    assert batch.decode(rewritten).records == expected


def test_with_offset_and_epoch_accepts_bytearray_and_memoryview():
    original = batch.build(_sample_records())
    for source in (bytearray(original), memoryview(original)):
        rewritten = b"".join(batch.with_offset_and_epoch(source, 5, 2))
        assert batch.validate(rewritten).base_offset == 5


def test_with_offset_and_epoch_passes_the_other_bytes_as_views_of_the_input():
    original = batch.build(_sample_records())
    parts = batch.with_offset_and_epoch(original, 1, 1)
    assert [len(p) for p in parts] == [8, 4, 4, len(original) - 16]
    assert isinstance(parts[1], memoryview) and parts[1].obj is original
    assert isinstance(parts[3], memoryview) and parts[3].obj is original


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name.lower())
def test_with_log_append_time_sets_bit_max_timestamp_and_crc(codec):
    records = _sample_records()
    original = batch.build(
        records, compression=codec, is_transactional=True, producer_id=8, producer_epoch=0, base_sequence=0
    )
    stamped = bytes(batch.with_log_append_time(original, 1_900_000_000_000))
    header = batch.validate(stamped)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.attributes == int(codec) | 0x10 | 0x08
    assert header.max_timestamp == 1_900_000_000_000
    assert header.base_timestamp == records[0].timestamp
    changed = {i for i, (a, b) in enumerate(zip(original, stamped, strict=True)) if a != b}
    assert changed <= set(range(17, 23)) | set(range(35, 43))
    decoded = batch.decode(stamped)
    assert decoded.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert decoded.records == [r._replace(timestamp=1_900_000_000_000) for r in records]


def test_with_log_append_time_leaves_input_untouched():
    original = batch.build(_sample_records())
    snapshot = bytes(original)
    batch.with_log_append_time(original, 1)
    assert original == snapshot


def test_with_log_append_time_is_idempotent_on_a_log_append_time_batch():
    once = bytes(batch.with_log_append_time(batch.build(_sample_records()), 111))
    twice = bytes(batch.with_log_append_time(once, 222))
    header = batch.validate(twice)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 222
    assert all(r.timestamp == 222 for r in batch.decode(twice).records)


# --- control batches -----------------------------------------------------------------------


def test_control_record_key_and_value_layout():
    assert batch.control_record(ControlType.COMMIT) == (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")
    assert batch.control_record(ControlType.ABORT, 0x01020304) == (b"\x00\x00\x00\x00", b"\x00\x00\x01\x02\x03\x04")


def _transaction_with_marker(control_type):
    data = batch.build(
        [Record(0, 10, b"a", b"1"), Record(1, 11, b"b", b"2")],
        is_transactional=True,
        producer_id=77,
        producer_epoch=3,
        base_sequence=0,
    )
    key, value = batch.control_record(control_type, coordinator_epoch=5)
    marker = batch.build(
        [Record(2, 12, key, value)],
        base_offset=2,
        is_transactional=True,
        is_control=True,
        producer_id=77,
        producer_epoch=3,
    )
    more = batch.build([Record(3, 13, b"c", b"3")], base_offset=3)
    return data + marker + more, (key, value)


@pytest.mark.parametrize("control_type", list(ControlType), ids=lambda c: c.name.lower())
def test_iter_batches_returns_control_batches(control_type):
    buf, (key, value) = _transaction_with_marker(control_type)
    decoded = list(record_set.iter_batches(buf))
    assert [d.is_control for d in decoded] == [False, True, False]
    assert [d.is_transactional for d in decoded] == [True, True, False]
    assert decoded[1].producer_id == 77
    assert decoded[1].records == [Record(2, 12, key, value, ())]


@pytest.mark.parametrize("control_type", list(ControlType), ids=lambda c: c.name.lower())
def test_iter_user_records_skips_control_batches(control_type):
    buf, _ = _transaction_with_marker(control_type)
    assert list(record_set.iter_user_records(buf)) == [
        (TimestampType.CREATE_TIME, Record(0, 10, b"a", b"1", ())),
        (TimestampType.CREATE_TIME, Record(1, 11, b"b", b"2", ())),
        (TimestampType.CREATE_TIME, Record(3, 13, b"c", b"3", ())),
    ]


def test_iter_user_records_on_only_a_control_batch_yields_nothing():
    key, value = batch.control_record(ControlType.COMMIT)
    marker = batch.build(
        [Record(0, 1, key, value)], is_control=True, is_transactional=True, producer_id=1, producer_epoch=0
    )
    assert list(record_set.iter_user_records(marker)) == []
    assert len(list(record_set.iter_batches(marker))) == 1


# --- malformed batches ---------------------------------------------------------------------


@pytest.mark.parametrize("length", [0, 1, 11, 16, 17, 60, 61, 65, 69])
def test_truncated_reference_batch_is_corrupt(length):
    truncated = REFERENCE_BATCH[:length]
    with pytest.raises(CorruptRecordError):
        batch.validate(truncated)
    for verify_crc in (True, False):
        with pytest.raises(CorruptRecordError):
            batch.decode(truncated, verify_crc=verify_crc)


@pytest.mark.parametrize("batch_length", [-1, 0, 48, -(2**31)])
def test_batch_length_smaller_than_header_is_corrupt(batch_length):
    buf = bytearray(REFERENCE_BATCH)
    struct.pack_into(">i", buf, 8, batch_length)
    with pytest.raises(CorruptRecordError):
        batch.parse_header(bytes(buf))
    with pytest.raises(CorruptRecordError):
        batch.decode(bytes(buf), verify_crc=False)
    with pytest.raises(CorruptRecordError):
        list(record_set.iter_batches(bytes(buf)))


@pytest.mark.parametrize("magic", [0, 1, 3, 0x7F, 0xFF])
def test_wrong_magic_is_corrupt_for_the_v2_decoder(magic):
    buf = bytearray(REFERENCE_BATCH)
    buf[16] = magic
    with pytest.raises(CorruptRecordError, match="magic"):
        batch.parse_header(bytes(buf))
    for verify_crc in (True, False):
        with pytest.raises(CorruptRecordError):
            batch.decode(bytes(buf), verify_crc=verify_crc)


def test_batch_length_larger_than_bytes_present_is_corrupt():
    buf = bytearray(REFERENCE_BATCH)
    struct.pack_into(">i", buf, 8, 59)
    for verify_crc in (True, False):
        with pytest.raises(CorruptRecordError):
            batch.decode(bytes(buf), verify_crc=verify_crc)


def test_trailing_bytes_after_a_batch_fail_validation():
    with pytest.raises(CorruptRecordError):
        batch.validate(REFERENCE_BATCH + b"\x00")


MALFORMED_BODIES = {
    "record-length-overruns-batch": (_v(100) + GOOD_FIELDS, 1),
    "negative-record-length": (_v(-5) + GOOD_FIELDS, 1),
    "leftover-bytes-after-last-record": (_record_body(GOOD_FIELDS) + b"\x00\x00", 1),
    "count-larger-than-records": (_record_body(GOOD_FIELDS), 2),
    "negative-record-count": (_record_body(GOOD_FIELDS), -1),
    "most-negative-record-count": (_record_body(GOOD_FIELDS), -(2**31)),
    "zero-count-with-records": (_record_body(GOOD_FIELDS), 0),
    "varint-longer-than-10-bytes": (b"\xff" * 11 + b"\x01", 1),
    "varint-of-10-continuation-bytes": (b"\x80" * 10 + b"\x00" * 10, 1),
    "truncated-varint": (b"\x80\x80", 1),
    # an 11-byte encoding of 0 as the timestamp delta: harmless value, illegal length
    "timestamp-delta-varint-of-11-bytes": (
        _record_body(b"\x00" + b"\x80" * 10 + b"\x00" + _v(0) + _v(-1) + _v(-1) + _v(0)),
        1,
    ),
    "record-fields-shorter-than-length": (_record_body(GOOD_FIELDS + b"\x00\x00"), 1),
    "record-fields-longer-than-length": (_v(len(GOOD_FIELDS) - 2) + GOOD_FIELDS, 1),
    "key-overruns-record": (_record_body(b"\x00" + _v(0) + _v(0) + _v(40) + b"k" + _v(-1) + _v(0)), 1),
    "value-overruns-record": (_record_body(b"\x00" + _v(0) + _v(0) + _v(-1) + _v(40) + b"v" + _v(0)), 1),
    "negative-header-count": (_record_body(b"\x00" + _v(0) + _v(0) + _v(-1) + _v(-1) + _v(-3)), 1),
    "null-header-key": (_record_body(b"\x00" + _v(0) + _v(0) + _v(-1) + _v(-1) + _v(1) + _v(-1) + _v(-1)), 1),
    "header-value-overruns-record": (
        _record_body(b"\x00" + _v(0) + _v(0) + _v(-1) + _v(-1) + _v(1) + _v(1) + b"h" + _v(30) + b"x"),
        1,
    ),
    "header-count-larger-than-headers": (
        _record_body(b"\x00" + _v(0) + _v(0) + _v(-1) + _v(-1) + _v(3) + _v(1) + b"h" + _v(-1)),
        1,
    ),
    "empty-record": (_v(0), 1),
    "empty-payload-with-one-record": (b"", 1),
}


@pytest.mark.parametrize("name", list(MALFORMED_BODIES))
def test_malformed_records_raise_corrupt_record_error(name):
    body, count = MALFORMED_BODIES[name]
    malformed = _batch_with_body(body, count)
    batch.validate(malformed)  # the CRC and framing are fine; the records are not
    for verify_crc in (True, False):
        with pytest.raises(CorruptRecordError):
            batch.decode(malformed, verify_crc=verify_crc)
    with pytest.raises(CorruptRecordError):
        list(record_set.iter_batches(malformed))


@pytest.mark.parametrize("name", list(MALFORMED_BODIES))
def test_malformed_records_inside_a_compressed_payload_raise_corrupt_record_error(name):
    body, count = MALFORMED_BODIES[name]
    malformed = _batch_with_body(compress(Codec.GZIP, body), count, attributes=int(Codec.GZIP))
    with pytest.raises(CorruptRecordError):
        batch.decode(malformed)


def test_well_formed_hand_made_body_decodes():
    # Guards the malformed cases above: the same helper with a good body decodes fine.
    decoded = batch.decode(_batch_with_body(_record_body(GOOD_FIELDS), 1, base_offset=4, base_timestamp=9))
    assert decoded.records == [Record(4, 9, b"k", b"v", ())]


def test_compressed_payload_that_is_not_valid_for_its_codec_is_corrupt():
    malformed = _batch_with_body(b"definitely not gzip", 1, attributes=int(Codec.GZIP))
    with pytest.raises(CorruptRecordError):
        batch.decode(malformed)


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_id_in_attributes_raises_unsupported_codec_error(codec_id):
    unknown = _batch_with_body(_record_body(GOOD_FIELDS), 1, attributes=codec_id)
    with pytest.raises(UnsupportedCodecError):  # the CRC is right, but no consumer could decode it
        batch.validate(unknown)
    with pytest.raises(UnsupportedCodecError):
        batch.decode(unknown)
    with pytest.raises(UnsupportedCodecError):
        list(record_set.iter_batches(unknown))


# --- offset gaps ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name.lower())
def test_non_contiguous_offsets_survive_build_and_decode(codec):
    records = [
        Record(1000, 1, b"a", b"1"),
        Record(1002, 2, b"b", b"2"),
        Record(1010, 3, b"c", b"3"),
        Record(1000 + 2**20, 4, b"d", b"4"),
    ]
    built = batch.build(records, base_offset=1000, compression=codec)
    header = batch.validate(built)
    assert header.records_count == 4
    assert header.last_offset_delta == 2**20
    assert header.last_offset == 1000 + 2**20
    decoded = batch.decode(built)
    assert decoded.records == records
    assert decoded.last_offset == 1000 + 2**20


def test_first_record_offset_above_base_offset_survives():
    records = [Record(15, 1, None, b"x"), Record(16, 1, None, b"y")]
    assert batch.decode(batch.build(records, base_offset=10)).records == records


# --- record sets: several batches and partial tails ----------------------------------------


def _three_batches():
    first = batch.build([Record(0, 1, b"a", b"1"), Record(1, 2, b"b", b"2")])
    second = batch.build([Record(2, 3, b"c", b"3")], base_offset=2, compression=Codec.GZIP)
    third = batch.build([Record(3, 4, b"d", b"4" * 100)], base_offset=3)
    return first, second, third


def test_iter_entries_yields_positions_and_headers_of_every_batch():
    first, second, third = _three_batches()
    entries = list(record_set.iter_entries(first + second + third))
    assert [pos for pos, _ in entries] == [0, len(first), len(first) + len(second)]
    assert [h.base_offset for _, h in entries] == [0, 2, 3]
    assert [h.size for _, h in entries] == [len(first), len(second), len(third)]


@pytest.mark.parametrize("keep", [1, 11, 12, 16, 17, 18, 40, 60, 61, 62, 100, -1])
def test_iter_entries_stops_silently_at_a_partial_trailing_batch(keep):
    first, second, third = _three_batches()
    tail = third[:keep]
    assert len(tail) < len(third)
    buf = first + second + tail
    entries = list(record_set.iter_entries(buf, allow_partial_tail=True))
    assert [pos for pos, _ in entries] == [0, len(first)]
    decoded = list(record_set.iter_batches(buf))
    assert [r for d in decoded for r in d.records] == [
        Record(0, 1, b"a", b"1", ()),
        Record(1, 2, b"b", b"2", ()),
        Record(2, 3, b"c", b"3", ()),
    ]


@pytest.mark.parametrize("keep", [1, 11, 12, 16, 17, 18, 40, 60, 61, 62, 100, -1])
def test_iter_entries_raises_on_a_partial_trailing_batch_when_not_allowed(keep):
    first, second, third = _three_batches()
    buf = first + second + third[:keep]
    with pytest.raises(CorruptRecordError):
        list(record_set.iter_entries(buf, allow_partial_tail=False))


def test_iter_entries_on_an_empty_buffer_yields_nothing():
    assert list(record_set.iter_entries(b"")) == []
    assert list(record_set.iter_entries(b"", allow_partial_tail=False)) == []
    assert list(record_set.iter_batches(b"")) == []


def test_iter_entries_raises_on_a_bad_header_in_a_complete_entry_even_with_partial_tail_allowed():
    first, _, _ = _three_batches()
    bad = bytearray(REFERENCE_BATCH)
    bad[16] = 9  # not a magic of any format
    with pytest.raises(CorruptRecordError):
        list(record_set.iter_entries(first + bytes(bad), allow_partial_tail=True))


@pytest.mark.parametrize("tail_length", [17, 30, 60])
def test_iter_entries_raises_on_a_bad_magic_in_a_short_trailing_entry(tail_length):
    # The docstring promises that malformed headers always raise: a tail long enough to hold
    # its magic byte, with a magic no format uses, is malformed rather than cut short.
    first, _, _ = _three_batches()
    bad = bytearray(REFERENCE_BATCH[:tail_length])
    bad[16] = 9
    with pytest.raises(CorruptRecordError):
        list(record_set.iter_entries(first + bytes(bad), allow_partial_tail=True))


def test_iter_batches_raises_on_a_complete_batch_with_a_bad_crc():
    first, second, _ = _three_batches()
    bad = bytearray(second)
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(record_set.iter_batches(first + bytes(bad)))


def test_verify_crc_false_skips_the_crc_check_only():
    built = bytearray(batch.build([Record(0, 1, b"k", b"value")]))
    built[-2] ^= ord("e") ^ ord("E")  # last byte of the value, just before the header count
    with pytest.raises(CorruptRecordError):
        batch.decode(bytes(built))
    assert batch.decode(bytes(built), verify_crc=False).records == [Record(0, 1, b"k", b"valuE", ())]
    decoded = list(record_set.iter_batches(bytes(built), verify_crc=False))
    assert decoded[0].records == [Record(0, 1, b"k", b"valuE", ())]


def test_decode_accepts_bytearray_and_memoryview():
    built = batch.build(_sample_records(), compression=Codec.SNAPPY)
    expected = batch.decode(built)
    assert batch.decode(bytearray(built)) == expected
    assert batch.decode(memoryview(built)) == expected
    assert record_set.decode_entry(memoryview(built)) == expected
