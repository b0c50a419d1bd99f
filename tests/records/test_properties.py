"""Hypothesis properties of the record-format layer: build/decode round trips of random batches for
every codec and producer state, empty batches, varints over the whole int64 range, record sets of
several batches, and robustness (only CorruptRecordError, or success) on random and mutated bytes."""

import random
import struct
import zlib

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import encode_varint as kafka_encode_varint

from broker.records import batch, compression, legacy, record_set
from broker.records.batch import Record, TimestampType
from broker.records.compression import Codec
from broker.records.errors import CorruptRecordError
from broker.records.varint import decode_varint, encode_varint

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

ROUND_TRIP = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
FUZZ = settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

codecs = st.sampled_from(list(Codec))
small_bytes = st.binary(max_size=3 * 1024)
large_bytes = st.integers(0, 2**32).map(lambda seed: random.Random(seed).randbytes(300 * 1024))
optional_bytes = st.one_of(st.none(), small_bytes)
# now and then (about 1 in 30) a ~300 KiB value
values = st.integers(0, 29).flatmap(lambda n: large_bytes if n == 0 else optional_bytes)
# any two timestamps stay within int64 of each other, so every delta is encodable
timestamps = st.one_of(st.just(-1), st.just(0), st.integers(0, 2**45), st.integers(-(2**61), 2**61))
headers = st.lists(st.tuples(st.text(max_size=20), optional_bytes), max_size=4).map(tuple)


@st.composite
def record_lists(draw, max_size=8):
    """``(base_offset, records)``: 1..max_size records with increasing, possibly gapped offsets."""
    base_offset = draw(st.integers(0, 2**62))
    offsets = [base_offset + draw(st.integers(0, 5))]
    for gap in draw(st.lists(st.integers(1, 10**6), max_size=max_size - 1)):
        offsets.append(offsets[-1] + gap)
    records = [Record(o, draw(timestamps), draw(optional_bytes), draw(values), draw(headers)) for o in offsets]
    return base_offset, records


producer_states = st.fixed_dictionaries(
    {
        "producer_id": st.one_of(st.just(-1), st.integers(0, INT64_MAX)),
        "producer_epoch": st.one_of(st.just(-1), st.integers(0, 2**15 - 1)),
        "base_sequence": st.one_of(st.just(-1), st.integers(0, 2**31 - 1)),
        "partition_leader_epoch": st.integers(-1, 2**31 - 1),
        "is_transactional": st.booleans(),
        "is_control": st.booleans(),
    }
)


def _expected_last_sequence(base_sequence, last_offset_delta):
    if base_sequence == -1:
        return -1
    return (base_sequence + last_offset_delta) % 2**31


@ROUND_TRIP
@given(record_lists(), codecs, producer_states)
def test_build_then_decode_returns_the_same_records(offsets_and_records, codec, state):
    base_offset, records = offsets_and_records
    built = batch.build(records, base_offset=base_offset, compression=codec, **state)
    header = batch.validate(built)
    assert header.size == len(built)
    assert header.base_offset == base_offset
    assert header.compression == codec
    assert header.records_count == len(records)
    assert header.last_offset == records[-1].offset
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert header.producer_id == state["producer_id"]
    assert header.producer_epoch == state["producer_epoch"]
    assert header.base_sequence == state["base_sequence"]
    assert header.last_sequence == _expected_last_sequence(state["base_sequence"], header.last_offset_delta)
    assert header.partition_leader_epoch == state["partition_leader_epoch"]
    assert header.is_transactional is state["is_transactional"]
    assert header.is_control is state["is_control"]
    decoded = batch.decode(built)
    assert decoded.records == records
    assert decoded.is_control is state["is_control"]
    assert decoded.producer_id == state["producer_id"]


@ROUND_TRIP
@given(record_lists(max_size=5), codecs, st.integers(-1, 2**50))
def test_log_append_time_round_trip_stamps_every_record(offsets_and_records, codec, append_time):
    base_offset, records = offsets_and_records
    built = batch.build(
        records,
        base_offset=base_offset,
        compression=codec,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        max_timestamp=append_time,
    )
    decoded = batch.decode(built)
    assert decoded.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert decoded.records == [r._replace(timestamp=append_time) for r in records]
    stamped = batch.with_log_append_time(batch.build(records, base_offset=base_offset, compression=codec), append_time)
    assert batch.decode(stamped).records == decoded.records


