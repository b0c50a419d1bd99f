"""The background cleaner threads: Kafka's ``LogCleaner``.

Each of ``log.cleaner.threads`` threads asks the ``LogCleanerManager`` for the filthiest
compacted log, cleans it (``cleaner.Cleaner``, with its share of
``log.cleaner.dedupe.buffer.size``), records where its dirty part now starts, and sleeps
``log.cleaner.backoff.ms`` when no log needs cleaning. All disk work happens on these threads,
never on the server's event loop; a log is locked only for the moment a cleaned segment is
swapped in. A pass that failed on a storage error is logged and the log is tried again after the
back-off; any other failure (a corrupt batch) marks the log uncleanable until a restart, as Kafka
does. Either way the groups swapped in before the failure stay (they are complete) and the
others are untouched.
"""

import dataclasses
import logging
import threading
from collections.abc import Callable

from broker.common.clock import Clock, wall_clock_ms

from .cleaner import Cleaner, CleaningAborted
from .cleaner_manager import LogCleanerManager
from .errors import LogError
from .partition_log import PartitionLog

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class CleanerSettings:
    """The broker's ``log.cleaner.*`` settings (Kafka's defaults)."""

    enable: bool = True
    threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    backoff_ms: int = 15_000


DEFAULT_CLEANER_SETTINGS = CleanerSettings()


class LogCleaner:
    def __init__(
        self,
        log_dir: str,
        all_logs: Callable[[], list[PartitionLog]],
        settings: CleanerSettings = DEFAULT_CLEANER_SETTINGS,
        clock: Clock = wall_clock_ms,
    ):
        """``clock`` is the time min/max.compaction.lag.ms and delete.retention.ms go by."""
        self.settings = settings
        self._clock = clock
        self.manager = LogCleanerManager(log_dir, all_logs)
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(i,), name=f"log-cleaner-{i}", daemon=True)
            for i in range(settings.threads if settings.enable else 0)
        ]

    def start(self) -> "LogCleaner":
        for thread in self._threads:
            thread.start()
        return self

    def abort(self, partition_log: PartitionLog) -> None:
        """Stop cleaning ``partition_log`` (it is being deleted) and forget its first dirty offset."""
        self.manager.abort_and_wait(partition_log)
        self.manager.forget(partition_log.topic, partition_log.partition)

    def shutdown(self, timeout: float = 60.0) -> None:
        self._stopping.set()
        self.manager.abort_and_wait(None, timeout)
        for thread in self._threads:
            thread.join(timeout)

    def _run(self, number: int) -> None:
        cleaner = Cleaner(self.settings.dedupe_buffer_size // len(self._threads), self._should_abort)
        while not self._stopping.is_set():
            if not self.clean_filthiest(cleaner):
                self._stopping.wait(self.settings.backoff_ms / 1000)

    def _should_abort(self, partition_log: PartitionLog) -> bool:
        return self._stopping.is_set() or self.manager.should_abort(partition_log)

    def clean_filthiest(self, cleaner: Cleaner) -> bool:
        """Clean the log that needs it most; False if none does or the pass failed (back off)."""
        now_ms = self._clock()
        found = self.manager.grab_filthiest(now_ms)
        if found is None:
            return False
        first_dirty = None
        name = found.log.name
        try:
            first_dirty, stats = cleaner.clean(found.log, found.first_dirty, found.first_uncleanable, now_ms)
            mb = stats.bytes_read / 1e6
            log.info(
                "%s: cleaned [%d, %d): read %.2f MB in %.2f s (%.1f MB/s), wrote %.2f MB, kept %d of %d records",
                name,
                found.first_dirty,
                first_dirty,
                mb,
                stats.seconds,
                mb / max(stats.seconds, 1e-6),
                stats.bytes_written / 1e6,
                stats.records_kept,
                stats.records_read,
            )
        except CleaningAborted as exc:
            log.info("%s", exc)
        except (LogError, OSError) as exc:
            log.error("%s: cleaning failed; tried again in %d ms: %s", name, self.settings.backoff_ms, exc)
            return False
        except Exception:  # a corrupt batch, a bug: as Kafka, leave this log alone until a restart
            log.exception("%s: cleaning failed; the log is not cleaned again until the broker restarts", name)
            self.manager.mark_uncleanable(found.log)
            return False
        finally:
            self.manager.done_cleaning(found.log, first_dirty)
        return True
