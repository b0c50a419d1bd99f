"""The replica manager (Kafka's ``ReplicaManager``): the partitions this broker leads or follows,
made from each cluster image the metadata source publishes, and the lookup every partition-level
request starts with, which answers Kafka's error when this broker cannot serve the partition.

It alone makes, opens, deletes and sets aside partition logs (in the log manager it holds), as the
metadata back ends ask it: ``apply`` an image, ``make_partitions`` and ``delete_partition`` for
the topic changes of a single broker, ``delete_topic_logs`` for a topic the cluster deleted,
``set_aside_strays`` at a cluster broker's start, ``reconfigure`` for changed settings.

A partition this broker leads or follows (a replica here, led by another live broker) gets its
local log from the log manager (made if missing; if it cannot be made, on a full disk, the
partition is offline here: KAFKA_STORAGE_ERROR), and the id of its topic written in its directory
(``topic_id_file``) when the image has one. A partition keeps its ``Partition`` while its leader
and leader epoch stay (an ISR change updates it in place); a new role gets a new one, which keeps
the high watermark known so far (a new follower's is marked to truncate before it fetches). The
leaders' ISR changes (``update_isrs``: followers that fell behind ``replica.lag.time.max.ms`` or
caught up again) are written through the ``isr_store`` (a cluster's state nodes) before they take
effect here; the followers' fetchers (``broker.server.replication``) find what to fetch in
``followed_by_leader``. A cluster broker's
high watermarks are checkpointed (``write_high_watermarks``, Kafka's ``replication-offset-checkpoint``)
so that after a restart its partitions start from them rather than from their log start.

Stray partitions (Kafka 3.7's stray replicas): once, at start, after the first complete image of a
cluster and before any is applied, every local log the cluster no longer assigns to this broker (its
topic is gone, has fewer partitions, places the partition on another broker, or is a newer topic of
the same name: the directory's topic id differs) is set aside as ``<topic>-<p>.<id>-stray``, kept
and never read again. A directory without a topic id (made before ids were written) is kept.

Lookups run on I/O threads while an image is applied: what they read is replaced whole, never
changed in place.
"""

import dataclasses
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple, Protocol

from broker.cluster.metadata_cache import EMPTY, NO_LEADER, ClusterImage
from broker.log import checkpoints
from broker.log.config import LogConfig
from broker.log.errors import LogError
from broker.log.manager import LogManager
from broker.log.partition_log import PartitionLog
from broker.protocol.errors import ErrorCode

from .deleted_partitions import directories_set_aside, free_files
from .partition import Partition, monotonic_ms
from .topic_id_file import read_topic_id, write_topic_id

log = logging.getLogger(__name__)

NO_EPOCH = -1  # a request that names no leader epoch (clients before KIP-320, or that do not track it)


