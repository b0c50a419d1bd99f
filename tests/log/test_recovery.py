"""Opening a log after clean and unclean stops, after Kafka's LogLoaderTest."""

import os
import random

import pytest

from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from broker.records import batch

from .util import BASE_TIME, files_in, flip_byte, make_batch, read_all, strip_offsets


def reopen(directory, config, **kwargs) -> PartitionLog:
    return PartitionLog.open(str(directory), config, **kwargs)


def fill(log, batches: int, rng=None, start_time: int = BASE_TIME) -> list:
    """Append ``batches`` batches of 1-5 records; return the records as appended."""
    rng = rng or random.Random(0)
    appended = []
    for i in range(batches):
        data = make_batch(rng.randint(1, 5), timestamp=start_time + 10 * i, value_size=rng.randint(1, 300))
        log.append(data)
        appended += batch.decode(data).records
    return appended


def test_garbage_appended_to_the_active_log_and_index_is_dropped_on_unclean_open(tmp_path):
    """Kafka's testCorruptLog, ten rounds."""
    rng = random.Random(42)
    config = LogConfig(index_interval_bytes=1, segment_bytes=10**6)
    for round_ in range(10):
        directory = tmp_path / f"corrupt-{round_}"
        log = reopen(directory, config)
        appended = fill(log, rng.randint(50, 100), rng)
        count = log.log_end_offset
        log.close()
        stem = os.path.join(directory, f"{log.active_segment.base_offset:020d}")
        for suffix in (".log", ".index"):
            with open(stem + suffix, "ab") as f:
                f.write(os.urandom(rng.randint(1, 1000)))
        log = reopen(directory, config, recovery_point=0, had_clean_shutdown=False)
        assert log.log_end_offset == count
        assert strip_offsets(read_all(log)) == strip_offsets(appended)
        assert [r.offset for r in read_all(log)] == list(range(count))
        log.close()


def test_a_torn_last_batch_is_truncated(tmp_path):
    log = reopen(tmp_path / "t-0", LogConfig())
    appended = fill(log, 20)
    log.close()
    half = make_batch(4, value_size=500)[:300]
    with open(log.active_segment.log_path, "ab") as f:
        f.write(half)
    log = reopen(tmp_path / "t-0", LogConfig(), recovery_point=0)
    assert strip_offsets(read_all(log)) == strip_offsets(appended)
    assert log.append(make_batch(1)).first_offset == len(appended)


@pytest.mark.parametrize("damage", ["delete", "two spaces"])
def test_indexes_are_rebuilt_when_missing_or_corrupt(tmp_path, damage):
    """Kafka's testIndexRebuild and testCorruptIndexRebuild (after a clean shutdown)."""
    config = LogConfig(index_interval_bytes=1, segment_bytes=3000)
    log = reopen(tmp_path / "t-0", config)
    appended = fill(log, 60)
    log.flush()
    entries = [(len(s.offset_index), len(s.time_index)) for s in log.segments]
    lookups = {ts: log.offset_for_timestamp(ts) for ts in range(BASE_TIME - 5, BASE_TIME + 610, 7)}
    log.close()
    for name in files_in(log.directory):
        if name.endswith((".index", ".timeindex")):
            path = os.path.join(log.directory, name)
            if damage == "delete":
                os.unlink(path)
            else:
                with open(path, "wb") as f:
                    f.write(b"  ")
    log = reopen(tmp_path / "t-0", config, had_clean_shutdown=True)
    assert [(len(s.offset_index), len(s.time_index)) for s in log.segments][:-1] == entries[:-1]
    assert strip_offsets(read_all(log)) == strip_offsets(appended)
    assert {ts: log.offset_for_timestamp(ts) for ts in lookups} == lookups
    for offset in range(log.log_end_offset):
        assert read_all(log, offset)[0].offset == offset


