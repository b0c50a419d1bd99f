"""A follower's append (``PartitionLog.append_as_follower``): the leader's batches kept byte for
byte at their offsets, a partial tail left for the next fetch, and bad input refused whole."""

import pytest

from broker.log.config import LogConfig
from broker.log.errors import InvalidBatchError, InvalidRecordError
from broker.log.partition_log import PartitionLog
from broker.records import batch

from .util import make_batch


def open_log(path, name: str) -> PartitionLog:
    return PartitionLog.open(str(path / name), LogConfig())


def leader_bytes(leader: PartitionLog, offset: int = 0) -> bytes:
    found = leader.read(offset, 10_000_000)
    return b"" if found is None else found.read()


def test_the_follower_stores_the_leaders_batches_byte_for_byte(tmp_path):
    leader, follower = open_log(tmp_path, "leader-0"), open_log(tmp_path, "follower-0")
    leader.append(make_batch(3), leader_epoch=2)
    leader.append(make_batch(2, producer_id=9, producer_epoch=0, base_sequence=0), leader_epoch=5)
    assert follower.append_as_follower(leader_bytes(leader)) == 5
    assert follower.log_end_offset == leader.log_end_offset == 5
    assert leader_bytes(follower) == leader_bytes(leader)
    idempotent = batch.parse_header(make_batch(2, producer_id=9, producer_epoch=0, base_sequence=0))
    assert follower.producer_state.check(idempotent).first_offset == 3  # a retry is found a duplicate here too
    leader.append(make_batch(1), leader_epoch=5)
    assert follower.append_as_follower(leader_bytes(leader, 5)) == 6
    assert leader_bytes(follower) == leader_bytes(leader)


def test_a_partial_batch_at_the_end_waits_for_the_next_fetch(tmp_path):
    leader, follower = open_log(tmp_path, "leader-0"), open_log(tmp_path, "follower-0")
    leader.append(make_batch(2))
    leader.append(make_batch(3))
    data = leader_bytes(leader)
    assert follower.append_as_follower(data[:-7]) == 2
    assert follower.append_as_follower(b"") == 2
    assert follower.append_as_follower(leader_bytes(leader, 2)) == 5
    assert leader_bytes(follower) == data


def test_a_batch_not_at_the_log_end_is_refused_and_nothing_is_written(tmp_path):
    leader, follower = open_log(tmp_path, "leader-0"), open_log(tmp_path, "follower-0")
    leader.append(make_batch(2))
    leader.append(make_batch(2))
    with pytest.raises(InvalidBatchError, match="starts at offset 2, this replica's log ends at 0"):
        follower.append_as_follower(leader_bytes(leader, 2))
    assert follower.log_end_offset == 0 and leader_bytes(follower) == b""


def test_a_corrupt_batch_is_refused_and_nothing_is_written(tmp_path):
    leader, follower = open_log(tmp_path, "leader-0"), open_log(tmp_path, "follower-0")
    leader.append(make_batch(2))
    leader.append(make_batch(2))
    data = bytearray(leader_bytes(leader))
    data[-1] ^= 0xFF  # the second batch's last byte: its CRC no longer matches
    with pytest.raises(InvalidBatchError):
        follower.append_as_follower(bytes(data))
    assert follower.log_end_offset == 0


def test_a_legacy_message_set_is_refused(tmp_path):
    follower = open_log(tmp_path, "follower-0")
    legacy = (
        bytes(8)
        + (14).to_bytes(4, "big")
        + bytes(4)
        + bytes([1, 0])
        + bytes(8)
        + (-1).to_bytes(4, "big", signed=True) * 2
    )
    with pytest.raises((InvalidRecordError, InvalidBatchError)):
        follower.append_as_follower(legacy)
    assert follower.log_end_offset == 0
