"""PartitionLog, after Kafka's UnifiedLogTest: append, offsets, validation, roll, read, retention, flush."""

import errno
import os
import struct

import pytest

from broker.log.config import LogConfig
from broker.log.errors import (
    InvalidBatchError,
    InvalidRecordError,
    LogDeletedError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from broker.log.index import RELATIVE_OFFSET_MAX
from broker.log.partition_log import PartitionLog
from broker.log.scheduler import Scheduler
from broker.log.segment import LogSegment
from broker.records import batch, record_set
from broker.records.batch import ControlType, Record, TimestampType
from broker.records.compression import Codec

from ..clock import FakeClock
from ..waiting import wait_for
from .util import BASE_TIME, append_to_segment, files_in, make_batch, read_all, strip_offsets


def open_log(path, **config) -> PartitionLog:
    return PartitionLog.open(str(path / "events-0"), LogConfig(**config))


@pytest.fixture
def scheduler():
    s = Scheduler()
    yield s
    s.shutdown()


def test_append_rewrites_only_base_offset_and_leader_epoch(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(5))
    sent = make_batch(4, codec=Codec.GZIP, partition_leader_epoch=-1, producer_id=7, producer_epoch=1, base_sequence=0)
    result = log.append(sent, leader_epoch=3)
    stored = log.read(result.first_offset, 10_000).read()
    assert len(stored) == len(sent)
    assert struct.unpack(">q", stored[:8])[0] == 5
    assert struct.unpack(">i", stored[12:16])[0] == 3
    assert stored[8:12] == sent[8:12] and stored[16:] == sent[16:]
    batch.validate(stored)


def test_offsets_are_assigned_consecutively_across_appends_and_batches(tmp_path):
    log = open_log(tmp_path)
    assert log.append(make_batch(3)).first_offset == 0
    result = log.append(make_batch(1))
    assert (result.first_offset, result.last_offset, result.record_count) == (3, 3, 1)
    several = make_batch(2, codec=Codec.SNAPPY) + make_batch(4, codec=Codec.ZSTD)
    result = log.append(several)
    assert (result.first_offset, result.last_offset, result.record_count) == (4, 9, 6)
    assert log.log_end_offset == 10
    assert [r.offset for r in read_all(log)] == list(range(10))


def test_append_and_read_back_every_codec(tmp_path):
    log = open_log(tmp_path)
    expected = []
    for codec in Codec:
        data = make_batch(7, timestamp=BASE_TIME + 100 * codec, codec=codec)
        log.append(data)
        expected += batch.decode(data).records
    assert strip_offsets(read_all(log)) == strip_offsets(expected)


@pytest.mark.parametrize("corrupt", ["crc", "truncated", "length"])
def test_corrupt_batches_are_refused_and_nothing_is_written(tmp_path, corrupt):
    log = open_log(tmp_path)
    log.append(make_batch(2))
    data = bytearray(make_batch(3))
    if corrupt == "crc":
        data[-1] ^= 0xFF
    elif corrupt == "truncated":
        data = data[:-5]
    else:
        struct.pack_into(">i", data, 8, 30)
    with pytest.raises(InvalidBatchError):
        log.append(bytes(data))
    assert log.log_end_offset == 2
    assert log.size_in_bytes == len(make_batch(2))


def test_a_batch_larger_than_max_message_bytes_is_refused(tmp_path):
    log = open_log(tmp_path, max_message_bytes=1000)
    small = make_batch(1, value_size=500)
    log.append(small)
    with pytest.raises(RecordTooLargeError, match="max.message.bytes"):
        log.append(make_batch(1, value_size=2000))
    assert log.log_end_offset == 1


def test_invalid_batches_are_refused(tmp_path):
    log = open_log(tmp_path)
    key, value = batch.control_record(ControlType.COMMIT)
    cases = {
        "control": batch.build([Record(0, BASE_TIME, key, value)], is_control=True),
        "empty": batch.build([]),
        "count does not match offsets": batch.build(
            [Record(0, BASE_TIME, None, b"a"), Record(5, BASE_TIME, None, b"b")]
        ),
        "idempotent without sequence": make_batch(2, producer_id=4, producer_epoch=0),
    }
    for data in cases.values():
        with pytest.raises(InvalidRecordError):
            log.append(data)
    with pytest.raises(InvalidRecordError):
        log.append(b"")
    assert log.log_end_offset == 0


def test_legacy_message_sets_must_be_up_converted_first(tmp_path):
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=BASE_TIME, key=b"k", value=b"v")
    legacy = bytes(builder.build())
    log = open_log(tmp_path)
    with pytest.raises(InvalidRecordError, match="up-converted"):
        log.append(legacy)
    log.append(record_set.upconvert(legacy))
    assert [(r.key, r.value, r.timestamp) for r in read_all(log)] == [(b"k", b"v", BASE_TIME)]


