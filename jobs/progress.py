"""A progress line on stderr while a Spark job runs: tasks done out of tasks, from Spark's status
tracker. On a terminal the line is redrawn in place; otherwise a line is printed when the count
changes, at most every ``INTERVAL`` seconds (so logs of scheduled runs stay short)."""

import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INTERVAL = 5.0


class SparkProgress:
    def __init__(self, spark: "SparkSession", label: str, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="load-progress", daemon=True)
        self._began = time.monotonic()

    def _counts(self) -> tuple[int, int]:
        done = total = 0
        for stage_id in self.tracker.getActiveStageIds():
            info = self.tracker.getStageInfo(stage_id)
            if info:
                done += info.numCompletedTasks
                total += info.numTasks
        return done, total

    def _watch(self) -> None:
        shown = None
        last = 0.0
        while not self._stop.wait(0.5 if self.terminal else 1.0):
            counts = self._counts()
            now = time.monotonic()
            if counts == shown or counts[1] == 0 or (not self.terminal and now - last < INTERVAL):
                continue
            shown, last = counts, now
            line = f"{self.label}: {counts[0]}/{counts[1]} tasks done, {now - self._began:.0f} s"
            self.stream.write(f"\r{line}" if self.terminal else f"{line}\n")
            self.stream.flush()
        if self.terminal and shown:
            self.stream.write("\n")

    def __enter__(self) -> "SparkProgress":
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
