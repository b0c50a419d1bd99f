"""LogManager: the directory lock, meta.properties, checkpoints, clean shutdown, crashes, full disks."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from broker.log import checkpoints
from broker.log.checkpoints import RECOVERY_POINT_FILE
from broker.log.config import LogConfig
from broker.log.errors import LogDirConfigError, LogDirInUseError
from broker.log.manager import CLEAN_SHUTDOWN_FILE, LogManager
from broker.log.partition_log import PartitionLog
from broker.records import batch
from broker.records.errors import CorruptRecordError

from ..clock import FakeClock
from ..waiting import wait_for
from .util import BASE_TIME, flip_byte, make_batch, read_all

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_python(code_or_module: list, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *code_or_module], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
    )


def read_line(process: subprocess.Popen, timeout: float = 30.0) -> str:
    """One line of the child's stdout, failing the test instead of hanging."""
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            pytest.fail(f"no output from the child within {timeout}s: {process.stderr.read()}")
    line = process.stdout.readline()
    if not line:
        pytest.fail(f"the child exited ({process.wait(10)}): {process.stderr.read()}")
    return line.strip()


def test_a_second_manager_on_the_same_directory_is_refused(tmp_path):
    with LogManager(str(tmp_path)):
        with pytest.raises(LogDirInUseError, match="in use by another process"):
            LogManager(str(tmp_path)).open()
    LogManager(str(tmp_path)).open().shutdown()  # released at shutdown


@pytest.mark.slow  # starts a process
def test_a_second_process_is_refused_until_the_first_dies(tmp_path):
    holder = start_python(
        [
            "-c",
            textwrap.dedent(f"""
        from broker.log.manager import LogManager
        import time
        LogManager({str(tmp_path)!r}).open()
        print("locked", flush=True)
        time.sleep(60)
    """),
        ]
    )
    try:
        assert read_line(holder) == "locked"
        with pytest.raises(LogDirInUseError, match=f"pid {holder.pid}"):
            LogManager(str(tmp_path)).open()
    finally:
        holder.kill()
        holder.wait(10)
    LogManager(str(tmp_path)).open().shutdown()


def test_meta_properties_pins_the_broker_id(tmp_path):
    with LogManager(str(tmp_path), broker_id=3) as manager:
        cluster_id = manager.cluster_id
    text = (tmp_path / "meta.properties").read_text()
    assert "broker.id=3" in text and f"cluster.id={cluster_id}" in text and "version=0" in text
    with pytest.raises(LogDirConfigError, match="broker.id=3"):
        LogManager(str(tmp_path), broker_id=4).open()
    with LogManager(str(tmp_path), broker_id=3) as manager:
        assert manager.cluster_id == cluster_id


def test_clean_shutdown_writes_checkpoints_and_the_marker(tmp_path):
    with LogManager(str(tmp_path), LogConfig(segment_bytes=600)) as manager:
        for partition in range(3):
            log = manager.get_or_create_log("page-views", partition)
            for _ in range(partition + 2):
                log.append(make_batch(2, timestamp=BASE_TIME))
        manager.get_or_create_log("other.topic-x", 0).append(make_batch(1))
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    recovery = (tmp_path / "recovery-point-offset-checkpoint").read_text().splitlines()
    assert recovery[:2] == ["0", "4"]
    assert sorted(recovery[2:]) == ["other.topic-x 0 1", "page-views 0 4", "page-views 1 6", "page-views 2 8"]
    assert checkpoints.read(str(tmp_path / "log-start-offset-checkpoint"))[("page-views", 2)] == 0

    with LogManager(str(tmp_path), LogConfig(segment_bytes=600)) as manager:
        assert manager.had_clean_shutdown
        assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # deleted once the logs are loaded
        assert manager.get_log("page-views", 2).log_end_offset == 8
        assert manager.get_log("page-views", 2).recovery_point == 8


def test_a_malformed_checkpoint_is_ignored_and_the_log_recovered(tmp_path):
    with LogManager(str(tmp_path)) as manager:
        manager.get_or_create_log("t", 0).append(make_batch(5))
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n7\nnot a checkpoint\n")
    os.unlink(tmp_path / CLEAN_SHUTDOWN_FILE)
    with LogManager(str(tmp_path)) as manager:
        log = manager.get_log("t", 0)
        assert (log.log_end_offset, log.recovery_point) == (5, 0)
        assert [r.offset for r in read_all(log)] == list(range(5))