def test_log_append_time_topics_stamp_batches_on_append(tmp_path):
    clock = FakeClock()
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(message_timestamp_type="LogAppendTime"), clock=clock)
    result = log.append(make_batch(3, codec=Codec.LZ4))
    assert result.log_append_time == clock()
    stored = log.read(0, 10_000).read()
    header = batch.validate(stored)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == result.log_append_time
    assert {r.timestamp for r in batch.decode(stored).records} == {result.log_append_time}


def test_segments_roll_on_size_and_are_named_by_base_offset(tmp_path):
    log = open_log(tmp_path, segment_bytes=1000)
    for i in range(30):
        log.append(make_batch(3, timestamp=BASE_TIME + i))
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 3
    assert all(s.size <= 1000 for s in log.segments)
    assert files_in(log.directory, ".log") == [f"{b:020d}.log" for b in bases]
    assert [r.offset for r in read_all(log)] == list(range(90))


def test_segments_roll_on_time_measured_by_record_timestamps(tmp_path):
    log = open_log(tmp_path, segment_ms=1000)
    log.append(make_batch(1, timestamp=BASE_TIME))
    log.append(make_batch(1, timestamp=BASE_TIME + 1000))
    assert len(log.segments) == 1
    log.append(make_batch(1, timestamp=BASE_TIME + 1001))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_segments_roll_on_time_by_the_broker_clock_without_timestamps(tmp_path):
    clock = FakeClock()
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(segment_ms=50), clock=clock)
    log.append(make_batch(1, timestamp=-1))
    clock.advance(50)
    log.append(make_batch(1, timestamp=-1))
    assert [s.base_offset for s in log.segments] == [0]
    clock.advance(1)
    log.append(make_batch(1, timestamp=-1))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_segments_roll_when_the_index_is_full(tmp_path):
    log = open_log(tmp_path, index_interval_bytes=1, segment_index_bytes=4 * 8)
    for _ in range(12):
        log.append(make_batch(1))
    assert len(log.segments) >= 2
    assert all(len(s.offset_index) <= 4 for s in log.segments)


def test_read_out_of_range_and_at_the_end(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(5))
    assert log.read(5, 1000) is None
    with pytest.raises(OffsetOutOfRangeError) as raised:
        log.read(6, 1000)
    assert (raised.value.log_start_offset, raised.value.log_end_offset) == (0, 5)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 1000)


def test_a_log_deleted_under_a_request_says_so_instead_of_a_storage_error(tmp_path):
    """A request that looked the log up just before its topic was deleted reads closed files: it gets
    LogDeletedError (UNKNOWN_TOPIC_OR_PARTITION to the client), not EBADF as a storage error."""
    log = open_log(tmp_path, segment_bytes=600)
    for i in range(20):
        log.append(make_batch(2, timestamp=BASE_TIME + i))
    log.discard()
    for attempt in (
        lambda: log.read(3, 1000),
        lambda: log.offset_for_timestamp(BASE_TIME),
        lambda: log.append(make_batch(1)),
        lambda: log.delete_records_before(2),
    ):
        with pytest.raises(LogDeletedError, match="was deleted"):
            attempt()


