"""The fsync a log file gets before its descriptor is closed as idle (``open_files``).

A failed write-back (the disk is full, or failing) is reported to an ``fsync``, not to ``close``;
once the last descriptor of a file is closed the kernel may forget the error with the inode, so a
later flush through a new descriptor would succeed over data that never reached the disk. So a
file with writes no fsync has covered is fsynced before it is let go, and a failure is kept for
good: the flushes of its segment raise it from then on (a storage error of its partition, whose
appends stop too) until a restart recovers the log from its last flushed offset.
"""

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from typing import BinaryIO

from .errors import LogStorageError

log = logging.getLogger(__name__)


class WriteBack:
    """The writes through a file's descriptors, how many an fsync covered, and the error of a
    failed fsync at release (``error``, a LogStorageError, or None)."""

    def __init__(self, path: str):
        self.path = path
        self.error: LogStorageError | None = None
        self._writes = 0
        self._synced = 0
        self._lock = threading.Lock()  # a release (fsync, then let go) and a write never overlap

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Around each write to the file."""
        with self._lock:
            try:
                yield
            finally:
                self._writes += 1

    def fsync(self, file: BinaryIO) -> None:
        """fsync ``file`` (a flush); the kept error instead if a write-back failed before."""
        if self.error is not None:
            raise self.error
        writes = self._writes
        os.fsync(file.fileno())
        self._synced = max(self._synced, writes)

    def release(self, file: BinaryIO | None, let_go: Callable[[], None]) -> None:
        """``let_go()`` of ``file`` (None if not open), after an fsync if writes are not covered by one.
        A file being written is not idle: it is kept."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if file is not None and self._writes != self._synced:
                writes = self._writes
                try:
                    os.fsync(file.fileno())
                    self._synced = writes
                except OSError as exc:
                    self.error = LogStorageError(
                        f"{self.path}: writing its data back to disk failed when its idle descriptor was "
                        f"closed ({exc.strerror or exc}); it may not be on disk until a restart recovers it"
                    )
                    log.error("%s", self.error)
            let_go()
        finally:
            self._lock.release()
