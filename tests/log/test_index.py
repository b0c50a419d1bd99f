"""The sparse .index and .timeindex files: lookups, ordering rules, sanity checks on load."""

import os
import random

import pytest

from broker.log.errors import CorruptIndexError
from broker.log.index import OffsetIndex, TimeIndex


@pytest.fixture
def offset_index(tmp_path):
    index = OffsetIndex(str(tmp_path / "00000000000000000045.index"), 45, 30 * 8)
    yield index
    index.close()


def test_lookup_finds_the_largest_entry_at_or_below_the_offset(offset_index):
    rng = random.Random(1)
    offsets = sorted(rng.sample(range(46, 10_000), 30))
    positions = sorted(rng.sample(range(1, 1_000_000), 30))
    for offset, position in zip(offsets, positions, strict=True):
        offset_index.append(offset, position)
    for _ in range(500):
        target = rng.randrange(0, 10_050)
        below = [(o, p) for o, p in zip(offsets, positions, strict=True) if o <= target]
        assert offset_index.lookup(target) == (below[-1] if below else (45, 0))


def test_entries_are_eight_bytes_relative_to_the_base_offset(offset_index, tmp_path):
    offset_index.append(50, 100)
    offset_index.append(60, 200)
    entries = bytes.fromhex("00000005 00000064 0000000f 000000c8".replace(" ", ""))
    path = tmp_path / "00000000000000000045.index"
    assert path.read_bytes() == entries + bytes(30 * 8 - len(entries))  # preallocated, zeros after the entries
    offset_index.close()
    assert path.read_bytes() == entries  # trimmed


def test_append_out_of_order_is_refused(offset_index):
    offset_index.append(50, 100)
    with pytest.raises(ValueError):
        offset_index.append(50, 200)
    with pytest.raises(ValueError):
        offset_index.append(49, 200)


def test_index_is_full_at_its_maximum_size(offset_index):
    for i in range(30):
        assert not offset_index.is_full
        offset_index.append(46 + i, i + 1)
    assert offset_index.is_full


def test_reload_reads_back_the_same_entries(offset_index, tmp_path):
    for i in range(10):
        offset_index.append(50 + 3 * i, 100 * (i + 1))
    reopened = OffsetIndex(str(tmp_path / "00000000000000000045.index"), 45, 30 * 8)
    reopened.load()
    assert [reopened.lookup(50 + 3 * i) for i in range(10)] == [(50 + 3 * i, 100 * (i + 1)) for i in range(10)]
    reopened.close()


@pytest.mark.parametrize(
    "content",
    [
        b"  ",
        b"\x00" * 7,
        bytes.fromhex("0000000a000000640000000500000070"),
        bytes.fromhex("0000000a000000640000000b00000010"),
    ],
)
def test_corrupt_offset_index_fails_the_sanity_check(tmp_path, content):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(content)
    index = OffsetIndex(str(path), 0, 1024)
    with pytest.raises(CorruptIndexError):
        index.load()
    index.close()


def test_time_index_appends_only_growing_timestamps(tmp_path):
    index = TimeIndex(str(tmp_path / "00000000000000000010.timeindex"), 10, 1200)
    index.maybe_append(1000, 12)
    index.maybe_append(1000, 13)  # not larger: ignored
    index.maybe_append(900, 14)  # smaller: ignored
    index.maybe_append(-1, 15)  # no timestamp: ignored
    index.maybe_append(2000, 20)
    assert len(index) == 2
    assert (tmp_path / "00000000000000000010.timeindex").stat().st_size == 1200  # preallocated
    assert index.lookup(999) == 10  # below every entry: search from the segment start
    assert index.lookup(1000) == 12
    assert index.lookup(1999) == 12
    assert index.lookup(5000) == 20
    assert index.last_entry == (2000, 20)
    index.close()


def test_corrupt_time_index_fails_the_sanity_check(tmp_path):
    path = tmp_path / "00000000000000000000.timeindex"
    path.write_bytes(bytes.fromhex("00000000000007d0 0000000500000000000003e8 00000006".replace(" ", "")))
    index = TimeIndex(str(path), 0, 1200)
    with pytest.raises(CorruptIndexError):
        index.load()
    index.close()


def test_a_preallocated_index_left_by_a_crash_loads_its_entries_not_its_zeros(tmp_path):
    path = str(tmp_path / "00000000000000000045.index")
    index = OffsetIndex(path, 45, 30 * 8)
    for i in range(10):
        index.append(50 + 3 * i, 100 * (i + 1))
    index.flush()  # no close: the file keeps its preallocated zeros, as after a crash
    assert os.path.getsize(path) == 30 * 8
    reopened = OffsetIndex(path, 45, 30 * 8)
    reopened.load()
    assert len(reopened) == 10 and reopened.last_position == 1000
    assert reopened.lookup(10**6) == (77, 1000)
    reopened.append(80, 1100)  # appends go on after the last entry
    reopened.close()
    assert os.path.getsize(path) == 11 * 8


def test_lookups_across_many_blocks_agree_with_a_linear_search(tmp_path):
    offsets = OffsetIndex(str(tmp_path / "00000000000000001000.index"), 1000, 8 * 1000)
    times = TimeIndex(str(tmp_path / "00000000000000001000.timeindex"), 1000, 12 * 1000)
    entries = [(1000 + 3 * i + 2, 50 * (i + 1), 10_000 + 7 * i) for i in range(700)]  # a partial last block
    for count, (offset, position, timestamp) in enumerate(entries, 1):
        offsets.append(offset, position)
        times.maybe_append(timestamp, offset)
        if count in (1, 64, 65, 300):  # lookups while the index grows
            assert offsets.lookup(offset + 1) == (offset, position)
    rng = random.Random(3)
    for target in [rng.randrange(990, 3200) for _ in range(500)] + [1000, 1002, 3097, 3098]:
        below = [(o, p) for o, p, _ in entries if o <= target]
        assert offsets.lookup(target) == (below[-1] if below else (1000, 0))
    for position in [rng.randrange(0, 36_000) for _ in range(300)]:
        below = [p for _, p, _ in entries if p <= position]
        assert offsets.floor_position(position) == (below[-1] if below else 0)
    for timestamp in [rng.randrange(9_990, 15_000) for _ in range(300)]:
        below = [o for o, _, t in entries if t <= timestamp]
        assert times.lookup(timestamp) == (below[-1] if below else 1000)
    offsets.release()  # dropping the file, the mapping and the summary changes nothing
    assert offsets.lookup(3099) == entries[-1][:2]
    offsets.close()
    times.close()