def test_read_returns_whole_batches_and_at_least_one(tmp_path):
    log = open_log(tmp_path, segment_bytes=10**6)
    sizes = [len(make_batch(3, value_size=100)) for _ in range(10)]
    for _ in range(10):
        log.append(make_batch(3, value_size=100))
    assert log.read(4, 1).size == sizes[1]  # one batch even though larger than max_bytes
    assert log.read(4, sizes[1] * 3 + 10).size == sizes[1] * 3
    assert log.read(4, 10**6).size == sum(sizes[1:])


def test_read_crosses_segments(tmp_path):
    log = open_log(tmp_path, segment_bytes=600)
    for i in range(20):
        log.append(make_batch(2, timestamp=BASE_TIME + i))
    assert len(log.segments) > 2
    for offset in range(40):
        found = log.read(offset, 1)
        first = next(record_set.iter_batches(found.read()))
        assert first.base_offset <= offset <= first.last_offset


def test_offset_for_timestamp_across_segments(tmp_path):
    log = open_log(tmp_path, segment_bytes=600)
    for i in range(20):
        log.append(make_batch(2, timestamp=BASE_TIME + 10 * i))
    assert log.offset_for_timestamp(0) == (0, BASE_TIME)
    assert log.offset_for_timestamp(BASE_TIME + 55) == (12, BASE_TIME + 60)
    assert log.offset_for_timestamp(BASE_TIME + 191) == (39, BASE_TIME + 191)
    assert log.offset_for_timestamp(BASE_TIME + 192) is None


def test_retention_by_time_deletes_old_segments_and_moves_the_log_start(tmp_path):
    clock = FakeClock()
    log = PartitionLog.open(
        str(tmp_path / "events-0"), LogConfig(segment_bytes=600, retention_ms=3600_000), clock=clock
    )
    for _ in range(10):
        log.append(make_batch(2, timestamp=clock()))
    old_segments = len(log.segments)
    clock.advance(7200_000)
    now = clock()
    for _ in range(10):
        log.append(make_batch(2, timestamp=now))
    deleted = log.delete_retained_segments()
    assert deleted >= old_segments - 1
    assert log.log_start_offset == log.segments[0].base_offset > 0
    assert log.log_start_offset <= 20  # nothing newer than the retention was deleted
    assert all(s.largest_timestamp >= now - 3600_000 for s in log.segments)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 1000)
    assert [r.offset for r in read_all(log)] == list(range(log.log_start_offset, 40))
    assert not any(n.endswith(".deleted") for n in os.listdir(log.directory))


def test_retention_by_size_keeps_the_newest_segments_within_the_limit(tmp_path):
    log = open_log(tmp_path, segment_bytes=600, retention_bytes=1500)
    for i in range(30):
        log.append(make_batch(2, timestamp=BASE_TIME + i))
    total = log.size_in_bytes
    log.delete_retained_segments()
    assert log.size_in_bytes <= 1500 + log.segments[0].size
    assert log.size_in_bytes - log.segments[0].size < 1500 <= total
    assert log.log_end_offset == 60


def test_retention_of_every_segment_rolls_and_keeps_the_log_end(tmp_path):
    clock = FakeClock(BASE_TIME)
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(retention_ms=1000), clock=clock)
    log.append(make_batch(4, timestamp=BASE_TIME))
    clock.advance(1000 + 3)  # the batch's records are stamped BASE_TIME to BASE_TIME + 3: retention.ms from the last
    assert log.delete_retained_segments() == 0
    clock.advance(1)
    assert log.delete_retained_segments() == 1
    assert (log.log_start_offset, log.log_end_offset) == (4, 4)
    assert log.read(4, 100) is None
    assert log.append(make_batch(1, timestamp=clock())).first_offset == 4


