"""A running PartitionLog takes new settings (a dynamic config change, ``update_config``) from its
next append, roll, flush or retention check on; and ``delete_records_before`` moves the log start
offset (DeleteRecords) inside a batch or a segment, deleting only whole segments below it."""

import pytest

from broker.log.config import LogConfig
from broker.log.errors import OffsetOutOfRangeError
from broker.log.partition_log import PartitionLog
from broker.log.scheduler import Scheduler

from ..waiting import wait_for
from .util import make_batch


@pytest.fixture
def scheduler():
    s = Scheduler()
    yield s
    s.shutdown()


def test_a_new_flush_policy_applies_to_the_next_appends(tmp_path, scheduler):
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(), scheduler=scheduler)
    log.append(make_batch(3))
    assert log.recovery_point == 0
    log.update_config(LogConfig(flush_messages=1))
    log.append(make_batch(2))
    assert log.recovery_point == 5
    log.update_config(LogConfig())
    log.append(make_batch(2))
    assert log.recovery_point == 5
    log.update_config(LogConfig(flush_ms=50))  # the unflushed records get a background flush at once
    assert wait_for(lambda: log.recovery_point == 7, 10, what="the flush.ms flush")


def test_a_smaller_segment_size_rolls_the_next_append(tmp_path):
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig())
    log.append(make_batch(5))
    log.update_config(LogConfig(segment_bytes=100))
    log.append(make_batch(5))
    log.append(make_batch(5))
    assert len(log.segments) == 3


def test_delete_records_moves_the_start_inside_a_segment_and_deletes_whole_segments_below(tmp_path):
    log = PartitionLog.open(str(tmp_path / "events-0"), LogConfig(segment_bytes=100))
    for _ in range(4):
        log.append(make_batch(5))  # one segment each: 0-4, 5-9, 10-14, 15-19
    assert [s.base_offset for s in log.segments] == [0, 5, 10, 15]
    assert log.delete_records_before(12) == 12
    assert [s.base_offset for s in log.segments] == [10, 15]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 1 << 20)
    assert log.read(12, 1 << 20) is not None  # the batch holding 12 starts at 10
    assert log.delete_records_before(3) == 12  # never backwards
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(21)
    assert log.delete_records_before(20) == 20  # everything: a new, empty active segment
    assert [s.base_offset for s in log.segments] == [20] and log.log_end_offset == 20
    log.append(make_batch(2))
    assert log.log_end_offset == 22 and log.log_start_offset == 20
