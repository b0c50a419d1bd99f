"""SIGKILL of a cleaning process at every step: the log reopened after it holds the latest record
of every key, once, at its offset, and cleans to the same result as a log never interrupted.

The kills are real (``cleaner_process`` SIGKILLs itself); which step it dies at is chosen by a
hook in that process, since a kill from outside would hit a step only by chance."""

import os
import shutil
import signal
import subprocess
import sys

import pytest

from broker.log.partition_log import PartitionLog

from .cleaning import assert_compacted, clean_to_the_end, compacted_config, fill, now_ms
from .util import read_all

STEPS = ["writing", "cleaned", "swap", "replacing", "swapped"]


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    """A log of ~2 KiB segments, cleaned in groups of several (8 KiB), and the records appended to it."""
    directory = tmp_path_factory.mktemp("original")
    log = PartitionLog.open(str(directory / "topic-0"), compacted_config(segment_bytes=8192))
    appended = []
    for _ in range(20):
        appended += fill(log, 20, keys=150, timestamp=now_ms())
        log.roll()
    log.close()
    return directory, appended


def run_cleaner(log_dir, step: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tests.log.cleaner_process", str(log_dir), step],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=os.getcwd(),
    )


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_loses_and_duplicates_nothing(tmp_path, original, step):
    source, appended = original
    shutil.copytree(source, tmp_path / "log")
    killed = run_cleaner(tmp_path / "log", step)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    reopened = PartitionLog.open(
        str(tmp_path / "log" / "topic-0"), compacted_config(segment_bytes=8192), recovery_point=0
    )
    assert_compacted(reopened, appended)  # every key's latest record, offsets unique, nothing invented
    assert not [n for n in os.listdir(reopened.directory) if n.endswith((".cleaned", ".swap", ".deleted"))]
    clean_to_the_end(reopened, tmp_path / "log")
    reopened.close()

    shutil.copytree(source, tmp_path / "reference")
    assert run_cleaner(tmp_path / "reference", "none").stdout == "done\n"
    reference = PartitionLog.open(str(tmp_path / "reference" / "topic-0"), compacted_config(segment_bytes=8192))
    resumed = PartitionLog.open(str(tmp_path / "log" / "topic-0"), compacted_config(segment_bytes=8192))
    assert read_all(resumed) == read_all(reference)
