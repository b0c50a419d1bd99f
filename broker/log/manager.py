"""The log manager: every partition log in one log directory, and the directory-wide files.

It owns, as Kafka's ``LogManager`` does:

* the ``.lock`` file (an exclusive lock, so two processes cannot open the same directory),
* ``meta.properties`` (which broker and cluster the directory belongs to),
* ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint``, written periodically
  and at shutdown,
* ``.kafka_cleanshutdown``: written after a clean shutdown flushed everything; when present at
  start the logs skip recovery; it is deleted once the logs are loaded,
* the background tasks: checkpoints, retention, flushes, and delayed segment deletion,
* stray partition directories (``<topic>-<partition>.<id>-stray``): set aside for a person to look
  at (the cluster no longer assigns them to this broker), kept, never loaded again,
* the log cleaner (``log_cleaner``), which compacts the logs whose ``cleanup.policy`` says so.

At start the logs are loaded (and, after an unclean stop, recovered) by ``recovery_threads``
threads, Kafka's ``num.recovery.threads.per.data.dir``: each log is one task.
"""

import base64
import fcntl
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from broker.common.clock import Clock, wall_clock_ms
from broker.common.files import fsync_directory, write_atomically

from . import checkpoints, open_files
from .checkpoints import LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE
from .config import LogConfig
from .errors import LogDirConfigError, LogDirInUseError, LogError, LogStorageError
from .log_cleaner import DEFAULT_CLEANER_SETTINGS, CleanerSettings, LogCleaner
from .open_files import OPEN_FILES
from .partition_log import PartitionLog, parse_directory_name
from .scheduler import Scheduler

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
META_PROPERTIES_FILE = "meta.properties"
DELETE_DIR_SUFFIX = "-delete"
STRAY_DIR_SUFFIX = "-stray"
MAX_FILE_NAME = 255
_SHUTDOWN_FLUSH_THREADS = 8  # fsyncs in parallel share the filesystem's journal commits