def test_leftover_files_are_removed_on_open(tmp_path):
    """Kafka's testBogusIndexSegmentsAreRemoved and testOpenDeletesObsoleteFiles."""
    log = reopen(tmp_path / "t-0", LogConfig())
    fill(log, 5)
    log.close()
    for name in [
        "00000000000000000999.index",
        "00000000000000000999.timeindex",
        "00000000000000000000.log.deleted",
        "recovery.tmp",
        "00000000000000000005.log.cleaned",
    ]:
        (tmp_path / "t-0" / name).write_bytes(b"junk")
    log = reopen(tmp_path / "t-0", LogConfig(), had_clean_shutdown=True)
    assert files_in(log.directory) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "leader-epoch-checkpoint",
    ]


def test_recovery_point_after_unclean_and_clean_opens(tmp_path):
    """Kafka's testLogRecoversToCorrectOffset: min(checkpoint, end) and not advanced until a flush."""
    config = LogConfig(index_interval_bytes=1, segment_bytes=2000)
    log = reopen(tmp_path / "t-0", config)
    fill(log, 40)
    end = log.log_end_offset
    entries = sum(len(s.offset_index) for s in log.segments)
    log.close()
    log = reopen(tmp_path / "t-0", config, recovery_point=30)
    assert log.recovery_point == 30
    assert sum(len(s.offset_index) for s in log.segments) == entries
    log.close()
    log = reopen(tmp_path / "t-0", config, recovery_point=end + 100)
    assert log.recovery_point == end
    log.close()
    log = reopen(tmp_path / "t-0", config, recovery_point=0, had_clean_shutdown=True)
    assert log.recovery_point == end


def test_unclean_open_recovers_only_from_the_segment_holding_the_recovery_point(tmp_path):
    """Kafka's testRecoverOnlyLastSegment: segments below the recovery point are not rescanned."""
    config = LogConfig(index_interval_bytes=1, segment_bytes=2000)
    log = reopen(tmp_path / "t-0", config)
    fill(log, 60)
    last_base = log.active_segment.base_offset
    log.flush()
    log.close()
    index_mtimes = {n: os.stat(os.path.join(log.directory, n)).st_mtime_ns for n in files_in(log.directory, ".index")}
    os.utime(log.directory)
    log = reopen(tmp_path / "t-0", config, recovery_point=last_base)
    after = {n: os.stat(os.path.join(log.directory, n)).st_mtime_ns for n in files_in(log.directory, ".index")}
    rebuilt = [n for n in index_mtimes if after[n] != index_mtimes[n]]
    assert rebuilt == [f"{last_base:020d}.index"]


def test_corruption_in_a_middle_segment_drops_the_later_segments(tmp_path):
    config = LogConfig(segment_bytes=2000)
    log = reopen(tmp_path / "t-0", config)
    for _ in range(60):
        log.append(make_batch(3, value_size=50))
    appended = read_all(log)
    segments = list(log.segments)
    middle = segments[1]
    assert len(segments) >= 3 and middle.next_offset - middle.base_offset > 3
    log.close()
    with open(middle.log_path, "r+b") as f:  # flip a byte inside the last batch of the middle segment
        f.seek(middle.size - 3)
        byte = f.read(1)
        f.seek(middle.size - 3)
        f.write(bytes([byte[0] ^ 0xFF]))
    log = reopen(tmp_path / "t-0", config, recovery_point=0)
    assert [s.base_offset for s in log.segments] == [segments[0].base_offset, middle.base_offset]
    assert log.log_end_offset == middle.next_offset - 3
    assert read_all(log) == appended[: log.log_end_offset]
    assert files_in(log.directory, ".log") == [f"{segments[0].base_offset:020d}.log", f"{middle.base_offset:020d}.log"]


