"""PartitionLog.append checks every record of each batch (Kafka's LogValidator): a CRC-valid batch with
a bad record is refused with its index and changes nothing on disk; a CreateTime batch whose header
maxTimestamp is wrong is stored with its records' largest timestamp (and a new CRC), every other byte
as sent; LogAppendTime topics still stamp the append time; CreateTime records too far from the
broker's clock (``message.timestamp.before/after.max.ms``) are refused naming the record."""

import os
import struct

import pytest

from broker.log.config import LogConfig
from broker.log.errors import InvalidRecordError, InvalidTimestampError
from broker.log.partition_log import PartitionLog
from broker.records import batch
from broker.records.batch import Record, TimestampType
from broker.records.compression import Codec

from ..clock import FakeClock
from ..records.test_batch import _batch_with_body
from ..records.test_record_check import INVALID, record, records
from .test_partition_log import open_log
from .util import BASE_TIME, make_batch, read_all

# bytes an append may change in a CreateTime batch: baseOffset, partitionLeaderEpoch, crc, maxTimestamp
REWRITTEN = set(range(0, 8)) | set(range(12, 16)) | set(range(17, 21)) | set(range(35, 43))


def snapshot(log) -> dict:
    """Everything an append could change: the offsets, the sizes and every file's bytes."""
    files = {}
    for name in sorted(os.listdir(log.directory)):
        with open(os.path.join(log.directory, name), "rb") as f:
            files[name] = f.read()
    return {
        "end": log.log_end_offset,
        "size": log.size_in_bytes,
        "segments": len(log.segments),
        "files": files,
        "records": read_all(log),
    }


def expected_index(name: str) -> int:
    return INVALID[name][1]


@pytest.mark.parametrize(
    "name",
    [
        "offset-delta-gap",
        "null-header-key",
        "record-length-past-the-batch",
        "timestamp-delta-overflows-int64",
        "more-records-than-count",
        "not-gzip",
        "gzip-offset-delta-gap",
    ],
)
def test_a_batch_with_a_bad_record_is_refused_with_its_index_and_nothing_changes(tmp_path, name):
    log = open_log(tmp_path)
    log.append(make_batch(3))
    before = snapshot(log)
    with pytest.raises(InvalidRecordError) as raised:
        log.append(INVALID[name][0])
    assert raised.value.record_indexes == ((expected_index(name),) if expected_index(name) >= 0 else ())
    # a good batch ahead of the bad one in the same append is not written either
    with pytest.raises(InvalidRecordError):
        log.append(make_batch(2, start=3) + INVALID[name][0])
    assert snapshot(log) == before
    assert log.append(make_batch(1)).first_offset == 3  # and the log still takes good batches


def test_the_index_names_the_bad_record_of_a_log_append_time_topic_too(tmp_path):
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    bad = _batch_with_body(records(4) + record(5), 5)
    with pytest.raises(InvalidRecordError) as raised:
        log.append(bad)
    assert raised.value.record_indexes == (4,)
    assert log.log_end_offset == 0 and log.size_in_bytes == 0


STAMPS = [BASE_TIME + 10, BASE_TIME + 500, BASE_TIME + 20]  # the largest is in the middle
TRUE_MAX = max(STAMPS)


def sent_batch(max_timestamp: int, codec: Codec = Codec.NONE) -> bytes:
    return batch.build(
        [Record(i, t, b"k%d" % i, b"v" * 30) for i, t in enumerate(STAMPS)],
        compression=codec,
        max_timestamp=max_timestamp,
    )


def changed_bytes(stored: bytes, sent: bytes) -> set:
    assert len(stored) == len(sent)
    return {i for i, (a, b) in enumerate(zip(stored, sent, strict=True)) if a != b}


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP], ids=lambda c: c.name.lower())
@pytest.mark.parametrize("wrong", [BASE_TIME + 11, -1, BASE_TIME + 10**9], ids=["low", "minus-one", "high"])
def test_a_wrong_create_time_max_timestamp_is_stored_corrected(tmp_path, codec, wrong):
    log = open_log(tmp_path)
    log.append(make_batch(2, timestamp=BASE_TIME - 1000))
    sent = sent_batch(wrong, codec)
    result = log.append(sent, leader_epoch=4)
    assert (result.first_offset, result.max_timestamp) == (2, TRUE_MAX)
    stored = log.read(2, 10_000).read()
    header = batch.validate(stored)
    assert header.timestamp_type == TimestampType.CREATE_TIME
    assert (header.base_offset, header.partition_leader_epoch, header.max_timestamp) == (2, 4, TRUE_MAX)
    assert changed_bytes(stored, sent) <= REWRITTEN
    assert stored[35:43] == struct.pack(">q", TRUE_MAX)
    assert [r.timestamp for r in batch.decode(stored).records] == STAMPS
    assert log.active_segment.max_timestamp == TRUE_MAX
    assert log.offset_for_timestamp(BASE_TIME + 100) == (3, TRUE_MAX)
    assert log.offset_for_timestamp(TRUE_MAX) == (3, TRUE_MAX)
    assert log.offset_for_timestamp(TRUE_MAX + 1) is None