@pytest.mark.slow  # starts a process
def test_acknowledged_records_survive_sigkill_exactly_once_and_in_order(tmp_path):
    """With flush.messages=1, kill the writer mid-stream several times; every acked record is kept."""
    acked_last = -1
    for round_ in range(4):
        writer = start_python(["-m", "tests.log.writer_process", str(tmp_path), "1"])
        try:
            ready = read_line(writer).split()
            assert ready[0] == "ready" and int(ready[1]) == acked_last + 1  # continues where it was
            for _ in range(20 + 15 * round_):
                kind, first, last = read_line(writer).split()
                assert kind == "acked" and int(first) == acked_last + 1
                acked_last = int(last)
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait(10)
        with LogManager(str(tmp_path)) as manager:
            assert not manager.had_clean_shutdown
            log = manager.get_log("crash", 0)
            records = read_all(log)
            assert [r.offset for r in records] == list(range(log.log_end_offset))
            assert all(r.key == f"key-{r.offset}".encode() for r in records)
            assert log.log_end_offset >= acked_last + 1
            acked_last = log.log_end_offset - 1  # appended-but-unacked records are kept too, once
        os.unlink(tmp_path / CLEAN_SHUTDOWN_FILE)  # the next writer must start from an unclean state too


def test_a_full_disk_fails_the_append_cleanly_and_loses_nothing(tmp_path):
    """A real write failure: the child's file size limit (RLIMIT_FSIZE) makes writes fail with EFBIG."""
    child = start_python(
        [
            "-c",
            textwrap.dedent(f"""
        import resource, signal
        from broker.log.config import LogConfig
        from broker.log.errors import LogStorageError
        from broker.log.manager import LogManager
        from tests.log.util import make_batch
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        # indexes preallocated well under the limit, so the .log is what meets it
        manager = LogManager({str(tmp_path)!r}, LogConfig(segment_bytes=10**9, segment_index_bytes=8192)).open()
        log = manager.get_or_create_log("full", 0)
        resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))
        acked = 0
        try:
            while True:
                acked = log.append(make_batch(4, acked, value_size=300)).last_offset + 1
        except LogStorageError as exc:
            print("failed", acked, log.log_end_offset, log.active_segment.size, exc, flush=True)
        print("read", len(log.read(0, 10**6).read()), flush=True)
    """),
        ]
    )
    try:
        failed = read_line(child).split(" ", 4)
        assert failed[0] == "failed" and failed[1] == failed[2] and int(failed[1]) > 0
        assert int(failed[3]) <= 50_000 and "File too large" in failed[4]
        assert read_line(child).split() == ["read", failed[3]]
    finally:
        child.kill()
        child.wait(10)
    with LogManager(str(tmp_path)) as manager:
        log = manager.get_log("full", 0)
        assert log.log_end_offset == int(failed[1])
        assert [r.key for r in read_all(log)] == [f"key-{i}".encode() for i in range(int(failed[1]))]


def test_deleted_logs_are_renamed_aside_then_removed(tmp_path):
    config = LogConfig(file_delete_delay_ms=100)
    with LogManager(str(tmp_path), config) as manager:
        manager.get_or_create_log("doomed", 0).append(make_batch(2))
        manager.get_or_create_log("kept", 0).append(make_batch(2))
        assert manager.delete_log("doomed", 0)
        assert manager.get_log("doomed", 0) is None
        assert not (tmp_path / "doomed-0").exists()
        assert any(n.startswith("doomed-0.") and n.endswith("-delete") for n in os.listdir(tmp_path))
        assert wait_for(lambda: not any(n.startswith("doomed-0") for n in os.listdir(tmp_path)))
        assert not manager.delete_log("doomed", 0)
    with LogManager(str(tmp_path), config) as manager:
        assert [lg.name for lg in manager.all_logs()] == ["kept-0"]


def test_leftover_deleted_directories_are_removed_at_start(tmp_path):
    (tmp_path / "gone-0.0123abc-delete").mkdir()
    (tmp_path / "gone-0.0123abc-delete" / "00000000000000000000.log").write_bytes(b"x")
    with LogManager(str(tmp_path)) as manager:
        assert manager.all_logs() == []
    assert not (tmp_path / "gone-0.0123abc-delete").exists()


