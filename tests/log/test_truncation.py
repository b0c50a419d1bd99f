"""Truncating a partition log: random logs cut at random offsets equal logs built from only the
batches kept, on disk, in their indexes, producer state and leader epochs; before and after a
reopen from disk without a clean shutdown (a crash right after the truncation)."""

import os
import random
import signal
import subprocess
import sys
from dataclasses import dataclass

import pytest

from broker.log.config import LogConfig
from broker.log.errors import LogDeletedError, OutOfOrderSequenceError
from broker.log.leader_epoch_cache import CHECKPOINT_FILE, EpochEntry
from broker.log.partition_log import PartitionLog
from broker.log.producer_state import SNAPSHOT_SUFFIX
from broker.records.compression import Codec

from ..clock import FakeClock
from .util import BASE_TIME, files_in, make_batch, read_all

CONFIG = {"segment_bytes": 700, "index_interval_bytes": 120}


@dataclass
class Append:
    """One batch as appended: what to build and the leader epoch it is stamped with."""

    count: int
    codec: Codec
    producer_id: int
    sequence: int
    epoch: int
    timestamp: int

    def data(self) -> bytes:
        if self.producer_id < 0:
            return make_batch(self.count, 0, self.timestamp, self.codec)
        return make_batch(
            self.count,
            0,
            self.timestamp,
            self.codec,
            producer_id=self.producer_id,
            producer_epoch=0,
            base_sequence=self.sequence,
        )


def random_appends(rng: random.Random, count: int) -> list[Append]:
    sequences = {1: 0, 2: 0}
    epoch = 0
    appends = []
    for i in range(count):
        producer_id = rng.choice([-1, 1, 2])
        records = rng.randint(1, 5)
        sequence = -1
        if producer_id > 0:
            sequence = sequences[producer_id]
            sequences[producer_id] += records
        epoch += rng.random() < 0.2
        codec = rng.choice([Codec.NONE, Codec.NONE, Codec.GZIP, Codec.SNAPPY])
        appends.append(Append(records, codec, producer_id, sequence, epoch, BASE_TIME + 10 * i))
    return appends


def open_log(directory, clock: FakeClock, had_clean_shutdown: bool = False, recovery_point: int = 0) -> PartitionLog:
    return PartitionLog.open(
        str(directory),
        LogConfig(**CONFIG),
        clock=clock,
        had_clean_shutdown=had_clean_shutdown,
        recovery_point=recovery_point,
    )


def build(directory, batches: list[tuple[bytes, int]], clock: FakeClock) -> tuple[PartitionLog, list[int]]:
    """The log of ``(batch, leader epoch)`` appended in turn, and each batch's base offset. (The
    same bytes go to the logs compared: a gzip stream records the time it was made.)"""
    log = open_log(directory, clock)
    return log, [log.append(data, leader_epoch=epoch).first_offset for data, epoch in batches]


def producer_summary(log: PartitionLog) -> dict:
    """What a truncated log must agree on: each producer's epoch and last batch (what snapshots keep)."""
    return {pid: (e.epoch, e.batches[-1]) for pid, e in log.producer_state.producers.items() if e.batches}


def log_bytes(log: PartitionLog) -> bytes:
    data = b""
    for segment in log.segments:
        with open(segment.log_path, "rb") as f:
            data += f.read()
    return data


def assert_same_log(got: PartitionLog, expected: PartitionLog, same_time_indexes: bool = True) -> None:
    """``same_time_indexes=False`` after a recovery: a recovered segment's time index lacks the
    entry a roll adds, so only the answers of ``offset_for_timestamp`` are compared. (Likewise for
    the last segment with data when a cut at a segment's base left that one empty: it was rolled.)"""
    assert got.log_end_offset == expected.log_end_offset
    assert got.log_start_offset == expected.log_start_offset
    stored = [s for s in got.segments if s.size]
    wanted = [s for s in expected.segments if s.size]
    assert [s.base_offset for s in stored] == [s.base_offset for s in wanted]
    rolled_here_only = got.segments[-1].size == 0 and expected.segments[-1].size > 0
    for mine, theirs in zip(stored, wanted, strict=True):
        with open(mine.log_path, "rb") as a, open(theirs.log_path, "rb") as b:
            assert a.read() == b.read()
        for offset in range(mine.base_offset, mine.next_offset + 1):
            assert mine.offset_index.lookup(offset) == theirs.offset_index.lookup(offset)
        if not same_time_indexes or (rolled_here_only and mine is stored[-1]):
            continue
        for timestamp in range(BASE_TIME - 1, BASE_TIME + 10 * 60, 5):
            assert mine.time_index.lookup(timestamp) == theirs.time_index.lookup(timestamp)
    for timestamp in range(BASE_TIME - 1, BASE_TIME + 10 * 60, 7):
        assert got.offset_for_timestamp(timestamp) == expected.offset_for_timestamp(timestamp)
    assert read_all(got) == read_all(expected)
    assert producer_summary(got) == producer_summary(expected)
    assert got.leader_epoch_cache.entries == expected.leader_epoch_cache.entries