def test_an_empty_active_segment_survives_an_unclean_open(tmp_path):
    """Kafka's testRecoverWithEmptyActiveSegment."""
    log = reopen(tmp_path / "t-0", LogConfig())
    fill(log, 5)
    end = log.log_end_offset
    log.roll()
    log.close()
    log = reopen(tmp_path / "t-0", LogConfig(), recovery_point=0)
    assert (log.log_end_offset, log.active_segment.base_offset, log.active_segment.size) == (end, end, 0)
    assert log.append(make_batch(1)).first_offset == end


def test_log_that_ends_below_its_start_offset_starts_empty_there(tmp_path):
    """Kafka's testLogEndLessThanStartAfterReopen: files removed by hand."""
    log = reopen(tmp_path / "t-0", LogConfig())
    fill(log, 5)
    log.close()
    log = reopen(tmp_path / "t-0", LogConfig(), log_start_offset=1000, had_clean_shutdown=True)
    assert (log.log_start_offset, log.log_end_offset) == (1000, 1000)
    assert files_in(log.directory, ".log") == ["00000000000000001000.log"]
    assert log.append(make_batch(2)).first_offset == 1000


def test_log_start_offset_checkpoint_inside_the_log_is_kept(tmp_path):
    log = reopen(tmp_path / "t-0", LogConfig())
    fill(log, 5)
    log.close()
    log = reopen(tmp_path / "t-0", LogConfig(), log_start_offset=3, had_clean_shutdown=True)
    assert log.log_start_offset == 3
    assert read_all(log)[0].offset == 3


def test_truncation_reloads_the_largest_timestamp_next_offset_and_time_index(tmp_path):
    """Kafka's testReloadLargestTimestampAndNextOffsetAfterTruncation, through recovery: the batches
    cut off held the largest timestamps, and afterwards nothing in the log points at them."""
    config = LogConfig(index_interval_bytes=1, segment_bytes=10**6)
    # batch i has records at stamps[i] and stamps[i] + 1; the largest kept one is batch 12's, not the last's
    stamps = (
        [BASE_TIME + 100 * i for i in range(13)]
        + [BASE_TIME + 500, BASE_TIME + 600]
        + [BASE_TIME + 2000 + i for i in range(5)]
    )
    batches = [make_batch(2, timestamp=t) for t in stamps]
    log = reopen(tmp_path / "t-0", config)
    positions = []
    for data in batches:
        positions.append(log.active_segment.size)
        log.append(data)
    log.close()
    flip_byte(log.active_segment.log_path, positions[16] - 1)  # the last byte of batch 15
    log = reopen(tmp_path / "t-0", config, recovery_point=0)
    reference = reopen(tmp_path / "reference-0", config)  # the same first 15 batches, never damaged
    for data in batches[:15]:
        reference.append(data)

    def state(lg):
        s = lg.active_segment
        return (
            s.next_offset,
            s.max_timestamp,
            s.offset_of_max_timestamp,
            s.time_index.last_entry,
            len(s.time_index),
            len(s.offset_index),
            os.path.getsize(s.time_index.path),
        )

    assert state(log) == state(reference)
    assert state(log)[:4] == (30, BASE_TIME + 1201, 25, (BASE_TIME + 1201, 25))
    assert log.offset_for_timestamp(BASE_TIME + 550) == (12, BASE_TIME + 600)
    assert log.offset_for_timestamp(BASE_TIME + 1201) == (25, BASE_TIME + 1201)
    assert log.offset_for_timestamp(BASE_TIME + 1202) is None
    assert log.read(30, 1000) is None
    log.append(make_batch(1, timestamp=BASE_TIME + 1300))
    assert log.offset_for_timestamp(BASE_TIME + 1202) == (30, BASE_TIME + 1300)
    log.close()
    log = reopen(tmp_path / "t-0", config, had_clean_shutdown=True)
    assert (log.active_segment.max_timestamp, log.log_end_offset) == (BASE_TIME + 1300, 31)
    assert log.offset_for_timestamp(BASE_TIME + 1202) == (30, BASE_TIME + 1300)
