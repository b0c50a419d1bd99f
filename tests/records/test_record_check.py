"""record_check: the records inside a produced v2 batch, walked before an append (Kafka's LogValidator).

* Valid batches of every codec give the largest record timestamp (examples and a hypothesis property).
* The C walker (``_recordwalk``) and its Python twin (``record_walk``) agree on valid records
  sections and on thousands of mutated ones: both accept with the same timestamp, or both reject
  with the same index and reason (and every record before that index decodable).
* Hand-made batches with a correct CRC but bad records raise InvalidRecordsError with the index of
  the first bad record, or -1 when the fault is the batch's.
"""

import importlib.util
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.records import batch, record_check
from broker.records.batch import Record
from broker.records.compression import Codec, compress, decompress
from broker.records.errors import CorruptRecordError
from broker.records.record_check import InvalidRecordsError
from broker.records.varint import encode_varint

from .test_batch import _batch_with_body
from .test_properties import INT64_MAX, INT64_MIN, ROUND_TRIP, codecs, headers, optional_bytes, timestamps

BASE_TIME = 1_700_000_000_000
COMPRESSED = [c for c in Codec if c != Codec.NONE]


# -- hand-encoded records ----------------------------------------------------------------------


def nullable(data: bytes | None) -> bytes:
    return encode_varint(-1) if data is None else encode_varint(len(data)) + data


def record(
    offset_delta: int,
    timestamp_delta: int = 0,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    header_section: bytes = b"\x00",
    length_adjust: int = 0,
    raw_timestamp_delta: bytes | None = None,
) -> bytes:
    """One record: attributes 0, the varint fields, ``header_section`` as is (count then headers);
    its length prefix is off by ``length_adjust`` if asked."""
    stamp = encode_varint(timestamp_delta) if raw_timestamp_delta is None else raw_timestamp_delta
    return framed(
        b"\x00" + stamp + encode_varint(offset_delta) + nullable(key) + nullable(value) + header_section, length_adjust
    )


def framed(fields: bytes, length_adjust: int = 0) -> bytes:
    return encode_varint(len(fields) + length_adjust) + fields


def records(count: int, start: int = 0) -> bytes:
    return b"".join(record(i, timestamp_delta=i) for i in range(start, start + count))


def check(data: bytes, **kwargs) -> int:
    return record_check.check(data, batch.validate(data), **kwargs)


def section(data: bytes) -> bytes:
    """The (decompressed) records section of a batch."""
    header = batch.parse_header(data)
    return bytes(decompress(header.compression, data[batch.HEADER_SIZE :]))


def c_walk_or_skip():
    return pytest.importorskip("broker.records._recordwalk").walk


# -- valid batches ---------------------------------------------------------------------------


def test_the_implementation_is_named():
    built = importlib.util.find_spec("broker.records._recordwalk") is not None
    assert record_check.RECORD_WALK_IMPLEMENTATION == ("c" if built else "python")


SHAPES = {
    "one": [Record(0, BASE_TIME, b"k", b"v")],
    "nulls-and-headers": [
        Record(0, BASE_TIME, None, None, (("h", None), ("", b""))),
        Record(1, BASE_TIME + 900, b"", b"x" * 300, (("\u00e9", b"y"),)),
        Record(2, BASE_TIME - 50, None, b"z", ()),
    ],
    "many": [
        Record(i, BASE_TIME + (i * 7919) % 1000, f"k{i}".encode(), b"v" * (i % 40), (("n", b"%d" % i),) * (i % 3))
        for i in range(500)
    ],
    # every delta from the first timestamp stays inside int64, as a producer's must
    "extreme-low-timestamps": [
        Record(0, INT64_MIN, None, b"a"),
        Record(1, -1, None, b"b"),
        Record(2, INT64_MIN + 5, None, b"c"),
    ],
    "extreme-high-timestamps": [
        Record(0, INT64_MAX - 3, None, b"a"),
        Record(1, 0, None, b"b"),
        Record(2, INT64_MAX, None, b"c"),
    ],
    "no-timestamps": [Record(0, -1, b"k", b"v"), Record(1, -1, None, None)],
}


