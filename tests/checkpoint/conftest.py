"""Fixtures of the checkpoint tests: ``open_dir``, both implementations of the checkpoint's
``Location`` (pyarrow, and Hadoop's FileSystem in the test session's Spark driver), and real child
Python processes (to kill with SIGKILL mid-way or to hold a lock from another pid), each killed and
reaped at the end of the test."""

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from spark_kafka_source.checkpoint import ArrowLocation, Location
from spark_kafka_source.checkpoint.hadoop_location import HadoopLocation, hadoop_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["pyarrow", "hadoop"])
def open_dir(request) -> Callable[[str], Location]:
    """Opens a path or URI as a Location of one implementation; a test using it runs with each."""
    if request.param == "pyarrow":
        return ArrowLocation
    hadoop = hadoop_of(request.getfixturevalue("spark"))
    return lambda uri: HadoopLocation(uri, hadoop)


class Children:
    def __init__(self, directory: Path):
        self.directory = directory
        self.started: list[tuple[subprocess.Popen, Path]] = []

    def start(self, code: str, *args) -> subprocess.Popen:
        """Run ``code`` (dedented) in a new interpreter with ``args`` in ``sys.argv[1:]``; its
        output goes to a file, see ``output``."""
        output = self.directory / f"child-{len(self.started)}.out"
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        with open(output, "wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                cwd=ROOT,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        self.started.append((process, output))
        return process

    def output(self, process: subprocess.Popen) -> str:
        path = next(out for p, out in self.started if p is process)
        return path.read_text(errors="replace")[-3000:]

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL and reap (a reaped process leaves no zombie that still answers ``kill(pid, 0)``)."""
        if process.poll() is None:
            process.kill()
        process.wait(10)

    def stop_all(self) -> None:
        for process, _ in self.started:
            self.kill(process)


@pytest.fixture
def children(tmp_path):
    started = Children(tmp_path)
    yield started
    started.stop_all()