@pytest.mark.parametrize("seed", range(8))
def test_a_random_log_truncated_at_a_random_offset_equals_the_log_of_the_kept_batches(tmp_path, seed):
    rng = random.Random(seed)
    appends = random_appends(rng, rng.randint(15, 40))
    batches = [(a.data(), a.epoch) for a in appends]
    clock = FakeClock()
    log, bases = build(tmp_path / "a-0", batches, clock)
    assert len(log.segments) > 2
    log.flush(rng.randint(0, log.log_end_offset))  # a recovery point somewhere, maybe above the cut
    target = rng.randint(0, log.log_end_offset - 1)
    boundary = max(base for base in bases if base <= target)  # the cut is at a batch boundary
    kept = batches[: bases.index(boundary)]

    log.truncate_to(target)
    expected, _ = build(tmp_path / "b-0", kept, clock)
    assert log.log_end_offset == boundary
    assert log.recovery_point <= boundary
    assert_same_log(log, expected)
    assert all(int(name[:20]) <= boundary for name in files_in(log.directory, SNAPSHOT_SUFFIX))

    # a crash right after: the files alone give the same log
    reopened = open_log(tmp_path / "a-0", clock, recovery_point=log.recovery_point)
    assert_same_log(reopened, expected, same_time_indexes=False)

    # both go on alike: the producers' next batches are in sequence on both
    more = random_appends(random.Random(seed + 100), 6)
    next_sequences = {pid: last.last_sequence + 1 for pid, (_, last) in producer_summary(expected).items()}
    for append in more:
        append.epoch += appends[-1].epoch + 1
        if append.producer_id > 0:
            append.sequence = next_sequences.get(append.producer_id, 0)
            next_sequences[append.producer_id] = append.sequence + append.count
        data = append.data()
        for target_log in (reopened, expected):
            target_log.append(data, leader_epoch=append.epoch)
    # (the segments may roll elsewhere: a cut at a segment's base leaves that segment, empty)
    assert log_bytes(reopened) == log_bytes(expected)
    assert read_all(reopened) == read_all(expected)
    assert producer_summary(reopened) == producer_summary(expected)
    assert reopened.leader_epoch_cache.entries == expected.leader_epoch_cache.entries
    for opened in (log, reopened, expected):
        opened.close()


def test_truncating_at_or_past_the_end_only_drops_an_epoch_entry_without_data(tmp_path):
    log = open_log(tmp_path / "t-0", FakeClock())
    log.append(make_batch(3), leader_epoch=1)
    log.leader_epoch_cache.assign(2, 3)  # a leader elected, then replaced before it wrote anything
    log.truncate_to(10)
    assert log.log_end_offset == 3
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 0)]
    log.truncate_to(3)
    assert log.log_end_offset == 3
    log.close()


def test_a_batch_holding_the_offset_goes_whole(tmp_path):
    log = open_log(tmp_path / "t-0", FakeClock())
    log.append(make_batch(3), leader_epoch=0)
    log.append(make_batch(4), leader_epoch=1)
    log.truncate_to(5)
    assert log.log_end_offset == 3
    assert [r.offset for r in read_all(log)] == [0, 1, 2]
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0)]
    assert log.append(make_batch(2), leader_epoch=2).first_offset == 3
    log.close()