class PartitionError(Exception):
    """This broker cannot serve the partition: the Kafka error code to answer, and why."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


class IsrStore(Protocol):
    """Where a leader writes the in-sync replicas of its partitions (``cluster.zookeeper_isr``)."""

    def write(self, topic: str, partition: int, leader: int, leader_epoch: int, isr: list[int]) -> bool: ...


class _Applied(NamedTuple):
    image: ClusterImage
    led: dict[tuple[str, int], Partition]
    followed: dict[tuple[str, int], Partition]  # replicas here of partitions another broker leads
    offline: dict[tuple[str, int], str]  # why its log cannot be opened here


class ReplicaManager:
    def __init__(self, log_manager: LogManager, node_id: int):
        self._log_manager = log_manager
        self.node_id = node_id
        self._high_watermark_file = os.path.join(log_manager.log_dir, checkpoints.HIGH_WATERMARK_FILE)
        # the high watermarks of the last run: where a partition's starts when this broker takes it
        self._checkpointed = checkpoints.read_or_empty(self._high_watermark_file)
        self._applied = _Applied(EMPTY, {}, {}, {})
        self._apply_lock = threading.Lock()
        # called after each image (on the applying thread): leadership may have moved
        self.on_apply: Callable[[], None] = lambda: None
        # replication's, called after each image (on the applying thread): followers and ISRs may have changed
        self.on_image: Callable[[], None] = lambda: None
        self.isr_store: IsrStore | None = None  # a cluster's (a single broker's partitions have no followers)

    def apply(self, image: ClusterImage) -> None:
        """Lead the partitions ``image`` gives this broker, follow those it places here under another
        leader (their logs made if missing); drop the others."""
        with self._apply_lock:
            before = self._applied
            led: dict[tuple[str, int], Partition] = {}
            followed: dict[tuple[str, int], Partition] = {}
            offline: dict[tuple[str, int], str] = {}
            for topic, states in image.topics.items():
                for index, state in enumerate(states):
                    key = (topic, index)
                    leads = state.leader == self.node_id
                    if not leads and (self.node_id not in state.replicas or state.leader == NO_LEADER):
                        continue
                    try:
                        partition_log = self._log_manager.get_or_create_log(topic, index)
                    except (OSError, LogError) as exc:
                        offline[key] = str(exc)
                        log.error("%s-%d is offline on this broker: %s", topic, index, exc)
                        continue
                    previous = before.led.get(key) or before.followed.get(key)
                    same_role = (
                        previous is not None
                        and previous.log is partition_log
                        and (previous.state.leader, previous.leader_epoch) == (state.leader, state.leader_epoch)
                    )
                    if not same_role:
                        try:
                            self._record_topic_id(partition_log, image.topic_ids.get(topic))
                        except OSError as exc:
                            offline[key] = f"cannot write its topic id: {exc.strerror or exc}"
                            log.error("%s-%d is offline on this broker: %s", topic, index, offline[key])
                            continue
                    if same_role:
                        assert previous is not None
                        if previous.state != state:
                            previous.update_state(state)
                        partition = previous
                    else:
                        known = self._checkpointed.get(key, 0) if previous is None else previous.high_watermark
                        partition = Partition(topic, index, state, partition_log, self.node_id, known)
                        if leads:
                            try:
                                partition.become_leader()
                            except OSError as exc:
                                offline[key] = f"cannot write its leader epoch: {exc.strerror or exc}"
                                log.error("%s-%d is offline on this broker: %s", topic, index, offline[key])
                                continue
                    (led if leads else followed)[key] = partition
            self._applied = _Applied(image, led, followed, offline)
        self.on_apply()
        self.on_image()

    @staticmethod
    def _record_topic_id(partition_log: PartitionLog, topic_id: int | None) -> None:
        if topic_id is not None and read_topic_id(partition_log.directory) is None:
            write_topic_id(partition_log.directory, topic_id)

    def set_aside_strays(self, image: ClusterImage) -> None:
        """Set aside the local logs ``image`` (complete, the first of this broker) does not assign
        here; one line logged for each."""
        for partition_log in self._log_manager.all_logs():
            why = _stray(image, self.node_id, partition_log)
            if why is None:
                continue
            try:
                directory = self._log_manager.set_aside_stray(partition_log.topic, partition_log.partition)
            except OSError as exc:
                log.error("cannot set aside stray partition %s: %s", partition_log.name, exc)
                continue
            log.warning("set aside stray partition %s as %s: %s", partition_log.name, directory, why)

    def make_partitions(self, topic: str, indexes: Iterable[int]) -> None:
        """Make (or open) the local logs of ``topic``'s partitions ``indexes``; OSError or LogError
        when one cannot be made (those made before it stay)."""
        for index in indexes:
            self._log_manager.get_or_create_log(topic, index)

    def delete_partition(self, topic: str, index: int) -> bool:
        """Delete a partition's local log: renamed aside ``<topic>-<p>.<id>-delete`` at once (OSError
        if it cannot be), its files removed in the background; False when there is no such log."""
        return self._log_manager.delete_log(topic, index)

    def delete_topic_logs(self, topic: str, partitions: int) -> None:
        """The cluster deleted ``topic``: delete the local logs of its ``partitions``; one that cannot be
        is logged (the next start sets it aside as a stray)."""
        for partition in range(partitions):
            try:
                if self.delete_partition(topic, partition):
                    log.info("deleted %s-%d: the topic was deleted", topic, partition)
            except OSError as exc:
                log.error("cannot delete %s-%d of deleted topic %r: %s", topic, partition, topic, exc)

    def remove_deleted(self, topic: str, indexes: Iterable[int]) -> None:
        """Remove now, whole, the directories of ``topic``'s partitions renamed aside for deletion."""
        for directory in directories_set_aside(self.log_dir, topic, indexes):
            shutil.rmtree(directory, ignore_errors=True)

    def free_deleted(self, topic: str, indexes: Iterable[int]) -> None:
        """Remove now the files of ``topic``'s partitions renamed aside for deletion, keeping their
        empty directories (the record that the deletion was committed)."""
        for directory in directories_set_aside(self.log_dir, topic, indexes):
            free_files(directory)

    def reconfigure(self, configs: Mapping[str, LogConfig]) -> None:
        """Hand the local logs of each topic of ``configs`` its new settings."""
        for partition_log in self._log_manager.all_logs():
            config = configs.get(partition_log.topic)
            if config is not None:
                partition_log.update_config(config)

    @property
    def image(self) -> ClusterImage:
        """The cluster image applied last."""
        return self._applied.image

    def led_partitions(self, topic: str) -> dict[int, Partition]:
        """The partitions of ``topic`` this broker leads, by index."""
        return {index: partition for (name, index), partition in self._applied.led.items() if name == topic}

    def followed_by_leader(self) -> dict[int, list[Partition]]:
        """The partitions this broker follows, by the id of their leader."""
        found: dict[int, list[Partition]] = {}
        for partition in self._applied.followed.values():
            found.setdefault(partition.state.leader, []).append(partition)
        return found

    def follower_partition(self, topic: str, index: int, leader_epoch: int) -> Partition | None:
        """The partition if this broker still follows it at ``leader_epoch``; else None."""
        partition = self._applied.followed.get((topic, index))
        return partition if partition is not None and partition.leader_epoch == leader_epoch else None

    def record_follower_fetch(self, partition: Partition, replica: int, fetch_offset: int) -> bool:
        """A follower's fetch from ``fetch_offset``: whether the high watermark moved. PartitionError
        when ``replica`` is no replica of the partition."""
        try:
            return partition.record_follower_fetch(replica, fetch_offset, monotonic_ms())
        except KeyError:
            raise PartitionError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"broker {replica} is not a replica of {partition.topic}-{partition.index} "
                f"(replicas {list(partition.state.replicas)})",
            ) from None

    def update_isrs(self, lag_ms: int) -> list[Partition]:
        """Shrink the ISR of each partition led here by the followers not caught up within ``lag_ms``,
        expand it by those caught up again (each written to the ISR store first: blocking); the
        partitions whose ISR changed."""
        changed: list[Partition] = []
        store = self.isr_store
        if store is None:
            return changed
        now = monotonic_ms()
        for partition in list(self._applied.led.values()):
            lagging = set(partition.lagging_in_sync(now, lag_ms))
            joining = partition.caught_up_out_of_sync()
            if not lagging and not joining:
                continue
            state = partition.state
            isr = [r for r in state.isr if r not in lagging] + joining
            if not store.write(partition.topic, partition.index, state.leader, state.leader_epoch, isr):
                continue
            log.info(
                "%s-%d: ISR %s -> %s%s%s",
                partition.topic,
                partition.index,
                list(state.isr),
                isr,
                f" ({sorted(lagging)} fell behind)" if lagging else "",
                f" ({joining} caught up)" if joining else "",
            )
            partition.update_state(dataclasses.replace(state, isr=tuple(isr)))
            changed.append(partition)
        return changed

    def leader_partition(self, topic: str, index: int, current_leader_epoch: int = NO_EPOCH) -> Partition:
        """The partition, if this broker leads it at the epoch the client knows; else PartitionError."""
        applied = self._applied
        partition = applied.led.get((topic, index))
        if partition is None:
            raise _not_served(applied, self.node_id, topic, index)
        if current_leader_epoch != NO_EPOCH and current_leader_epoch != partition.leader_epoch:
            newer = current_leader_epoch > partition.leader_epoch
            raise PartitionError(
                ErrorCode.UNKNOWN_LEADER_EPOCH if newer else ErrorCode.FENCED_LEADER_EPOCH,
                f"{topic}-{index} is at leader epoch {partition.leader_epoch}, "
                f"the request knows {current_leader_epoch}",
            )
        return partition

    def append_txn_marker(
        self, tp: tuple[str, int], producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool
    ) -> int:
        """Write a COMMIT (``commit``) or ABORT marker for the producer's transaction on a partition
        this broker leads; the marker's offset. PartitionError when the partition is not led here;
        the log's errors otherwise (InvalidProducerEpochError, TransactionCoordinatorFencedError,
        LogStorageError, LogDeletedError). Runs on an I/O thread as the partition's writer."""
        topic, index = tp
        partition = self.leader_partition(topic, index)
        return partition.append_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit)

    def local_log(self, topic: str, index: int) -> PartitionLog | None:
        """The local log of a partition, led here or not; None when there is none."""
        return self._log_manager.get_log(topic, index)

    def local_logs(self) -> list[PartitionLog]:
        """Every partition log in this broker's log directory (DescribeLogDirs)."""
        return self._log_manager.all_logs()

    @property
    def log_dir(self) -> str:
        return self._log_manager.log_dir

    def write_checkpoints(self) -> None:
        self._log_manager.write_checkpoints()

    def write_high_watermarks(self) -> None:
        """Write the high watermark of each partition held here to ``replication-offset-checkpoint``
        (Kafka's file and format), where the next start takes them up."""
        applied = self._applied
        checkpoints.write(
            self._high_watermark_file,
            {key: p.high_watermark for held in (applied.led, applied.followed) for key, p in held.items()},
        )

    def shutdown(self) -> None:
        """Flush and close every log, writing the checkpoints (the high watermarks in a cluster) and
        the clean-shutdown marker."""
        if self.isr_store is not None:
            try:
                self.write_high_watermarks()
            except OSError as exc:
                log.error("cannot write %s: %s", self._high_watermark_file, exc)
        self._log_manager.shutdown()