def test_retention_runs_in_the_background(tmp_path):
    clock = FakeClock()
    config = LogConfig(segment_bytes=600, retention_ms=3600_000)
    with LogManager(str(tmp_path), config, retention_check_interval_ms=50, clock=clock) as manager:
        log = manager.get_or_create_log("t", 0)
        for _ in range(10):
            log.append(make_batch(2, timestamp=clock()))
        clock.advance(7200_000)
        log.append(make_batch(2, timestamp=clock()))
        assert wait_for(lambda: log.log_start_offset > 0)
        assert wait_for(lambda: checkpoints.read(str(tmp_path / "log-start-offset-checkpoint")).get(("t", 0), 0) > 0)


def test_a_clean_shutdown_skips_recovery_even_over_a_corrupt_batch(tmp_path):
    """Kafka's testCleanShutdownFile. A batch whose CRC was broken in a closed segment, below every
    recovery point: with the clean-shutdown marker recovery is skipped and the batch kept as it is.
    Without it, recovery starts at the segment holding the checkpointed recovery point: at the log
    end (as a clean shutdown wrote it) the batch is still kept; with no checkpoint (a crash before
    the first one) the log is cut at that batch."""
    config = LogConfig(segment_bytes=600)
    with LogManager(str(tmp_path), config) as manager:
        log = manager.get_or_create_log("t", 0)
        for i in range(20):
            log.append(make_batch(2, timestamp=BASE_TIME + i))
        segments = list(log.segments)
        middle = segments[1]
        position, corrupt = middle.translate_offset(middle.base_offset + 2)  # its second batch
        end = log.log_end_offset
    assert len(segments) > 2 and position > 0 and middle.next_offset > corrupt.last_offset + 1
    flip_byte(middle.log_path, position + corrupt.size - 1)
    sizes = [os.path.getsize(s.log_path) for s in segments]

    for remove in ([RECOVERY_POINT_FILE], [CLEAN_SHUTDOWN_FILE], [CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_FILE]):
        for name in remove:
            os.unlink(tmp_path / name)
        with LogManager(str(tmp_path), config) as manager:
            assert manager.had_clean_shutdown == (CLEAN_SHUTDOWN_FILE not in remove)
            log = manager.get_log("t", 0)
            if len(remove) < 2:  # recovery skipped, or started past the corrupt batch: kept as it is
                assert log.log_end_offset == end
                assert [os.path.getsize(s.log_path) for s in log.segments] == sizes
                with pytest.raises(CorruptRecordError):
                    batch.validate(log.read(corrupt.base_offset, 1).read())
            else:
                assert log.log_end_offset == corrupt.base_offset
                assert [s.base_offset for s in log.segments] == [s.base_offset for s in segments[:2]]
                assert os.path.getsize(middle.log_path) == position
                assert [r.offset for r in read_all(log)] == list(range(corrupt.base_offset))


def test_logs_are_recovered_by_several_threads_after_an_unclean_stop(tmp_path, monkeypatch):
    """num.recovery.threads.per.data.dir: with 2 threads, two logs are opened at the same time (the
    first two wait for each other at a barrier, which one thread alone would never pass), and every
    log is recovered as one thread recovers it: a torn tail cut, every record kept."""
    with LogManager(str(tmp_path)) as manager:
        for partition in range(6):
            manager.get_or_create_log("t", partition).append(make_batch(5))
    for name in (CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_FILE):
        os.unlink(tmp_path / name)
    for partition in range(6):
        with open(tmp_path / f"t-{partition}" / f"{0:020d}.log", "ab") as torn:
            torn.write(make_batch(5, 5)[:30])
    barrier = threading.Barrier(2, timeout=30)
    real_open = PartitionLog.open.__func__

    def open_together(cls, directory, *args, **kwargs):
        if directory.endswith(("t-0", "t-1")):
            barrier.wait()
        return real_open(cls, directory, *args, **kwargs)

    monkeypatch.setattr(PartitionLog, "open", classmethod(open_together))
    with LogManager(str(tmp_path), recovery_threads=2) as manager:
        assert not manager.had_clean_shutdown
        for partition in range(6):
            log = manager.get_log("t", partition)
            assert log.log_end_offset == 5
            assert [r.offset for r in read_all(log)] == list(range(5))