def test_truncate_fully_and_start_at_empties_the_log(tmp_path):
    clock = FakeClock()
    directory = tmp_path / "t-0"
    log, _ = build(directory, [(a.data(), a.epoch) for a in random_appends(random.Random(1), 20)], clock)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset) == (500, 500)
    assert [s.base_offset for s in log.segments] == [500]
    assert log.producer_state.producers == {} and files_in(str(directory), SNAPSHOT_SUFFIX) == []
    assert log.leader_epoch_cache.entries == []
    assert (directory / CHECKPOINT_FILE).read_text() == "0\n0\n"
    log.append(make_batch(2), leader_epoch=4)
    reopened = open_log(directory, clock, recovery_point=log.recovery_point)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (500, 502)
    assert reopened.leader_epoch_cache.entries == [EpochEntry(4, 500)]
    assert [r.offset for r in read_all(reopened)] == [500, 501]
    reopened.close()
    log.close()


def test_truncating_below_the_log_start_starts_the_log_there(tmp_path):
    log = open_log(tmp_path / "t-0", FakeClock())
    log.truncate_fully_and_start_at(100)
    log.append(make_batch(3), leader_epoch=0)
    log.truncate_to(40)
    assert (log.log_start_offset, log.log_end_offset) == (40, 40)
    # records below a log start that DeleteRecords moved stay deleted
    for _ in range(4):
        log.append(make_batch(3), leader_epoch=1)
    log.delete_records_before(47)
    log.truncate_to(45)
    assert (log.log_start_offset, log.log_end_offset) == (45, 45)
    assert read_all(log) == []
    log.close()


def test_a_producer_continues_its_sequence_after_its_tail_is_truncated(tmp_path):
    log = open_log(tmp_path / "t-0", FakeClock())
    for sequence in (0, 3, 6):
        log.append(make_batch(3, producer_id=9, producer_epoch=0, base_sequence=sequence), leader_epoch=0)
    log.truncate_to(6)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(make_batch(3, producer_id=9, producer_epoch=0, base_sequence=9), leader_epoch=1)
    assert log.append(make_batch(3, producer_id=9, producer_epoch=0, base_sequence=6), leader_epoch=1).first_offset == 6
    log.close()


def test_bad_arguments_and_a_deleted_log_are_refused(tmp_path):
    log = open_log(tmp_path / "t-0", FakeClock())
    with pytest.raises(ValueError, match="negative"):
        log.truncate_to(-1)
    with pytest.raises(ValueError, match="negative"):
        log.truncate_fully_and_start_at(-5)
    log.discard()
    with pytest.raises(LogDeletedError):
        log.truncate_to(0)
    assert os.path.isdir(log.directory)


STEPS = ["first-segment-removed", "second-segment-removed", "cut", "epochs-not-trimmed"]


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_in_the_middle_of_a_truncation_leaves_a_log_the_loader_recovers(tmp_path, step):
    """The kill is real: ``truncation_process`` SIGKILLs itself at the step."""
    clock = FakeClock()
    appends = random_appends(random.Random(7), 40)
    batches = [(a.data(), a.epoch) for a in appends]
    log, bases = build(tmp_path / "t-0", batches, clock)
    log.flush()
    old_end = log.log_end_offset
    assert len(log.segments) >= 4
    log.close()
    target = bases[len(bases) // 3] + 1
    boundary = max(base for base in bases if base <= target)
    killed = subprocess.run(
        [sys.executable, "-m", "tests.log.truncation_process", str(tmp_path / "t-0"), str(target), step],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=os.getcwd(),
    )
    assert killed.returncode == -signal.SIGKILL and "done" not in killed.stdout, killed.stderr

    reopened = open_log(tmp_path / "t-0", clock, recovery_point=old_end)
    end = reopened.log_end_offset  # somewhere between the cut and the old end, at a batch boundary
    assert boundary <= end <= old_end and (end in bases or end == old_end)
    prefix, _ = build(tmp_path / "prefix-0", batches[: bases.index(end)] if end in bases else batches, clock)
    assert log_bytes(reopened) == log_bytes(prefix)
    assert read_all(reopened) == read_all(prefix)
    assert reopened.leader_epoch_cache.entries == prefix.leader_epoch_cache.entries
    # the follower asks again and gets the log of the kept batches
    reopened.truncate_to(target)
    expected, _ = build(tmp_path / "expected-0", batches[: bases.index(boundary)], clock)
    assert log_bytes(reopened) == log_bytes(expected)
    assert read_all(reopened) == read_all(expected)
    assert producer_summary(reopened) == producer_summary(expected)
    assert reopened.leader_epoch_cache.entries == expected.leader_epoch_cache.entries