@ROUND_TRIP
@given(record_lists(max_size=4), codecs, st.integers(0, INT64_MAX), st.integers(-(2**31), 2**31 - 1))
def test_offset_and_epoch_rewrite_keeps_the_batch_valid(offsets_and_records, codec, new_base, epoch):
    base_offset, records = offsets_and_records
    assume(new_base + (records[-1].offset - base_offset) <= INT64_MAX)
    built = batch.build(records, base_offset=base_offset, compression=codec)
    placed = b"".join(batch.with_offset_and_epoch(built, new_base, epoch))
    header = batch.validate(placed)
    assert (header.base_offset, header.partition_leader_epoch) == (new_base, epoch)
    assert placed[16:] == built[16:] and placed[8:12] == built[8:12]
    shift = new_base - base_offset
    assert batch.decode(placed).records == [r._replace(offset=r.offset + shift) for r in records]


@pytest.mark.parametrize("codec", list(Codec), ids=lambda c: c.name.lower())
@settings(max_examples=30, deadline=None)
@given(state=producer_states, base_offset=st.integers(0, 2**62))
def test_empty_batches_build_and_decode_to_zero_records(codec, state, base_offset):
    built = batch.build([], base_offset=base_offset, compression=codec, **state)
    header = batch.validate(built)
    assert header.records_count == 0
    assert header.compression == codec
    assert header.base_offset == base_offset
    decoded = batch.decode(built)
    assert decoded.records == []
    assert decoded.is_control is state["is_control"]
    assert [d.records for d in record_set.iter_batches(built)] == [[]]


@settings(max_examples=200, deadline=None)
@given(st.integers(INT64_MIN, INT64_MAX), st.binary(max_size=5), st.binary(max_size=5))
def test_varint_round_trip_over_int64(value, prefix, suffix):
    encoded = encode_varint(value)
    assert 1 <= len(encoded) <= 10
    assert decode_varint(prefix + encoded + suffix, len(prefix)) == (value, len(prefix) + len(encoded))
    out = bytearray()
    kafka_encode_varint(value, out.append)
    assert encoded == bytes(out)


@pytest.mark.parametrize(
    "value, encoded",
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (INT64_MAX, b"\xfe" + b"\xff" * 8 + b"\x01"),
        (INT64_MIN, b"\xff" * 9 + b"\x01"),
    ],
)
def test_varint_known_encodings(value, encoded):
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize("encoded", [b"\x80" * 10 + b"\x00", b"\xff" * 10 + b"\x01", b"\xff" * 20])
def test_varint_longer_than_ten_bytes_is_rejected(encoded):
    with pytest.raises(CorruptRecordError, match="longer than 10"):
        decode_varint(encoded, 0)


@pytest.mark.parametrize("encoded", [b"", b"\x80", b"\xff" * 9])
def test_truncated_varint_is_rejected(encoded):
    with pytest.raises(CorruptRecordError, match="truncated"):
        decode_varint(b"\x00" + encoded, 1)


@ROUND_TRIP
@given(st.lists(st.tuples(record_lists(max_size=4), codecs), min_size=1, max_size=5))
def test_iter_batches_over_concatenated_batches_returns_all_in_order(specs):
    built = [batch.build(records, base_offset=base, compression=codec) for (base, records), codec in specs]
    buf = b"".join(built)
    entries = list(record_set.iter_entries(buf, allow_partial_tail=False))
    positions = [sum(len(b) for b in built[:i]) for i in range(len(built))]
    assert [pos for pos, _ in entries] == positions
    decoded = list(record_set.iter_batches(buf))
    assert [d.records for d in decoded] == [records for (_, records), _ in specs]
    assert [d.base_offset for d in decoded] == [base for (base, _), _ in specs]
    assert list(record_set.iter_user_records(buf)) == [
        (TimestampType.CREATE_TIME, r) for (_, records), _ in specs for r in records
    ]


# --- robustness ----------------------------------------------------------------------------


def _only_corrupt_record_errors(func, *args, **kwargs):
    """Run ``func``; success and CorruptRecordError (or a subclass) are fine, anything else fails."""
    try:
        result = func(*args, **kwargs)
        if hasattr(result, "__next__"):
            result = list(result)
        return result
    except CorruptRecordError:
        return None


def _all_decoders(data, verify_crc=True):
    _only_corrupt_record_errors(record_set.iter_batches, data, verify_crc)
    _only_corrupt_record_errors(batch.decode, data, verify_crc)
    _only_corrupt_record_errors(legacy.decode, data, verify_crc)
    _only_corrupt_record_errors(record_set.decode_entry, data, verify_crc)
    _only_corrupt_record_errors(record_set.iter_entries, data, False)
    if verify_crc:
        _only_corrupt_record_errors(record_set.upconvert, data)