def test_a_right_max_timestamp_is_stored_byte_for_byte(tmp_path):
    log = open_log(tmp_path)
    sent = sent_batch(TRUE_MAX)
    log.append(sent)
    assert changed_bytes(log.read(0, 10_000).read(), sent) <= set(range(0, 8)) | set(range(12, 16))


def test_log_append_time_topics_still_stamp_the_append_time(tmp_path):
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    sent = sent_batch(BASE_TIME + 11, Codec.LZ4)
    result = log.append(sent)
    stored = log.read(0, 10_000).read()
    header = batch.validate(stored)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == result.log_append_time == result.max_timestamp
    assert result.log_append_time > TRUE_MAX
    # the attributes change too (the LogAppendTime bit, in byte 22), nothing else
    assert changed_bytes(stored, sent) <= REWRITTEN | {21, 22}
    assert stored[21:23] == struct.pack(">h", struct.unpack(">h", sent[21:23])[0] | 0x08)
    assert {r.timestamp for r in batch.decode(stored).records} == {result.log_append_time}


def clocked_log(tmp_path, clock: FakeClock, **config) -> PartitionLog:
    """A log whose broker clock is ``clock`` (what the timestamp bounds are measured from)."""
    return PartitionLog.open(str(tmp_path / "events-0"), LogConfig(**config), clock=clock)


HOUR = 3600 * 1000


def stamped_batch(timestamps: list, codec: Codec = Codec.NONE) -> bytes:
    return batch.build([Record(i, t, b"k%d" % i, b"v") for i, t in enumerate(timestamps)], compression=codec)


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4], ids=lambda c: c.name.lower())
def test_a_record_more_than_an_hour_ahead_is_refused_by_default_naming_it_and_nothing_changes(tmp_path, codec):
    clock = FakeClock(BASE_TIME + 10 * 365 * 24 * HOUR)
    log = clocked_log(tmp_path, clock)  # Kafka 4's default message.timestamp.after.max.ms: one hour
    log.append(make_batch(2))  # years behind the clock: no lower bound by default
    before = snapshot(log)
    now = clock()
    with pytest.raises(InvalidTimestampError) as raised:
        log.append(stamped_batch([now, now + 2 * HOUR, now], codec))
    assert raised.value.record_indexes == (1,)
    assert "message.timestamp.after.max.ms (3600000)" in str(raised.value)
    assert snapshot(log) == before
    assert log.append(stamped_batch([now + HOUR // 2, -1], codec)).first_offset == 2  # within bound, no stamp
    assert log.append(stamped_batch([now + HOUR], codec)).first_offset == 4  # the bound itself is within it
    with pytest.raises(InvalidTimestampError):
        log.append(stamped_batch([now + HOUR + 1], codec))


def test_the_lower_bound_names_the_first_record_behind_it_wherever_it_is(tmp_path):
    clock = FakeClock()
    log = clocked_log(tmp_path, clock, message_timestamp_before_max_ms=HOUR)
    now = clock()
    with pytest.raises(InvalidTimestampError) as raised:
        log.append(stamped_batch([now, now - 10, now - 2 * HOUR]))  # the smallest is last, not the base
    assert raised.value.record_indexes == (2,)
    assert "message.timestamp.before.max.ms (3600000) before" in str(raised.value)
    with pytest.raises(InvalidTimestampError) as raised:
        log.append(stamped_batch([now - 2 * HOUR, now, now + 2 * HOUR]))  # each bad record is named
    assert raised.value.record_indexes == (0, 2) and "(records 0, 2 out of range)" in str(raised.value)
    assert log.log_end_offset == 0


@pytest.mark.parametrize(
    "settings, accepted",
    [
        ({"message_timestamp_difference_max_ms": HOUR}, False),  # the deprecated key bounds both sides
        ({"message_timestamp_difference_max_ms": HOUR, "message_timestamp_before_max_ms": 3 * HOUR}, True),
        ({"message_timestamp_type": "LogAppendTime", "message_timestamp_before_max_ms": HOUR}, True),
    ],
    ids=["difference", "before-overrides-difference", "log-append-time"],
)
def test_the_deprecated_difference_and_log_append_time(tmp_path, settings, accepted):
    clock = FakeClock()
    log = clocked_log(tmp_path, clock, **settings)
    sent = stamped_batch([clock() - 2 * HOUR])
    if accepted:
        assert log.append(sent).first_offset == 0
    else:
        with pytest.raises(InvalidTimestampError):
            log.append(sent)
