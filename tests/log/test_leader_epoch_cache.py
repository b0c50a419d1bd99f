"""The leader epoch cache and its ``leader-epoch-checkpoint`` file, alone and inside a partition log."""

import os

import pytest

from broker.log.leader_epoch_cache import (
    CHECKPOINT_FILE,
    EpochEntry,
    LeaderEpochFileCache,
    MalformedEpochCheckpointError,
    Truncation,
    read_checkpoint,
)
from broker.log.partition_log import PartitionLog
from broker.records import batch

from ..clock import FakeClock
from .util import make_batch


def checkpoint_text(directory) -> str:
    return (directory / CHECKPOINT_FILE).read_text()


def test_a_fresh_partition_writes_kafkas_format(tmp_path):
    cache = LeaderEpochFileCache(str(tmp_path))
    cache.assign(0, 0)
    assert checkpoint_text(tmp_path) == "0\n1\n0 0\n"
    cache.assign(3, 1500)
    assert checkpoint_text(tmp_path) == "0\n2\n0 0\n3 1500\n"
    assert LeaderEpochFileCache(str(tmp_path)).entries == [EpochEntry(0, 0), EpochEntry(3, 1500)]


def test_assign_keeps_both_columns_growing(tmp_path):
    cache = LeaderEpochFileCache(str(tmp_path))
    cache.assign(1, 10)
    cache.assign(1, 20)  # same epoch, later offset: nothing new
    assert cache.entries == [EpochEntry(1, 10)]
    cache.assign(2, 20)
    cache.assign(4, 30)
    cache.assign(3, 25)  # an older epoch than the latest: the later entries go
    assert cache.entries == [EpochEntry(1, 10), EpochEntry(2, 20), EpochEntry(3, 25)]
    cache.assign(5, 15)  # a lower start offset: the entries starting at or after it go
    assert cache.entries == [EpochEntry(1, 10), EpochEntry(5, 15)]
    cache.assign(5, 12)  # the same epoch starting earlier replaces it
    assert cache.entries == [EpochEntry(1, 10), EpochEntry(5, 12)]
    assert cache.latest_epoch == 5
    cache.assign(-1, 40)  # a batch from before leader epochs
    assert cache.latest_epoch == 5
    with pytest.raises(ValueError, match="negative offset"):
        cache.assign(6, -1)


def test_end_offset_for_follows_kafka(tmp_path):
    cache = LeaderEpochFileCache(str(tmp_path))
    assert cache.end_offset_for(0, 100) == (-1, -1)  # no entries
    for epoch, start in ((2, 10), (4, 20), (7, 50)):
        cache.assign(epoch, start)
    assert cache.end_offset_for(-1, 100) == (-1, -1)
    assert cache.end_offset_for(7, 100) == (7, 100)  # the latest epoch ends at the log end
    assert cache.end_offset_for(4, 100) == (4, 50)
    assert cache.end_offset_for(5, 100) == (4, 50)  # an epoch the log never had: the one below it
    assert cache.end_offset_for(2, 100) == (2, 20)
    assert cache.end_offset_for(1, 100) == (1, 10)  # older than every entry: where the first starts
    assert cache.end_offset_for(8, 100) == (-1, -1)  # newer than any
    assert cache.epoch_for(9) == -1 and cache.epoch_for(10) == 2 and cache.epoch_for(49) == 4


def test_truncate_from_end_and_start(tmp_path):
    cache = LeaderEpochFileCache(str(tmp_path))
    for epoch, start in ((0, 0), (1, 10), (2, 20), (3, 30)):
        cache.assign(epoch, start)
    cache.truncate_from_end(31)
    assert cache.latest_epoch == 3
    cache.truncate_from_end(20)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(1, 10)]
    cache.truncate_from_start(15)
    assert cache.entries == [EpochEntry(1, 15)]
    assert read_checkpoint(str(tmp_path / CHECKPOINT_FILE)) == [EpochEntry(1, 15)]
    cache.truncate_from_start(15)
    cache.truncate_from_start(3)  # below the first entry: nothing to drop
    assert cache.entries == [EpochEntry(1, 15)]
    cache.clear()
    assert cache.entries == [] and checkpoint_text(tmp_path) == "0\n0\n"


@pytest.mark.parametrize(
    "text",
    ["", "1\n0\n", "0\nx\n", "0\n2\n0 0\n", "0\n1\n0\n", "0\n1\n0 -5\n", "0\n2\n3 10\n2 20\n", "0\n1\na b\n"],
)
def test_a_malformed_checkpoint_is_refused_and_the_cache_starts_empty(tmp_path, text):
    (tmp_path / CHECKPOINT_FILE).write_text(text)
    with pytest.raises(MalformedEpochCheckpointError):
        read_checkpoint(str(tmp_path / CHECKPOINT_FILE))
    cache = LeaderEpochFileCache(str(tmp_path))
    assert cache.entries == [] and cache.was_missing


def open_log(path, clock=None, **config) -> PartitionLog:
    from broker.log.config import LogConfig

    return PartitionLog.open(str(path), LogConfig(**config), clock=clock or FakeClock())


def test_leader_appends_stamp_the_epoch_and_record_where_it_starts(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append(make_batch(3), leader_epoch=0)
    log.append(make_batch(2), leader_epoch=0)
    log.append(make_batch(4), leader_epoch=5)
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(5, 5)]
    stamped = [batch.parse_header(log.read(o, 1 << 20).read()).partition_leader_epoch for o in (0, 3, 5)]
    assert stamped == [0, 0, 5]
    assert checkpoint_text(directory) == "0\n2\n0 0\n5 5\n"
    log.close()