def test_reads_of_a_deleted_segment_still_work_until_the_delete_delay(tmp_path, scheduler):
    log = PartitionLog.open(
        str(tmp_path / "events-0"),
        LogConfig(segment_bytes=600, retention_bytes=1, file_delete_delay_ms=60_000),
        scheduler=scheduler,
    )
    for i in range(10):
        log.append(make_batch(2, timestamp=BASE_TIME + i))
    held = log.read(0, 100)
    expected = make_batch(2)
    log.delete_retained_segments()
    assert log.log_start_offset > 0
    assert any(n.endswith(".log.deleted") for n in os.listdir(log.directory))
    assert batch.decode(held.read()).records == batch.decode(expected).records


def test_a_held_slice_outlives_an_immediate_delete(tmp_path):
    log = open_log(tmp_path, segment_bytes=600, retention_bytes=1, file_delete_delay_ms=0)
    for i in range(10):
        log.append(make_batch(2, timestamp=BASE_TIME + i))
    held = log.read(0, 100)
    log.delete_retained_segments()  # no scheduler: the files are unlinked at once
    assert not os.path.exists(os.path.join(log.directory, "00000000000000000000.log.deleted"))
    for _ in range(50):  # new files must not take over the held descriptor
        open(os.path.join(tmp_path, "other"), "wb").close()
    assert batch.decode(held.read()).records == batch.decode(make_batch(2)).records
    log.close()


def test_recovery_point_advances_only_on_flush(tmp_path):
    log = open_log(tmp_path)
    for _ in range(5):
        log.append(make_batch(2))
    assert log.recovery_point == 0
    log.flush()
    assert log.recovery_point == 10
    log.append(make_batch(2))
    assert log.recovery_point == 10 and log.unflushed_messages == 2


@pytest.mark.parametrize("flush_messages", [1, 4, 7])
def test_flush_messages_bounds_the_unflushed_messages(tmp_path, flush_messages):
    log = open_log(tmp_path, flush_messages=flush_messages)
    for _ in range(20):
        log.append(make_batch(3))
        assert log.unflushed_messages < flush_messages
    assert log.recovery_point > 0


def test_flush_ms_flushes_in_the_background(tmp_path, scheduler):
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(flush_ms=50), scheduler=scheduler)
    log.append(make_batch(3))
    assert log.recovery_point == 0
    assert wait_for(lambda: log.recovery_point == 3)
    log.append(make_batch(3))
    assert wait_for(lambda: log.recovery_point == 6)


def before_the_first_fsync(monkeypatch, action) -> list:
    """Run ``action()`` inside the first segment fsync, then fsync for real (unless it raised).
    The returned list gets one entry once it has run."""
    real_flush, ran = LogSegment.flush, []

    def flush(segment):
        if not ran:
            ran.append(True)
            action()
        real_flush(segment)

    monkeypatch.setattr(LogSegment, "flush", flush)
    return ran


def test_flush_ms_still_holds_for_appends_that_arrive_during_the_fsync(tmp_path, scheduler, monkeypatch):
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(flush_ms=50), scheduler=scheduler)
    ran = before_the_first_fsync(monkeypatch, lambda: log.append(make_batch(3)))
    log.append(make_batch(3))
    assert wait_for(lambda: ran and log.recovery_point >= 3, timeout=10)
    assert wait_for(lambda: log.recovery_point == 6, timeout=10, what="the append made during the fsync flushed")


def test_a_failed_flush_ms_flush_is_retried(tmp_path, scheduler, monkeypatch):
    """A disk error cannot be produced for real here, so the first fsync is made to fail."""
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(flush_ms=50), scheduler=scheduler)

    def fail():
        raise OSError(errno.EIO, "Input/output error")

    ran = before_the_first_fsync(monkeypatch, fail)
    log.append(make_batch(3))
    assert wait_for(lambda: ran, timeout=10)
    assert wait_for(lambda: log.recovery_point == 3, timeout=10, what="the flush retried after the failure")


