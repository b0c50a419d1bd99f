"""The log on a real full disk (a small tmpfs): an append is one unit, and nothing is stored twice;
a background task failing there says so once, not once per run."""

import functools
import logging
import os

import pytest

from broker.log.config import LogConfig
from broker.log.errors import LogStorageError
from broker.log.manager import CLEAN_SHUTDOWN_FILE, LogManager
from broker.log.partition_log import PartitionLog
from broker.records import batch

from ..waiting import wait_for
from .full_disk import fill, small_tmpfs
from .util import make_records, read_all

PRODUCER_ID = 7


@pytest.fixture
def disk(tmp_path):
    with small_tmpfs(tmp_path / "disk") as path:
        yield path


def idempotent_batch(sequence: int, count: int = 2) -> bytes:
    return batch.build(
        make_records(count, sequence, value_size=200),
        base_offset=sequence,
        producer_id=PRODUCER_ID,
        producer_epoch=0,
        base_sequence=sequence,
    )


def file_sizes(directory) -> dict:
    return {name: os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory)}


def test_an_append_that_meets_a_full_disk_leaves_nothing_and_its_retry_is_stored_once(disk):
    """The reported loss: with an index entry per batch, a full disk used to fail the index write
    after the .log write, leaving the batch in the log but not in the producer state, so every
    retry of it was stored again."""
    log = PartitionLog.open(str(disk / "t-0"), LogConfig(index_interval_bytes=1))
    appended = 0
    filler = None
    failures = 0
    while failures < 3:
        try:
            log.append(idempotent_batch(2 * appended))
            appended += 1
        except LogStorageError as exc:
            assert "No space left on device" in str(exc)
            failures += 1  # the client retries the same sequence
            before = (log.log_end_offset, file_sizes(log.directory), len(log.active_segment.offset_index))
            with pytest.raises(LogStorageError):
                log.append(idempotent_batch(2 * appended))
            assert (log.log_end_offset, file_sizes(log.directory), len(log.active_segment.offset_index)) == before
        if filler is None and appended == 20:
            filler = fill(disk)
    assert log.log_end_offset == 2 * appended
    os.unlink(filler)
    for sequence in range(2 * appended - 8, 2 * appended + 2, 2):  # 4 acknowledged ones again, then the failed one
        log.append(idempotent_batch(sequence))
    assert log.log_end_offset == 2 * appended + 2
    log.close()
    reopened = PartitionLog.open(log.directory, LogConfig(index_interval_bytes=1))
    keys = [r.key for r in read_all(reopened)]
    assert keys == [f"key-{i}".encode() for i in range(2 * appended + 2)]
    for offset in range(0, 2 * appended + 2, 5):  # the indexes agree with the .log
        assert read_all(reopened, offset)[0].offset == offset
    reopened.close()


def test_rolls_on_a_full_disk_lose_and_duplicate_nothing(disk):
    """Small segments: the disk fills while segments roll (a roll trims the old indexes, which
    frees their reserve for the new segment); every failed append leaves the log as it was."""
    log = PartitionLog.open(str(disk / "t-0"), LogConfig(index_interval_bytes=1, segment_bytes=4096))
    log.append(idempotent_batch(0))
    filler = fill(disk)
    failures = 0
    while failures < 3:
        end = log.log_end_offset
        try:
            log.append(idempotent_batch(end))
        except LogStorageError:
            failures += 1
            assert log.log_end_offset == end
    assert len(log.segments) > 1
    os.unlink(filler)
    end = log.log_end_offset
    log.append(idempotent_batch(end))
    log.append(idempotent_batch(end))  # a retry: a duplicate
    assert [r.offset for r in read_all(log)] == list(range(end + 2))
    log.close()
    reopened = PartitionLog.open(log.directory, LogConfig(index_interval_bytes=1, segment_bytes=4096))
    assert [r.offset for r in read_all(reopened)] == list(range(end + 2))
    reopened.close()


def test_shutdown_on_a_full_disk_attempts_every_step_and_leaves_the_logs_recoverable(disk, caplog):
    # indexes of one page, each with entries: trimming them frees no space
    config = LogConfig(segment_index_bytes=4096, index_interval_bytes=1)
    manager = LogManager(str(disk / "logs"), config).open()
    for partition in range(3):
        log = manager.get_or_create_log("t", partition)
        for sequence in range(0, 10, 2):
            log.append(idempotent_batch(sequence))
    filler = fill(disk)
    with pytest.raises(LogStorageError, match="was not clean: 5 step"):
        manager.shutdown()
    failed_steps = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert [line.split(" failed")[0] for line in failed_steps] == [
        "shutdown: closing t-0",
        "shutdown: closing t-1",
        "shutdown: closing t-2",
        "shutdown: writing the recovery point checkpoint",
        "shutdown: writing the log start offset checkpoint",
    ]
    assert all("No space left on device" in line and "\n" not in line for line in failed_steps)
    names = os.listdir(disk / "logs")
    assert CLEAN_SHUTDOWN_FILE not in names and not any(n.endswith(".tmp") for n in names)
    os.unlink(filler)
    with LogManager(str(disk / "logs"), config) as reopened:
        assert not reopened.had_clean_shutdown
        for partition in range(3):
            log = reopened.get_log("t", partition)
            assert [r.offset for r in read_all(log)] == list(range(10))
            assert log.append(idempotent_batch(8)).duplicate  # the producer state was rebuilt from the log
    assert CLEAN_SHUTDOWN_FILE in os.listdir(disk / "logs")


def test_a_periodic_task_on_a_full_disk_says_once_that_it_fails_and_once_that_it_works_again(disk, caplog, monkeypatch):
    """The checkpoints every 10 ms: failing again and again, one line (no traceback), not one per run."""
    caplog.set_level(logging.INFO, logger="broker.log.scheduler")
    runs, real_write = [], LogManager.write_checkpoints

    @functools.wraps(real_write)
    def write_checkpoints(manager) -> None:
        runs.append(manager)
        real_write(manager)

    monkeypatch.setattr(LogManager, "write_checkpoints", write_checkpoints)
    manager = LogManager(str(disk / "logs"), LogConfig(), checkpoint_interval_ms=10).open()
    try:
        manager.get_or_create_log("t", 0).append(idempotent_batch(0))
        filler = fill(disk)
        failing_from = len(runs)
        wait_for(lambda: len(runs) >= failing_from + 5, 30, what="five checkpoints on the full disk")
        os.unlink(filler)
        wait_for(
            lambda: any("works again" in r.getMessage() for r in caplog.records),
            30,
            what="the checkpoints working again",
        )
    finally:
        manager.shutdown()
    said = [r for r in caplog.records if r.name == "broker.log.scheduler"]
    assert [(r.levelname, r.getMessage().split(":")[0]) for r in said] == [
        ("ERROR", "background task LogManager.write_checkpoints failed"),
        ("INFO", "background task LogManager.write_checkpoints works again"),
    ]
    assert "No space left on device" in said[0].getMessage() and said[0].exc_info is None
