"""Descriptors: the logs keep a bounded number of files open, whatever the number of partitions."""

import logging
import os
import subprocess
import sys
import textwrap

import pytest

from broker.log.config import LogConfig
from broker.log.errors import LogStorageError
from broker.log.manager import LogManager
from broker.log.open_files import OPEN_FILES, OpenFiles, descriptor_limit
from broker.log.partition_log import PartitionLog

from .full_disk import failing_write_back
from .test_manager import ROOT
from .util import make_batch, read_all


class Holder:
    def __init__(self):
        self.released = 0

    def release(self):
        self.released += 1


def test_the_least_recently_used_handles_are_released_beyond_the_limit():
    handles = OpenFiles(limit=20)
    holders = [Holder() for _ in range(21)]
    for holder in holders[:20]:
        handles.used(holder)
    handles.used(holders[0])  # used again: now the most recent
    handles.used(holders[20])  # one too many: that one and a tenth of the limit more go, least recent first
    assert [holder.released for holder in holders] == [0] + [1] * 3 + [0] * 17
    assert len(handles) == 18


def test_a_released_segment_opens_again_and_slices_taken_before_stay_readable(tmp_path):
    log = PartitionLog.open(str(tmp_path / "t-0"), LogConfig(index_interval_bytes=1))
    for start in range(0, 30, 3):
        log.append(make_batch(3, start))
    held = log.read(0, 100)
    segment = log.active_segment
    segment.release()
    segment.offset_index.release()
    segment.time_index.release()
    assert held.read()[:8] == bytes(8)  # base offset 0, from the released descriptor
    assert [r.offset for r in read_all(log, 10)] == list(range(10, 30))  # reopened on use
    log.append(make_batch(3, 30))
    assert log.log_end_offset == 33
    log.close()


@pytest.mark.slow  # starts a process
def test_many_more_partitions_than_descriptors(tmp_path):
    """200 partitions of 3 files each under a limit of 128 descriptors: appends, a restart, reads."""
    code = textwrap.dedent(f"""
        import os, resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
        from broker.log.config import LogConfig
        from broker.log.manager import LogManager
        from tests.log.util import make_batch, read_all
        most_open = 0
        with LogManager({str(tmp_path)!r}, LogConfig(index_interval_bytes=1)) as manager:
            for partition in range(200):
                log = manager.get_or_create_log("many", partition)
                for _ in range(2):
                    log.append(make_batch(3, log.log_end_offset))
                most_open = max(most_open, len(os.listdir("/proc/self/fd")))
        with LogManager({str(tmp_path)!r}, LogConfig(index_interval_bytes=1)) as manager:
            for partition in range(200):
                records = read_all(manager.get_log("many", partition))
                assert [r.offset for r in records] == list(range(6)), partition
                most_open = max(most_open, len(os.listdir("/proc/self/fd")))
        print("ok", most_open)
    """)
    child = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    status, most_open = child.stdout.split()
    assert status == "ok" and int(most_open) <= 128


def test_the_start_logs_the_descriptor_limit_and_what_the_logs_would_need(tmp_path, caplog):
    """At start, one line says how many descriptors there are and how many files every log's
    segments would keep open (three per segment) against the bound the logs keep to."""
    with LogManager(str(tmp_path), LogConfig(segment_bytes=200)) as manager:
        for partition in range(3):
            log = manager.get_or_create_log("needs", partition)
            for _ in range(2):  # two batches over 200 bytes: a segment each
                log.append(make_batch(3, log.log_end_offset))
    caplog.set_level(logging.INFO, logger="broker.log.manager")
    with LogManager(str(tmp_path), LogConfig(segment_bytes=200)) as manager:
        segments = sum(len(log.segments) for log in manager.all_logs())
        assert segments >= 6
        lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("descriptor limit")]
        assert lines == [
            f"descriptor limit {descriptor_limit()}: the logs keep at most {OPEN_FILES.limit} files "
            f"open, least recently used closed first (3 log(s), {segments} segment(s): "
            f"{3 * segments} files to keep every one open)"
        ]


@pytest.mark.slow  # starts a process
def test_running_out_of_descriptors_fails_that_read_as_a_storage_error(tmp_path):
    """EMFILE while a lookup opens an index: that read fails with LogStorageError, the log goes on."""
    code = textwrap.dedent(f"""
        import os, resource
        from broker.log.config import LogConfig
        from broker.log.errors import LogStorageError
        from broker.log.partition_log import PartitionLog
        from tests.log.util import make_batch, read_all
        log = PartitionLog.open({str(tmp_path / "t-0")!r}, LogConfig(index_interval_bytes=1))
        for start in range(0, 30, 3):
            log.append(make_batch(3, start))
        log.active_segment.offset_index.release()
        spare = []
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        try:
            while True:
                spare.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        try:
            log.read(12, 100)
        except LogStorageError as exc:
            print("refused", exc)
        for fd in spare:
            os.close(fd)
        print("read", [r.offset for r in read_all(log, 12)][:3])
    """)
    child = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    refused, read = child.stdout.splitlines()
    assert refused.startswith("refused t-0: cannot read offset 12: Too many open files")
    assert read == "read [12, 13, 14]"


def test_a_written_log_file_is_fsynced_before_its_descriptor_goes(tmp_path, monkeypatch):
    """Once for the writes since the last fsync, never twice."""
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    log = PartitionLog.open(str(tmp_path / "t-0"), LogConfig())
    segment = log.active_segment
    log.append(make_batch(3, 0))  # its first epoch goes to the leader-epoch-checkpoint, fsynced at once
    synced.clear()
    segment.release()
    assert synced == [segment.log_path]
    log.append(make_batch(3, 3))
    log.flush()
    synced.clear()
    segment.release()
    assert synced == []  # the flush did: nothing left for the release to sync
    log.close()


def test_a_write_back_failing_when_an_idle_descriptor_goes_is_a_storage_error_of_its_partition(tmp_path):
    """For real: the page cache takes 16 MiB that the disk cannot hold. The error is reported to
    the release's fsync (before, the descriptor was closed without one, and the partition went on
    taking appends over data that was never written)."""
    with failing_write_back(tmp_path / "disk") as disk:
        log = PartitionLog.open(os.path.join(str(disk), "t-0"), LogConfig())
        for start in range(256):
            log.append(make_batch(1, start, value_size=64 * 1024))
        log.active_segment.release()
        assert log.active_segment.write_back_error is not None
        with pytest.raises(LogStorageError, match="t-0: .*writing its data back to disk failed"):
            log.append(make_batch(1, log.log_end_offset))
        with pytest.raises(LogStorageError, match="t-0: flush failed"):
            log.flush()
        log.close()