@pytest.mark.parametrize("codec", list(Codec), ids=lambda c: c.name.lower())
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_valid_batches_return_the_largest_record_timestamp(codec, shape):
    built = batch.build(SHAPES[shape], compression=codec)
    assert check(built) == max(r.timestamp for r in SHAPES[shape])


@st.composite
def batches(draw):
    """``(records, codec, base_offset)``: 1..8 records with contiguous offsets and random contents."""
    base_offset = draw(st.integers(0, 2**62))
    stamps = draw(st.lists(timestamps, min_size=1, max_size=8))
    contents = [
        Record(base_offset + i, t, draw(optional_bytes), draw(optional_bytes), draw(headers))
        for i, t in enumerate(stamps)
    ]
    return contents, draw(codecs), base_offset


@ROUND_TRIP
@given(batches())
def test_property_check_returns_max_timestamp_and_both_walkers_agree(spec):
    contents, codec, base_offset = spec
    built = batch.build(contents, base_offset=base_offset, compression=codec)
    expected = max(r.timestamp for r in contents)
    assert check(built) == expected
    header = batch.parse_header(built)
    assert record_check._walk_in_python(section(built), header.records_count, header.base_timestamp) == expected
    if record_check.RECORD_WALK_IMPLEMENTATION == "c":
        from broker.records._recordwalk import walk

        assert walk(section(built), header.records_count, header.base_timestamp) == expected


# -- the C walker and the Python walker agree ------------------------------------------------------


def assert_walkers_agree(walk, data: bytes, count: int, base_timestamp: int) -> str:
    """Both accept with one timestamp, or both reject with one index and reason; return "accepted",
    "rejected" (the batch's fault) or "indexed" (a record's)."""
    in_c = walk(data, count, base_timestamp)
    in_python = record_check._walk_in_python(data, count, base_timestamp)
    context = f"section {data.hex()} count {count} base {base_timestamp}: C {in_c!r}, Python {in_python!r}"
    assert in_c == in_python, context
    if isinstance(in_python, int):
        return "accepted"
    if in_c[0] >= 0:  # the first in_c[0] records are valid: walking only them leaves the rest over
        prefix = record_check._walk_in_python(data, in_c[0], base_timestamp)
        assert isinstance(prefix, int) or (prefix[0] == -1 and "left over" in prefix[1]), context + f" {prefix!r}"
    return "indexed" if in_python[0] >= 0 else "rejected"


def test_walkers_agree_on_valid_sections():
    walk = c_walk_or_skip()
    for contents in SHAPES.values():
        built = batch.build(contents)
        header = batch.parse_header(built)
        assert assert_walkers_agree(walk, section(built), len(contents), header.base_timestamp) == "accepted"
    assert assert_walkers_agree(walk, b"", 0, BASE_TIME) == "accepted"


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        at = rng.randint(0, len(out))
        if kind == 0 and out and at < len(out):
            out[at] ^= 1 << rng.randrange(8)
        elif kind == 1 and at < len(out):
            out[at] = rng.randrange(256)
        elif kind == 2:
            del out[at:]
        elif kind == 3:
            out += rng.randbytes(rng.randint(1, 12))
        elif kind == 4:
            out[at:at] = rng.randbytes(rng.randint(1, 12))
        else:
            del out[at : at + rng.randint(1, 5)]
    return bytes(out)


def test_walkers_agree_on_thousands_of_mutated_sections():
    walk = c_walk_or_skip()
    rng = random.Random(20240611)
    bases = [
        (section(batch.build(contents)), len(contents), contents[0].timestamp)
        for name, contents in SHAPES.items()
        if name != "many"
    ]
    bases.append((section(batch.build(SHAPES["many"][:20])), 20, BASE_TIME))
    # timestamps next to the int64 limits, so mutated deltas overflow now and then
    bases.append((records(4), 4, INT64_MAX - 2))
    bases.append((b"".join(record(i, timestamp_delta=-i) for i in range(4)), 4, INT64_MIN + 2))
    outcomes = {"accepted": 0, "rejected": 0, "indexed": 0}
    for _ in range(12_000):
        data, count, base_timestamp = rng.choice(bases)
        if rng.random() < 0.1:
            count += rng.choice((-1, 1))
        outcomes[assert_walkers_agree(walk, mutate(rng, data), count, base_timestamp)] += 1
    # the mutations reach every outcome, so the comparison above is not vacuous
    assert min(outcomes.values()) >= 100, outcomes