def _stray(image: ClusterImage, node_id: int, partition_log: PartitionLog) -> str | None:
    """Why the cluster no longer assigns a local log to this broker; None when it does."""
    topic, index = partition_log.topic, partition_log.partition
    states = image.topics.get(topic)
    if states is None:
        return f"topic {topic!r} no longer exists"
    if index >= len(states):
        return f"topic {topic!r} has {len(states)} partition(s) now"
    if node_id not in states[index].replicas:
        return f"the partition is assigned to broker(s) {list(states[index].replicas)}"
    found = read_topic_id(partition_log.directory)
    if found is not None and found != image.topic_ids.get(topic):
        return f"it belongs to an earlier topic {topic!r} (topic id {found}, now {image.topic_ids.get(topic)})"
    return None


def _not_served(applied: _Applied, node_id: int, topic: str, index: int) -> PartitionError:
    """Why this broker does not serve a partition, as Kafka answers it."""
    why_offline = applied.offline.get((topic, index))
    if why_offline is not None:
        return PartitionError(ErrorCode.KAFKA_STORAGE_ERROR, f"{topic}-{index} is offline: {why_offline}")
    states = applied.image.topics.get(topic)
    if states is None or not 0 <= index < len(states):
        return PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} does not exist")
    if states[index].leader == NO_LEADER:
        return PartitionError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{index} has no leader now")
    return PartitionError(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        f"broker {node_id} does not lead {topic}-{index} (broker {states[index].leader} does)",
    )