class LogManager:
    """Opens, creates, deletes and maintains the partition logs under ``log_dir``."""

    def __init__(
        self,
        log_dir: str,
        default_config: LogConfig | None = None,
        *,
        broker_id: int = 0,
        cluster_id: str | None = None,
        topic_config: Callable[[str], LogConfig] | None = None,
        recovery_threads: int = 1,
        checkpoint_interval_ms: int = 60_000,
        retention_check_interval_ms: int = 300_000,
        cleaner_settings: CleanerSettings = DEFAULT_CLEANER_SETTINGS,
        clock: Clock = wall_clock_ms,
    ):
        """``topic_config(topic)`` returns the LogConfig of a topic (default: ``default_config``).
        ``clock`` is the time the logs and the cleaner go by.
        ``cluster_id``, when given (a cluster registry's), is the cluster the directory must belong
        to: a new directory is stamped with it, one of another cluster is refused."""
        self.log_dir = os.path.abspath(log_dir)
        self.default_config = default_config or LogConfig()
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._topic_config = topic_config or (lambda topic: self.default_config)
        self._recovery_threads = recovery_threads
        self._checkpoint_interval_ms = checkpoint_interval_ms
        self._retention_check_interval_ms = retention_check_interval_ms
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._lock = threading.Lock()
        self._lock_fd = -1
        self._scheduler: Scheduler | None = None
        self._cleaner_settings = cleaner_settings
        self._clock = clock
        self.cleaner: LogCleaner | None = None
        self.had_clean_shutdown = False

    # -- start-up ------------------------------------------------------------------------

    def open(self) -> "LogManager":
        """Lock the directory, load every log (recovering after an unclean stop), start background tasks."""
        os.makedirs(self.log_dir, exist_ok=True)
        self._take_lock()
        try:
            self._check_meta_properties()
            scheduler = self._scheduler = Scheduler(f"log-manager-{self.broker_id}")
            OPEN_FILES.limit = open_files.handle_limit()
            self._load_logs()
            self._log_descriptor_needs()
            scheduler.schedule(self._checkpoint_interval_ms, self.write_checkpoints, self._checkpoint_interval_ms)
            scheduler.schedule(
                self._retention_check_interval_ms, self.enforce_retention, self._retention_check_interval_ms
            )
            self.cleaner = LogCleaner(self.log_dir, self.all_logs, self._cleaner_settings, self._clock).start()
        except BaseException:
            if self._scheduler is not None:
                self._scheduler.shutdown()
            self._release_lock()
            raise
        return self

    def _running(self) -> tuple[Scheduler, LogCleaner]:
        """The background task scheduler and the log cleaner, which ``open`` started."""
        if self._scheduler is None or self.cleaner is None:
            raise LogError(f"the log manager of {self.log_dir} is not open")
        return self._scheduler, self.cleaner

    def _take_lock(self) -> None:
        path = os.path.join(self.log_dir, LOCK_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LogDirInUseError(
                f"log directory {self.log_dir} is in use by another process "
                f"(pid {holder}); stop it or choose another --log-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = -1

    def _check_meta_properties(self) -> None:
        path = os.path.join(self.log_dir, META_PROPERTIES_FILE)
        properties = _read_properties(path)
        if not properties:
            cluster_id = self.cluster_id or new_cluster_id()
            text = f"#\nversion=0\nbroker.id={self.broker_id}\ncluster.id={cluster_id}\n"
            write_atomically(path, text.encode())
            properties = _read_properties(path)
        if properties.get("broker.id") != str(self.broker_id):
            raise LogDirConfigError(
                f"log directory {self.log_dir} belongs to broker.id={properties.get('broker.id')}, "
                f"not {self.broker_id} ({path})"
            )
        stored = properties.get("cluster.id", "")
        if self.cluster_id and stored and stored != self.cluster_id:
            raise LogDirConfigError(
                f"log directory {self.log_dir} belongs to cluster {stored}, not to cluster "
                f"{self.cluster_id} that this broker joins ({path}): is zookeeper.connect "
                f"pointing at the wrong ZooKeeper or chroot?"
            )
        self.cluster_id = stored or self.cluster_id

    def _load_logs(self) -> None:
        marker = os.path.join(self.log_dir, CLEAN_SHUTDOWN_FILE)
        self.had_clean_shutdown = os.path.exists(marker)
        recovery_points = checkpoints.read_or_empty(os.path.join(self.log_dir, RECOVERY_POINT_FILE))
        start_offsets = checkpoints.read_or_empty(os.path.join(self.log_dir, LOG_START_OFFSET_FILE))
        partitions = {}
        for name in sorted(os.listdir(self.log_dir)):
            path = os.path.join(self.log_dir, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            if name.endswith(STRAY_DIR_SUFFIX):
                continue
            try:
                topic, partition = parse_directory_name(name)
            except ValueError:
                log.warning("ignoring %s: not a partition directory", path)
                continue
            partitions[(topic, partition)] = path

        def open_log(key: tuple[str, int]) -> PartitionLog:
            opened = PartitionLog.open(
                partitions[key],
                self._topic_config(key[0]),
                recovery_point=recovery_points.get(key, 0),
                log_start_offset=start_offsets.get(key, 0),
                had_clean_shutdown=self.had_clean_shutdown,
                scheduler=self._scheduler,
                clock=self._clock,
            )
            opened.on_truncated = self._truncated
            return opened

        with ThreadPoolExecutor(self._recovery_threads, thread_name_prefix="log-recovery") as recovery:
            self._logs.update(zip(partitions, recovery.map(open_log, partitions), strict=True))
        if self.had_clean_shutdown:
            os.unlink(marker)
            fsync_directory(self.log_dir)
        if self._logs:
            log.info(
                "loaded %d log(s) from %s after %s shutdown",
                len(self._logs),
                self.log_dir,
                "a clean" if self.had_clean_shutdown else "an unclean",
            )

    def _log_descriptor_needs(self) -> None:
        segments = sum(len(lg.segments) for lg in self._logs.values())
        log.info(
            "descriptor limit %d: the logs keep at most %d files open, least recently used closed first "
            "(%d log(s), %d segment(s): %d files to keep every one open)",
            open_files.descriptor_limit(),
            OPEN_FILES.limit,
            len(self._logs),
            segments,
            3 * segments,
        )

    # -- the logs ------------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    def get_or_create_log(self, topic: str, partition: int) -> PartitionLog:
        with self._lock:
            existing = self._logs.get((topic, partition))
            if existing is not None:
                return existing
            directory = os.path.join(self.log_dir, f"{topic}-{partition}")
            new_directory = not os.path.isdir(directory)
            try:
                created = PartitionLog.open(
                    directory, self._topic_config(topic), scheduler=self._scheduler, clock=self._clock
                )
            except BaseException as exc:
                if new_directory:  # a partition is made whole or not at all (EMFILE, a full disk)
                    self._set_aside(directory, delay_ms=0)
                if isinstance(exc, OSError):
                    reason = exc.strerror or exc
                    raise LogStorageError(f"cannot create the log of {topic}-{partition}: {reason}") from exc
                raise
            created.on_truncated = self._truncated
            self._logs[(topic, partition)] = created  # before the sync: if that fails, delete_log finds it
            fsync_directory(self.log_dir)
            return created

    def _truncated(self, partition_log: PartitionLog) -> None:
        """A log was truncated (a follower): the cleaner's first dirty offset must not stay above its
        active segment, or the records written there next would count as cleaned (Kafka too)."""
        if self.cleaner is not None:
            self.cleaner.manager.truncate_checkpoint(
                partition_log.topic, partition_log.partition, partition_log.active_segment.base_offset
            )

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove a partition's log: renamed aside at once, its files deleted in the background."""
        with self._lock:
            removed = self._logs.pop((topic, partition), None)
        if removed is None:
            return False
        self._running()[1].abort(removed)
        removed.discard()  # no final time index entry or producer snapshot: on a full disk they would fail
        self._set_aside(removed.directory, removed.config.file_delete_delay_ms)
        return True

    def set_aside_stray(self, topic: str, partition: int) -> str | None:
        """Take a partition's log out of this directory's logs and rename its directory
        ``<topic>-<partition>.<id>-stray``, its files kept as they are (Kafka's stray replicas);
        the new path, None when there is no such log."""
        with self._lock:
            removed = self._logs.pop((topic, partition), None)
        if removed is None:
            return None
        self._running()[1].abort(removed)
        try:
            removed.close()
        except (LogError, OSError) as exc:  # a full disk: the files are let go of as they are
            log.warning("cannot close %s cleanly before setting it aside: %s", removed.name, exc)
            removed.discard()
        return self._rename_aside(removed.directory, STRAY_DIR_SUFFIX)

    def _set_aside(self, directory: str, delay_ms: int) -> None:
        """Rename a partition directory for deletion (needs no space nor descriptor) and remove it later."""
        doomed = self._rename_aside(directory, DELETE_DIR_SUFFIX)
        self._running()[0].schedule(delay_ms, lambda: shutil.rmtree(doomed, ignore_errors=True))

    def _rename_aside(self, directory: str, kind: str) -> str:
        """Rename a partition directory ``<name>.<id><kind>``, out of the logs' way; the new path."""
        suffix = f".{uuid.uuid4().hex}{kind}"
        name = os.path.basename(directory)[: MAX_FILE_NAME - len(suffix)]  # long topic names: Kafka cuts too
        aside = os.path.join(self.log_dir, name + suffix)
        os.rename(directory, aside)
        try:
            fsync_directory(self.log_dir)
        except OSError as exc:  # the rename stands; only a machine crash could undo it
            log.warning("cannot sync %s after setting %s aside: %s", self.log_dir, directory, exc)
        return aside

    # -- background work -----------------------------------------------------------------

    def write_checkpoints(self) -> None:
        self._write_recovery_points()
        self._write_log_start_offsets()

    def _write_recovery_points(self) -> None:
        checkpoints.write(
            os.path.join(self.log_dir, RECOVERY_POINT_FILE),
            {(lg.topic, lg.partition): lg.recovery_point for lg in self.all_logs()},
        )

    def _write_log_start_offsets(self) -> None:
        checkpoints.write(
            os.path.join(self.log_dir, LOG_START_OFFSET_FILE),
            {(lg.topic, lg.partition): lg.log_start_offset for lg in self.all_logs()},
        )

    def enforce_retention(self) -> int:
        """Apply retention to every log; return the number of segments deleted."""
        deleted = sum(lg.delete_retained_segments() for lg in self.all_logs())
        if deleted:
            self.write_checkpoints()
        return deleted

    # -- shutdown ------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Flush and close every log, write the checkpoints and, if every log was flushed and closed,
        the clean-shutdown marker; release the lock.

        Every step is attempted even after one failed (a full disk): each failure is logged in one
        line and LogStorageError raised at the end. Without the marker the next start recovers the
        logs from their recovery points, so the directory stays usable.
        """
        if self._lock_fd < 0:
            return
        scheduler, cleaner = self._running()
        cleaner.shutdown()
        scheduler.shutdown()
        failures = []

        def attempt(what: str, step: Callable[[], object]) -> None:
            try:
                step()
            except (LogError, OSError) as exc:
                failures.append(f"{what}: {exc}")
                log.error("shutdown: %s failed: %s", what, exc)

        try:
            logs = self.all_logs()
            with ThreadPoolExecutor(_SHUTDOWN_FLUSH_THREADS, thread_name_prefix="shutdown-flush") as pool:
                list(pool.map(lambda lg: attempt(f"flushing {lg.name}", lg.flush), logs))
            for partition_log in logs:
                attempt(f"closing {partition_log.name}", partition_log.close)
            logs_closed_cleanly = not failures
            attempt("writing the recovery point checkpoint", self._write_recovery_points)
            attempt("writing the log start offset checkpoint", self._write_log_start_offsets)
            if logs_closed_cleanly:
                attempt(
                    "writing the clean-shutdown marker",
                    lambda: write_atomically(
                        os.path.join(self.log_dir, CLEAN_SHUTDOWN_FILE), b'{"version":0,"brokerEpoch":-1}'
                    ),
                )
        finally:
            self._release_lock()
        if failures:
            raise LogStorageError(
                f"the shutdown of {self.log_dir} was not clean: {len(failures)} step(s) failed "
                f"(first: {failures[0]}); the next start recovers the logs"
            )

    def __enter__(self) -> "LogManager":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def new_cluster_id() -> str:
    """A random cluster id as Kafka makes them: a UUID in URL-safe base64, 22 characters."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _read_properties(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}
    properties = {}
    for line in lines:
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, _, value = line.partition("=")
            properties[key.strip()] = value.strip()
    return properties
