"""The read_committed filter (``broker.records.committed``): on random logs of committing and
aborting transactional producers interleaved with plain ones, read in random fetches, it hands on
exactly the committed records (computed by the log's generator); under read_uncommitted every data
record; control batches never. Plus its unhappy paths: malformed and unknown markers."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.records import batch, record_set
from broker.records.batch import ControlType, Record
from broker.records.committed import AbortedTransaction, ReadFilter
from broker.records.errors import CorruptRecordError

from .test_legacy import kp_build
from .transactional_logs import TransactionalLog, fetch_splits, transactional_logs

PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def read(log: TransactionalLog, splits: list[tuple[int, int]], read_committed: bool, listed_once: bool) -> list[int]:
    """The offsets a reader hands on, fetching the log's batches in the ``splits`` given; the broker
    lists each fetch's aborted transactions (or, ``listed_once``, all of them with the first fetch)."""
    read_filter = ReadFilter(read_committed)
    offsets = []
    for number, (first, end) in enumerate(splits):
        fetched = log.batches[first:end]
        if listed_once:
            aborted = log.aborted_between(0, 2**63 - 1) if number == 0 else []
        else:
            aborted = log.aborted_between(fetched[0][1], fetched[-1][2] + 1)
        read_filter.add_aborted(reversed(aborted))  # any order: the filter sorts them
        data = b"".join(b for b, _, _ in fetched)
        view = memoryview(data)
        for pos, header in record_set.iter_entries(view):
            entry = view[pos : pos + header.size]
            if read_filter.keeps(entry, header):
                offsets += [r.offset for r in record_set.decode_entry(entry).records]
    return offsets


@PROPERTIES
@given(transactional_logs(), st.lists(st.integers(0, 100), max_size=6), st.booleans())
def test_read_committed_hands_on_exactly_the_committed_records(log, points, listed_once):
    splits = fetch_splits(points, len(log.batches))
    assert read(log, splits, read_committed=True, listed_once=listed_once) == log.committed


@PROPERTIES
@given(transactional_logs(), st.lists(st.integers(0, 100), max_size=6))
def test_read_uncommitted_hands_on_every_data_record_and_no_marker(log, points):
    splits = fetch_splits(points, len(log.batches))
    assert read(log, splits, read_committed=False, listed_once=False) == log.all_data


def _marker(offset: int, key: bytes | None, producer_id: int = 5) -> bytes:
    return batch.build(
        [Record(offset, 0, key, b"\x00\x00\x00\x00\x00\x00")],
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )


def _data(offset: int, producer_id: int = 5, transactional: bool = True) -> bytes:
    return batch.build(
        [Record(offset, 0, None, b"x")],
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=transactional,
    )


def _keeps(read_filter: ReadFilter, entry: bytes) -> bool:
    return read_filter.keeps(entry, record_set.parse_entry_header(entry))


def test_a_control_record_key_cut_short_is_corrupt():
    read_filter = ReadFilter(read_committed=True)
    with pytest.raises(CorruptRecordError, match="control record at offset 3 has a key of 2 bytes"):
        _keeps(read_filter, _marker(3, b"\x00\x00"))
    with pytest.raises(CorruptRecordError, match="key of 0 bytes"):
        _keeps(read_filter, _marker(3, None))


def test_an_unknown_control_type_is_skipped_and_ends_no_abort():
    read_filter = ReadFilter(read_committed=True)
    read_filter.add_aborted([AbortedTransaction(5, 0)])
    assert not _keeps(read_filter, _data(0))
    assert not _keeps(read_filter, _marker(1, b"\x00\x00\x00\x05"))  # a KRaft type: not an ABORT
    assert not _keeps(read_filter, _data(2))  # still aborting
    abort_key, _ = batch.control_record(ControlType.ABORT)
    assert not _keeps(read_filter, _marker(3, abort_key))
    assert _keeps(read_filter, _data(4))


def test_a_marker_of_a_higher_key_version_is_read_by_its_type():
    read_filter = ReadFilter(read_committed=True)
    read_filter.add_aborted([AbortedTransaction(5, 0)])
    assert not _keeps(read_filter, _data(0))
    assert not _keeps(read_filter, _marker(1, b"\x00\x01\x00\x00" + b"more"))  # version 1 ABORT
    assert _keeps(read_filter, _data(2))


def test_an_empty_control_batch_is_skipped():
    empty = batch.build([], base_offset=4, producer_id=5, producer_epoch=0, is_transactional=True, is_control=True)
    assert not _keeps(ReadFilter(read_committed=True), empty)
    assert not _keeps(ReadFilter(read_committed=False), empty)


def test_non_transactional_batches_of_an_aborting_producer_are_kept():
    read_filter = ReadFilter(read_committed=True)
    read_filter.add_aborted([AbortedTransaction(5, 0)])
    assert not _keeps(read_filter, _data(0))
    assert _keeps(read_filter, _data(1, transactional=False))


def test_legacy_entries_are_kept_and_the_list_is_ignored_under_read_uncommitted():
    message = kp_build(1, 0, [(0, 0, None, b"old")])
    read_filter = ReadFilter(read_committed=False)
    read_filter.add_aborted([AbortedTransaction(5, 0)])
    assert _keeps(read_filter, message)
    assert _keeps(read_filter, _data(1))