@pytest.mark.parametrize("verify_crc", [True, False], ids=["crc-checked", "crc-unchecked"])
@FUZZ
@given(data=st.binary(max_size=400))
def test_random_bytes_raise_only_corrupt_record_error(verify_crc, data):
    _all_decoders(data, verify_crc)


@pytest.mark.parametrize("verify_crc", [True, False], ids=["crc-checked", "crc-unchecked"])
@FUZZ
@given(magic=st.sampled_from([0, 1, 2]), rest=st.binary(max_size=200))
def test_random_bytes_behind_a_plausible_prefix_raise_only_corrupt_record_error(verify_crc, magic, rest):
    # a plausible offset/size/magic prefix gets random bytes past the first checks
    data = struct.pack(">qiIb", 0, len(rest) + 5, 0, magic) + rest
    _all_decoders(data, verify_crc)


@FUZZ
@given(codecs, st.binary(max_size=300))
def test_random_bytes_to_decompress_raise_only_corrupt_record_error(codec, data):
    _only_corrupt_record_errors(compression.decompress, codec, data)
    _only_corrupt_record_errors(compression.decompress, codec, compression.XERIAL_MAGIC + data)


@FUZZ
@given(codecs, st.binary(max_size=200), st.integers(-3, 12))
def test_random_record_bodies_in_a_crc_valid_batch_raise_only_corrupt_record_error(codec, body, count):
    payload = compression.compress(codec, body)
    buf = bytearray(
        batch.HEADER.pack(
            0,
            batch.HEADER_SIZE - batch.LOG_OVERHEAD + len(payload),
            -1,
            2,
            0,
            int(codec),
            max(count - 1, 0),
            0,
            0,
            -1,
            -1,
            -1,
            count,
        )
    )
    buf += payload
    struct.pack_into(">I", buf, 17, batch.compute_crc(buf))
    batch.validate(buf)
    _all_decoders(bytes(buf))


@FUZZ
@given(st.sampled_from([Codec.GZIP, Codec.SNAPPY, Codec.LZ4]), st.binary(max_size=200))
def test_random_inner_sets_in_a_crc_valid_legacy_wrapper_raise_only_corrupt_record_error(codec, inner):
    body = struct.pack(">bbqi", 1, int(codec), 0, -1)
    value = compression.compress(codec, inner)
    body += struct.pack(">i", len(value)) + value
    entry = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    legacy.validate(entry)
    _all_decoders(entry)


def _sample_entries():
    records = [Record(0, 10, b"k", b"value" * 5, (("h", None),)), Record(1, 11, None, b"", ())]
    samples = [batch.build(records, compression=c) for c in Codec]
    for magic in (0, 1):
        for codec in (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4):
            if magic == 0 and codec == Codec.LZ4:
                continue  # kafka-python cannot build it (non-standard frame)
            builder = LegacyRecordBatchBuilder(magic, int(codec), 1 << 20)
            builder.append(0, timestamp=10, key=b"k", value=b"value" * 5)
            builder.append(1, timestamp=11, key=None, value=b"")
            samples.append(bytes(builder.build()))
    return samples


SAMPLE_ENTRIES = _sample_entries()


def _fix_checksum(buf: bytearray) -> None:
    """Recompute whichever checksum the (possibly mutated) magic byte calls for."""
    if len(buf) > 21 and buf[16] == 2:
        struct.pack_into(">I", buf, 17, batch.compute_crc(buf))
    elif len(buf) > 16:
        struct.pack_into(">I", buf, 12, zlib.crc32(buf[16:]))


@pytest.mark.parametrize("verify_crc", [True, False], ids=["crc-checked", "crc-unchecked"])
@FUZZ
@given(
    index=st.sampled_from(range(len(SAMPLE_ENTRIES))),
    mutations=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.integers(0, 10**6),
    fix_checksum=st.booleans(),
)
def test_mutated_valid_entries_raise_only_corrupt_record_error(verify_crc, index, mutations, cut, fix_checksum):
    buf = bytearray(SAMPLE_ENTRIES[index])
    for position, byte in mutations:
        buf[position % len(buf)] = byte
    if cut % 3 == 0:
        del buf[cut % len(buf) :]
    if fix_checksum:
        _fix_checksum(buf)
    _all_decoders(bytes(buf), verify_crc)
