"""Idempotent producers in the log: duplicates, sequence and epoch checks, state across restarts."""

import os
import struct

import pytest

from broker.log.config import LogConfig
from broker.log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from broker.log.partition_log import PartitionLog
from broker.records.crc import crc32c

from ..clock import FakeClock
from .util import BASE_TIME, make_batch, read_all


def idempotent(count, sequence, producer_id=7, epoch=0, start=0, timestamp=BASE_TIME):
    return make_batch(count, start, timestamp, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)


def open_log(path, clock=None, **config):
    if clock is None:
        return PartitionLog.open(str(path / "p-0"), LogConfig(**config))
    return PartitionLog.open(str(path / "p-0"), LogConfig(**config), clock=clock)


def test_a_retried_batch_gets_its_original_offsets_and_is_not_appended_again(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(2))
    first = log.append(idempotent(3, 0))
    log.append(idempotent(2, 3))
    retry = log.append(idempotent(3, 0))
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset)
    assert log.log_end_offset == 7
    assert [r.offset for r in read_all(log)] == list(range(7))


def test_only_the_last_five_batches_are_remembered(tmp_path):
    log = open_log(tmp_path)
    for i in range(7):
        log.append(idempotent(1, i))
    assert log.append(idempotent(1, 2)).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idempotent(1, 1))  # too old to be recognised: a gap as far as the log knows


def test_an_unknown_producer_may_start_anywhere_but_gaps_after_that_are_out_of_order(tmp_path):
    log = open_log(tmp_path)
    log.append(idempotent(2, 5))  # as in Kafka: no state here (perhaps deleted by retention), any sequence
    with pytest.raises(OutOfOrderSequenceError, match="expected 7"):
        log.append(idempotent(2, 8))
    log.append(idempotent(2, 7))
    assert log.append(idempotent(2, 5)).duplicate
    assert log.log_end_offset == 4


def test_epochs_fence_old_producers_and_restart_sequences(tmp_path):
    log = open_log(tmp_path)
    log.append(idempotent(2, 0, epoch=1))
    with pytest.raises(OutOfOrderSequenceError, match="starts epoch 2 at sequence 2"):
        log.append(idempotent(1, 2, epoch=2))
    log.append(idempotent(1, 0, epoch=2))
    with pytest.raises(InvalidProducerEpochError):
        log.append(idempotent(1, 2, epoch=1))
    assert log.log_end_offset == 3


def test_sequences_wrap_at_int32_max(tmp_path):
    log = open_log(tmp_path)
    log.append(idempotent(1, 0))
    state = log.producer_state.producers[7]
    state.batches[-1] = state.batches[-1]._replace(last_sequence=2**31 - 1)
    with pytest.raises(OutOfOrderSequenceError, match="sent sequence 1, expected 0"):
        log.append(idempotent(1, 1))
    wrapped = log.append(idempotent(2, 0))  # 2**31 - 1 + 1 wraps to 0
    assert not wrapped.duplicate and (wrapped.first_offset, wrapped.last_offset) == (1, 2)
    assert log.append(idempotent(1, 2)).first_offset == 3  # and goes on from there
    assert log.log_end_offset == 4


def test_state_survives_a_clean_restart_through_a_kafka_format_snapshot(tmp_path):
    log = open_log(tmp_path)
    first = log.append(idempotent(3, 0))
    log.append(idempotent(1, 0, producer_id=9))
    log.close()
    snapshot = tmp_path / "p-0" / "00000000000000000004.snapshot"
    data = snapshot.read_bytes()
    version, crc = struct.unpack_from(">hI", data)
    assert version == 1 and crc == crc32c(data[6:]) and struct.unpack_from(">i", data, 6)[0] == 2
    log = open_log(tmp_path)
    retry = log.append(idempotent(3, 0))
    assert retry.duplicate and retry.first_offset == first.first_offset
    assert log.append(idempotent(1, 1, producer_id=9)).first_offset == 4


@pytest.mark.parametrize("snapshot", ["none", "corrupt"])
def test_state_is_rebuilt_from_the_log_without_a_usable_snapshot(tmp_path, snapshot):
    log = open_log(tmp_path, segment_bytes=400)
    for i in range(10):
        log.append(idempotent(2, 2 * i))
    log.close()
    for name in os.listdir(tmp_path / "p-0"):
        if name.endswith(".snapshot"):
            path = tmp_path / "p-0" / name
            if snapshot == "none":
                path.unlink()
            else:
                path.write_bytes(path.read_bytes()[:-3] + b"xyz")
    log = open_log(tmp_path, segment_bytes=400)
    assert log.append(idempotent(2, 18)).duplicate
    assert log.append(idempotent(2, 20)).first_offset == 20


def test_a_snapshot_past_the_recovered_log_end_is_dropped(tmp_path):
    log = open_log(tmp_path)
    log.append(idempotent(2, 0))
    log.append(idempotent(2, 2))
    log.close()
    segment = tmp_path / "p-0" / "00000000000000000000.log"
    size = segment.stat().st_size
    with open(segment, "r+b") as f:
        f.truncate(size - 10)  # the second batch is torn: recovery drops it
    log = PartitionLog.open(str(tmp_path / "p-0"), LogConfig(), recovery_point=0)
    assert log.log_end_offset == 2
    assert not (tmp_path / "p-0" / "00000000000000000004.snapshot").exists()
    assert log.append(idempotent(2, 2)).first_offset == 2


def test_retention_forgets_producers_whose_batches_are_gone(tmp_path):
    clock = FakeClock()
    now = clock()
    log = open_log(tmp_path, clock, segment_bytes=150, retention_ms=3600_000)  # one batch per segment
    log.append(idempotent(2, 0, producer_id=1, timestamp=now - 7200_000))
    for i in range(5):
        log.append(idempotent(2, 2 * i, producer_id=2, timestamp=now))
    assert log.delete_retained_segments() == 1
    assert 1 not in log.producer_state.producers and 2 in log.producer_state.producers
    assert all(int(n[:20]) >= log.log_start_offset for n in os.listdir(log.directory) if n.endswith(".snapshot"))


def test_a_producer_forgotten_by_retention_continues_where_it_was(tmp_path):
    clock = FakeClock()
    now = clock()
    log = open_log(tmp_path, clock, segment_bytes=150, retention_ms=3600_000)
    log.append(idempotent(2, 0, timestamp=now - 7200_000))
    log.append(make_batch(1, timestamp=now))
    assert log.delete_retained_segments() == 1 and 7 not in log.producer_state.producers
    continued = log.append(idempotent(2, 2, timestamp=now))
    retry = log.append(idempotent(2, 2, timestamp=now))
    assert retry.duplicate and retry.first_offset == continued.first_offset == 3
    with pytest.raises(OutOfOrderSequenceError, match="expected 4"):
        log.append(idempotent(1, 5, timestamp=now))
    assert log.log_end_offset == 5