def test_retention_and_delete_records_move_the_first_entry(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=300)
    for epoch in (1, 1, 2, 2, 3):
        log.append(make_batch(3), leader_epoch=epoch)
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(2, 6), EpochEntry(3, 12)]
    log.delete_records_before(7)
    assert log.leader_epoch_cache.entries == [EpochEntry(2, 7), EpochEntry(3, 12)]
    log.close()


def test_reopening_trims_entries_past_the_recovered_end(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append(make_batch(3), leader_epoch=1)
    log.append(make_batch(3), leader_epoch=2)
    log.flush()
    log.close()
    # a crash after the epoch entry was written but before its batch reached the disk
    (directory / CHECKPOINT_FILE).write_text("0\n3\n1 0\n2 3\n4 6\n")
    reopened = open_log(directory)
    assert reopened.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(2, 3)]
    assert checkpoint_text(directory) == "0\n2\n1 0\n2 3\n"
    reopened.close()


def test_a_missing_or_corrupt_checkpoint_is_rebuilt_from_the_batches(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory, segment_bytes=300)
    for epoch in (0, 0, 3, 3, 7):
        log.append(make_batch(3), leader_epoch=epoch)
    expected = log.leader_epoch_cache.entries
    log.flush()
    log.close()
    os.unlink(directory / CHECKPOINT_FILE)
    reopened = open_log(directory, segment_bytes=300)
    assert reopened.leader_epoch_cache.entries == expected == [EpochEntry(0, 0), EpochEntry(3, 6), EpochEntry(7, 12)]
    reopened.close()
    (directory / CHECKPOINT_FILE).write_text("0\n9\n")
    assert open_log(directory, segment_bytes=300).leader_epoch_cache.entries == expected


def test_a_checkpoint_that_cannot_be_written_keeps_neither_the_log_from_opening_nor_the_entries(tmp_path, monkeypatch):
    import errno

    from broker.log import leader_epoch_cache
    from broker.log.errors import LogStorageError

    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append(make_batch(3), leader_epoch=1)
    log.append(make_batch(3), leader_epoch=4)
    log.flush()
    log.close()
    os.unlink(directory / CHECKPOINT_FILE)

    def full_disk(path, entries):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(leader_epoch_cache, "_write_checkpoint", full_disk)
    reopened = open_log(directory)  # rebuilt from the batches, in memory
    assert reopened.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(4, 3)]
    with pytest.raises(LogStorageError, match="cannot write the leader epoch checkpoint: No space left"):
        reopened.append(make_batch(2), leader_epoch=5)
    assert reopened.log_end_offset == 6  # refused before anything was written
    monkeypatch.undo()
    reopened.append(make_batch(2), leader_epoch=5)
    assert read_checkpoint(str(directory / CHECKPOINT_FILE)) == [EpochEntry(1, 0), EpochEntry(4, 3), EpochEntry(5, 6)]
    reopened.close()


def cache_of(tmp_path, *entries: tuple[int, int]) -> LeaderEpochFileCache:
    cache = LeaderEpochFileCache(str(tmp_path))
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_a_follower_behind_the_leader_keeps_its_log(tmp_path):
    follower = cache_of(tmp_path, (0, 0), (1, 5))
    # the leader is still at epoch 1 and ends past the follower: nothing to cut
    assert follower.truncation_for(1, 20, log_end_offset=12, high_watermark=8) == Truncation(12, True)


def test_a_divergent_tail_is_cut_where_the_leaders_epoch_ended(tmp_path):
    """The worked example: A led epoch 1 (offsets up to 6); B, a follower with up to 4, became leader
    in epoch 2 and wrote from 5. A asks for epoch 1 and cuts its 5-6."""
    a = cache_of(tmp_path, (1, 0))
    assert a.truncation_for(1, 5, log_end_offset=7, high_watermark=3) == Truncation(5, True)


def test_an_epoch_the_leader_never_had_is_cut_and_asked_again(tmp_path):
    """KIP-279: after fast elections the follower holds epoch 3, which the leader never saw; the
    leader answers with its largest epoch below (2, ending at 30). The follower never had epoch 2:
    it cuts where its own largest epoch below that (1) ends, and asks again about epoch 1."""
    follower = cache_of(tmp_path, (0, 0), (1, 10), (3, 25))
    assert follower.truncation_for(2, 30, log_end_offset=40, high_watermark=20) == Truncation(25, False, 1)
    follower.truncate_from_end(25)
    assert follower.truncation_for(1, 25, log_end_offset=25, high_watermark=20) == Truncation(25, True)


def test_the_fallbacks_high_watermark_and_old_leaders(tmp_path):
    follower = cache_of(tmp_path, (4, 100))
    assert follower.truncation_for(-1, -1, log_end_offset=150, high_watermark=120) == Truncation(120, True)
    assert follower.truncation_for(-1, 130, log_end_offset=150, high_watermark=120) == Truncation(130, True)  # v0
    # the follower has nothing at or below the leader's epoch: the leader's end offset
    assert follower.truncation_for(2, 90, log_end_offset=150, high_watermark=80) == Truncation(90, True)
    # never past the follower's own end
    assert follower.truncation_for(4, 400, log_end_offset=150, high_watermark=120) == Truncation(150, True)
