"""LogSegment, after Kafka's LogSegmentTest: reads, timestamp lookups, recovery, roll rules."""

import os
import random

import pytest

from broker.log.errors import CorruptIndexError
from broker.log.segment import LogSegment
from broker.records import record_set

from .util import BASE_TIME, append_to_segment


@pytest.fixture
def segment(tmp_path):
    seg = LogSegment.create(str(tmp_path), 40, index_interval_bytes=1, max_index_bytes=1000)
    yield seg
    seg.close()


def offsets_in(found) -> list:
    return [r.offset for d in record_set.iter_batches(found.read()) for r in d.records]


def test_read_on_an_empty_segment_finds_nothing(segment):
    assert segment.read(40, 300) is None


def test_read_before_the_first_offset_returns_the_first_batch(segment):
    append_to_segment(segment, 50)
    assert offsets_in(segment.read(41, 300)) == [50, 51, 52]


def test_read_after_the_last_offset_finds_nothing(segment):
    append_to_segment(segment, 40)
    assert segment.read(43, 300) is None


def test_read_in_a_gap_returns_the_next_batch(segment):
    append_to_segment(segment, 40)
    append_to_segment(segment, 60)
    assert offsets_in(segment.read(45, 10_000)) == [60, 61, 62]


def test_read_mid_batch_starts_at_the_batch_containing_the_offset(segment):
    append_to_segment(segment, 40)
    append_to_segment(segment, 43)
    found = segment.read(44, 10_000)
    assert found.position > 0
    assert offsets_in(found) == [43, 44, 45]


def test_read_returns_whole_batches_within_max_bytes_but_at_least_one(segment):
    sizes = [len(append_to_segment(segment, 40 + 3 * i)) for i in range(10)]
    assert offsets_in(segment.read(40, 1)) == [40, 41, 42]  # larger than max_bytes, still one batch
    found = segment.read(40, sizes[0] + sizes[1] + sizes[2] - 1)
    assert found.size == sizes[0] + sizes[1]
    assert segment.read(40, 1, min_one_batch=False) is None


def test_read_never_goes_past_max_position(segment):
    first = append_to_segment(segment, 40)
    append_to_segment(segment, 43)
    assert offsets_in(segment.read(40, 10_000, max_position=len(first))) == [40, 41, 42]
    assert segment.read(43, 10_000, max_position=len(first)) is None


def test_find_offset_by_timestamp_returns_the_first_record_at_or_after_it(segment):
    # batches of 3 records: timestamps BASE+100*i, +1, +2
    for i in range(20):
        append_to_segment(segment, 40 + 3 * i, timestamp=BASE_TIME + 100 * i)
    assert segment.find_offset_by_timestamp(BASE_TIME, 40) == (40, BASE_TIME)
    assert segment.find_offset_by_timestamp(BASE_TIME + 1, 40) == (41, BASE_TIME + 1)
    assert segment.find_offset_by_timestamp(BASE_TIME + 3, 40) == (43, BASE_TIME + 100)
    assert segment.find_offset_by_timestamp(BASE_TIME + 1902, 40) == (99, BASE_TIME + 1902)
    assert segment.find_offset_by_timestamp(BASE_TIME + 1903, 40) is None
    assert segment.find_offset_by_timestamp(BASE_TIME, 50) == (50, BASE_TIME + 301)


def test_recovery_keeps_exactly_the_batches_before_a_corrupt_one(tmp_path):
    rng = random.Random(3)
    for attempt in range(10):
        directory = tmp_path / str(attempt)
        directory.mkdir()
        segment = LogSegment.create(str(directory), 0, index_interval_bytes=1, max_index_bytes=100_000)
        positions = []
        for i in range(100):
            positions.append(segment.size)
            append_to_segment(segment, 3 * i)
        file_size = segment.size
        k = rng.randrange(100)
        batch_end = positions[k + 1] if k < 99 else file_size
        garbage_from = rng.randrange(positions[k], batch_end)
        with open(segment.log_path, "r+b") as f:
            f.seek(garbage_from)
            f.write(os.urandom(file_size - garbage_from))
        assert segment.recover() == file_size - positions[k]
        assert os.path.getsize(segment.log_path) == positions[k]
        assert segment.next_offset == 3 * k
        if k:
            assert offsets_in(segment.read(0, 10**9)) == list(range(3 * k))
        segment.close()


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_recovery_fixes_a_corrupt_index(segment, suffix):
    for i in range(50):
        append_to_segment(segment, 40 + 3 * i, timestamp=BASE_TIME + 10 * i)
    segment.close()
    path = segment.log_path[: -len(".log")] + suffix
    with open(path, "r+b") as f:
        f.seek(24)
        f.write(os.urandom(40) + b"  ")
    reopened = LogSegment(segment.directory, 40, index_interval_bytes=1, max_index_bytes=1000)
    with pytest.raises(CorruptIndexError):
        reopened.load()
    assert reopened.recover() == 0
    for offset in range(40, 190):
        assert offsets_in(reopened.read(offset, 1))[0] <= offset
    assert reopened.find_offset_by_timestamp(BASE_TIME + 251, 40) == (116, BASE_TIME + 251)
    reopened.close()


def test_roll_rules(segment):
    assert not segment.should_roll(100, BASE_TIME, 41, 0, segment_bytes=1000, roll_ms=10)  # empty never rolls
    size = len(append_to_segment(segment, 40, timestamp=BASE_TIME))
    assert not segment.should_roll(1000 - size, BASE_TIME, 50, 0, segment_bytes=1000, roll_ms=10**9)
    assert segment.should_roll(1000 - size + 1, BASE_TIME, 50, 0, segment_bytes=1000, roll_ms=10**9)
    assert segment.should_roll(10, BASE_TIME, 40 + 2**31, 0, segment_bytes=1000, roll_ms=10**9)
    # time: measured from the first batch's max timestamp (BASE_TIME + 2) to the incoming batch's
    assert not segment.should_roll(10, BASE_TIME + 12, 50, 0, segment_bytes=1000, roll_ms=10)
    assert segment.should_roll(10, BASE_TIME + 13, 50, 0, segment_bytes=1000, roll_ms=10)


def test_roll_when_the_index_is_full(tmp_path):
    segment = LogSegment.create(str(tmp_path), 0, index_interval_bytes=1, max_index_bytes=3 * 8)
    for i in range(4):
        assert not segment.should_roll(10, BASE_TIME, 3 * i + 2, 0, segment_bytes=10**9, roll_ms=10**9)
        append_to_segment(segment, 3 * i)
    assert segment.offset_index.is_full
    assert segment.should_roll(10, BASE_TIME, 20, 0, segment_bytes=10**9, roll_ms=10**9)
    segment.close()


def test_load_restores_the_state_of_a_closed_segment(segment):
    for i in range(30):
        append_to_segment(segment, 40 + 3 * i, timestamp=BASE_TIME + i)
    segment.on_become_inactive()
    expected = (segment.size, segment.next_offset, segment.max_timestamp, segment.offset_of_max_timestamp)
    segment.close()
    reopened = LogSegment(segment.directory, 40, index_interval_bytes=1, max_index_bytes=1000)
    reopened.load()
    assert (reopened.size, reopened.next_offset, reopened.max_timestamp, reopened.offset_of_max_timestamp) == expected
    reopened.close()
