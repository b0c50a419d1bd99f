"""The record walker's twins agree on random batches, valid and damaged, for every consumer.

* ``record_walk.walk`` gives back exactly the fields ``batch.build`` wrote, record by record.
* On random sections (built, then damaged by a few random byte edits, with a right or wrong count)
  the Python twin and the C walker (``_recordwalk``) give the same answer for each of their users:
  ``record_check``'s walk (largest timestamp, or index and reason) and ``retain``'s spans (the same
  spans, or the same error); and each error names the record the twin names.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.records import batch, record_check, record_walk, retain
from broker.records.batch import Record
from broker.records.errors import CorruptRecordError

from .test_properties import FUZZ, ROUND_TRIP, headers, optional_bytes, timestamps

BASE_TIME = 1_700_000_000_000


@st.composite
def sections(draw):
    """``(records section, header, records)`` of one uncompressed batch of 0..6 random records."""
    base_offset = draw(st.integers(0, 2**40))
    contents = [
        Record(base_offset + i, t, draw(optional_bytes), draw(optional_bytes), draw(headers))
        for i, t in enumerate(draw(st.lists(timestamps, max_size=6)))
    ]
    built = batch.build(contents, base_offset=base_offset)
    return built[batch.HEADER_SIZE :], batch.parse_header(built), contents


@ROUND_TRIP
@given(sections())
def test_the_python_walk_gives_back_what_was_built(case):
    section, header, contents = case
    views = list(record_walk.walk(section, header.records_count))
    assert [
        (
            header.base_offset + v.offset_delta,
            header.base_timestamp + v.timestamp_delta,
            v.key,
            v.value,
            v.headers,
            v.attributes,
        )
        for v in views
    ] == [(r.offset, r.timestamp, r.key, r.value, r.headers, 0) for r in contents]
    # the records tile the section: each starts where the one before it ends
    assert [v.start for v in views] + [len(section)] == [0] + [v.end for v in views]


@st.composite
def damaged(draw):
    """A section with a few random byte edits (set, insert, delete) and maybe a wrong record count."""
    section, header, _ = draw(sections())
    data = bytearray(section)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(["set", "insert", "delete"]))
        if edit == "set" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[at : at + draw(st.integers(1, 4))]
    count = header.records_count + draw(st.sampled_from([0, 0, 0, 1, -1]))
    return bytes(data), header._replace(records_count=count)


def c_or_skip(name: str):
    return getattr(pytest.importorskip("broker.records._recordwalk"), name)


@FUZZ
@given(damaged())
def test_the_record_checks_walk_agrees_with_c(case):
    data, header = case
    walk = c_or_skip("walk")
    expected = record_check._walk_in_python(data, header.records_count, header.base_timestamp)
    assert walk(data, header.records_count, header.base_timestamp) == expected


@FUZZ
@given(damaged())
def test_the_cleaners_spans_agree_with_c(case):
    data, header = case
    c_or_skip("spans")
    outcomes = []
    for spans in (retain._spans, retain._python_spans):
        try:
            outcomes.append([(s.start, s.end, s.record) for s in spans(data, header)])
        except CorruptRecordError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


@FUZZ
@given(damaged())
def test_decoding_fails_naming_the_record_the_walk_names(case):
    data, header = case
    try:
        walked = list(record_walk.walk(data, header.records_count))
    except record_walk.RecordWalkError as fault:
        with pytest.raises(record_walk.RecordWalkError) as raised:
            batch.decode_records(data, header.records_count, header.base_offset, header.base_timestamp)
        assert (raised.value.index, raised.value.reason, str(raised.value)) == (fault.index, fault.reason, str(fault))
        assert str(fault).startswith(
            f"record {fault.index} is invalid: " if fault.index >= 0 else "the batch is invalid: "
        )
    else:
        decoded = batch.decode_records(data, header.records_count, header.base_offset, header.base_timestamp)
        assert [(r.key, r.value, r.headers) for r in decoded] == [(v.key, v.value, v.headers) for v in walked]