def test_rolled_segments_are_flushed_in_the_background(tmp_path, scheduler):
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(segment_bytes=600), scheduler=scheduler)
    for _ in range(10):
        log.append(make_batch(2))
    assert len(log.segments) > 1
    assert wait_for(lambda: log.recovery_point == log.active_segment.base_offset)


def test_a_batch_with_an_unknown_codec_is_refused(tmp_path):
    data = bytearray(make_batch(2))
    struct.pack_into(">h", data, 21, 6)  # codec id 6 does not exist
    struct.pack_into(">I", data, 17, batch.compute_crc(data))
    log = open_log(tmp_path)
    with pytest.raises(InvalidBatchError, match="unknown compression codec id 6"):
        log.append(bytes(data))
    assert log.log_end_offset == 0


def test_a_roll_onto_leftover_files_with_the_new_base_offset_empties_them(tmp_path):
    """Kafka's testRollSegmentThatAlreadyExists: files named after the new segment, left behind by
    hand or by an interrupted operation, are not part of the log (Kafka deletes them first); the
    roll succeeds, their bytes never show up as records, and nothing of the log is lost."""
    log = open_log(tmp_path, index_interval_bytes=1)
    for i in range(5):
        log.append(make_batch(3, timestamp=BASE_TIME + i))
    end = log.log_end_offset
    stem = os.path.join(log.directory, f"{end:020d}")
    leftovers = {".log": make_batch(7, start=end), ".index": b"garbage-" * 3, ".timeindex": b"x" * 12}
    for suffix, data in leftovers.items():
        with open(stem + suffix, "wb") as f:
            f.write(data)
    extra = make_batch(2, timestamp=BASE_TIME + 9)
    expected = read_all(log) + batch.decode(extra).records
    log.roll()
    log.append(extra)
    assert [s.base_offset for s in log.segments] == [0, end]
    assert (log.log_end_offset, os.path.getsize(stem + ".log")) == (end + 2, len(extra))
    assert strip_offsets(read_all(log)) == strip_offsets(expected)
    log.close()
    log = PartitionLog.open(log.directory, log.config, recovery_point=0)  # unclean: every segment checked
    assert [r.offset for r in read_all(log)] == list(range(end + 2))
    assert strip_offsets(read_all(log)) == strip_offsets(expected)


@pytest.mark.parametrize("clean", [True, False])
def test_a_read_in_a_gap_between_segments_returns_the_next_batch(tmp_path, clean):
    """Kafka's testReadAtLogGap at the log level: a middle segment's files were deleted while the
    log was closed, so a whole range of offsets is missing."""
    log = open_log(tmp_path, segment_bytes=600)
    for i in range(20):
        log.append(make_batch(2, timestamp=BASE_TIME + 10 * i))  # offset o has timestamp BASE_TIME + 5 * o
    gone, after = log.segments[1:3]
    log.close()
    for path in (gone.log_path, gone.offset_index.path, gone.time_index.path):
        os.unlink(path)
    log = PartitionLog.open(log.directory, log.config, had_clean_shutdown=clean)
    missing = range(gone.base_offset, gone.next_offset)
    assert gone.base_offset not in [s.base_offset for s in log.segments] and len(missing) > 2
    for offset in missing:
        first = next(record_set.iter_batches(log.read(offset, 1).read()))
        assert first.base_offset == after.base_offset
    assert [r.offset for r in read_all(log)] == [o for o in range(40) if o not in missing]
    assert log.offset_for_timestamp(BASE_TIME + 5 * gone.base_offset) == (
        after.base_offset,
        BASE_TIME + 5 * after.base_offset,
    )