# -- invalid batches, each with the index of its first bad record (the same for both walkers) ---


def gzip_batch(body: bytes, count: int) -> bytes:
    return _batch_with_body(compress(Codec.GZIP, body), count, attributes=int(Codec.GZIP))


INVALID = {
    "offset-delta-gap": (_batch_with_body(records(2) + record(3), 3), 2),
    "fewer-records-than-count": (_batch_with_body(records(3), 5), 3),
    "more-records-than-count": (_batch_with_body(records(4), 3), -1),
    "null-header-key": (_batch_with_body(records(1) + record(1, header_section=b"\x02\x01\x02v"), 2), 1),
    "negative-header-count": (_batch_with_body(records(2) + record(2, header_section=b"\x01"), 3), 2),
    "record-length-past-the-batch": (_batch_with_body(records(1) + record(1, length_adjust=5), 2), 1),
    "key-overruns-its-record": (_batch_with_body(framed(b"\x00\x00\x00" + encode_varint(50) + b"k\x02v\x00"), 1), 0),
    "value-overruns-its-record": (
        _batch_with_body(records(1) + record(1, value=b"vv", length_adjust=-2) + record(2), 3),
        1,
    ),
    "timestamp-delta-overflows-int64": (
        _batch_with_body(records(1) + record(1, timestamp_delta=11), 2, base_timestamp=INT64_MAX - 10),
        1,
    ),
    "timestamp-delta-underflows-int64": (
        _batch_with_body(record(0, timestamp_delta=-6), 1, base_timestamp=INT64_MIN + 5),
        0,
    ),
    # ten varint bytes with a 70-bit value: exact in both walkers, then outside int64
    "timestamp-delta-beyond-64-bits": (_batch_with_body(record(0, raw_timestamp_delta=b"\xfe" * 9 + b"\x7f"), 1), 0),
    "gzip-offset-delta-gap": (gzip_batch(records(3) + record(4), 4), 3),
    "gzip-null-header-key": (gzip_batch(record(0, header_section=b"\x02\x01\x02v"), 1), 0),
    "not-gzip": (_batch_with_body(b"definitely not gzip data", 1, attributes=int(Codec.GZIP)), -1),
}


def test_the_hand_made_records_are_valid_when_left_alone():
    assert check(_batch_with_body(records(5), 5, base_timestamp=BASE_TIME)) == BASE_TIME + 4
    assert check(gzip_batch(record(0, header_section=b"\x02\x02h\x01"), 1)) == 0  # header h: null value


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_records_raise_with_the_first_bad_index(name):
    data, expected = INVALID[name]
    with pytest.raises(InvalidRecordsError) as raised:
        check(data)
    assert raised.value.index == expected
    assert isinstance(raised.value, CorruptRecordError)
    assert str(raised.value).startswith(f"record {expected} " if expected >= 0 else ("the batch", "the gzip"))


@pytest.mark.parametrize("name", sorted(set(INVALID) - {"not-gzip"}))
def test_invalid_records_give_both_walkers_the_index_and_reason(name):
    data, index = INVALID[name]
    header = batch.validate(data)
    payload = section(data)
    in_python = record_check._walk_in_python(payload, header.records_count, header.base_timestamp)
    assert in_python[0] == index
    walk = c_walk_or_skip()
    assert walk(payload, header.records_count, header.base_timestamp) == in_python


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name.lower())
def test_a_payload_above_max_decompressed_is_refused_for_the_batch(codec):
    body = records(200)
    data = _batch_with_body(compress(codec, body), 200, attributes=int(codec))
    assert check(data, max_decompressed=len(body)) == 199  # exactly at the bound is fine
    for bound in (len(body) - 1, 64):
        with pytest.raises(InvalidRecordsError, match="more than") as raised:
            check(data, max_decompressed=bound)
        assert raised.value.index == -1