def test_an_append_past_the_relative_offset_limit_rolls_a_new_segment(tmp_path):
    """Kafka's testAppendForLogSegmentOffsetOverflowException, end to end.

    The indexes store offsets relative to the segment's base as int32, so a segment holds offsets up
    to base + 2**31 - 1. Appends assign consecutive offsets and validation requires lastOffsetDelta + 1
    == the record count, so reaching the limit by appending alone takes 2**31 records in one segment
    (gigabytes). Kafka reaches it cheaply only through offset gaps, which compaction leaves (but
    only after a long log), so the first segment is written as a compacted one looks (as in a
    partition directory copied from Kafka): base offset 0 and one batch just below the limit. The appends after it go
    through the real append path.
    """
    directory = tmp_path / "events-0"
    directory.mkdir()
    segment = LogSegment.create(str(directory), 0, index_interval_bytes=1, max_index_bytes=1000)
    append_to_segment(segment, RELATIVE_OFFSET_MAX - 9, count=3)
    segment.close()
    log = PartitionLog.open(str(directory), LogConfig(index_interval_bytes=1), recovery_point=0)
    assert log.log_end_offset == RELATIVE_OFFSET_MAX - 6
    assert log.append(make_batch(7)).last_offset == RELATIVE_OFFSET_MAX  # the last offset that fits
    assert [s.base_offset for s in log.segments] == [0]
    assert log.append(make_batch(2)).first_offset == RELATIVE_OFFSET_MAX + 1
    assert [s.base_offset for s in log.segments] == [0, RELATIVE_OFFSET_MAX + 1]
    expected = list(range(RELATIVE_OFFSET_MAX - 9, RELATIVE_OFFSET_MAX + 3))
    assert [r.offset for r in read_all(log)] == expected
    assert [r.offset for r in read_all(log, RELATIVE_OFFSET_MAX)] == expected[-3:]
    log.close()
    log = PartitionLog.open(str(directory), LogConfig(index_interval_bytes=1), recovery_point=0)
    assert [s.base_offset for s in log.segments] == [0, RELATIVE_OFFSET_MAX + 1]
    assert [r.offset for r in read_all(log)] == expected


def test_an_append_of_more_batches_than_one_write_takes_is_stored_whole(tmp_path):
    log = PartitionLog.open(str(tmp_path / "t-0"))
    records = b"".join(make_batch(1, i) for i in range(2000))  # 4 buffers a batch: several pwritev calls
    result = log.append(records)
    assert (result.first_offset, result.last_offset) == (0, 1999)
    assert [r.offset for r in read_all(log)] == list(range(2000))
    log.close()


def test_readers_on_other_threads_see_whole_appends_only(tmp_path):
    """One writer appending (and rolling) while readers read at random: every read returns whole
    batches of records below the log end offset the reader saw after the read."""
    import random
    import threading

    log = PartitionLog.open(str(tmp_path / "t-0"), LogConfig(index_interval_bytes=1, segment_bytes=20_000))
    done = threading.Event()
    problems = []

    def read_at_random(seed: int) -> None:
        rng = random.Random(seed)
        while not done.is_set():
            end = log.log_end_offset
            if end == 0:
                continue
            offset = rng.randrange(end)
            try:
                found = log.read(offset, 4096)  # the end may move on meanwhile, the read may not
                records = [r.offset for b in record_set.iter_batches(found.read()) for r in b.records]
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                problems.append(repr(exc))
                return
            if (
                not records
                or records[0] > offset
                or records != list(range(records[0], records[-1] + 1))
                or records[-1] >= log.log_end_offset
            ):
                problems.append((offset, records[:3], records[-3:]))

    readers = [threading.Thread(target=read_at_random, args=(seed,)) for seed in range(3)]
    for reader in readers:
        reader.start()
    try:
        for start in range(0, 3000, 3):
            log.append(make_batch(3, start))
    finally:
        done.set()
        for reader in readers:
            reader.join(30)
    assert not problems, problems[:5]
    assert len(log.segments) > 5
    log.close()
