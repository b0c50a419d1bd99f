"""The replica manager (Kafka's ``ReplicaManager``): the partitions this broker leads, made from
each cluster image the metadata source publishes, and the lookup every partition-level request
starts with, which answers Kafka's error when this broker cannot serve the partition.

It alone makes, opens, deletes and sets aside partition logs (in the log manager it holds), as the
metadata back ends ask it: ``apply`` an image, ``make_partitions`` and ``delete_partition`` for
the topic changes of a single broker, ``delete_topic_logs`` for a topic the cluster deleted,
``set_aside_strays`` at a cluster broker's start, ``reconfigure`` for changed settings.

A partition this broker leads gets its local log from the log manager (made if missing; if it
cannot be made, on a full disk, the partition is offline here: KAFKA_STORAGE_ERROR), and the id of
its topic written in its directory (``topic_id_file``) when the image has one; a partition
led elsewhere, or by no one, is not held here.

Stray partitions (Kafka 3.7's stray replicas): once, at start, after the first complete image of a
cluster and before any is applied, every local log the cluster no longer assigns to this broker (its
topic is gone, has fewer partitions, places the partition on another broker, or is a newer topic of
the same name: the directory's topic id differs) is set aside as ``<topic>-<p>.<id>-stray``, kept
and never read again. A directory without a topic id (made before ids were written) is kept.

Lookups run on I/O threads while an image is applied: what they read is replaced whole, never
changed in place.
"""

import logging
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from broker.cluster.metadata_cache import EMPTY, NO_LEADER, ClusterImage
from broker.common.clock import wall_clock_ms
from broker.log.config import LogConfig
from broker.log.errors import LogError
from broker.log.manager import LogManager
from broker.log.partition_log import PartitionLog
from broker.protocol.errors import ErrorCode
from broker.records import batch

from .deleted_partitions import directories_set_aside, free_files
from .partition import Partition
from .topic_id_file import read_topic_id, write_topic_id

log = logging.getLogger(__name__)

NO_EPOCH = -1  # a request that names no leader epoch (clients before KIP-320, or that do not track it)


class PartitionError(Exception):
    """This broker cannot serve the partition: the Kafka error code to answer, and why."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


class _Applied(NamedTuple):
    image: ClusterImage
    led: dict[tuple[str, int], Partition]
    offline: dict[tuple[str, int], str]  # why its log cannot be opened here


class ReplicaManager:
    def __init__(self, log_manager: LogManager, node_id: int):
        self._log_manager = log_manager
        self.node_id = node_id
        self._applied = _Applied(EMPTY, {}, {})
        self._apply_lock = threading.Lock()
        # called after each image (on the applying thread): leadership may have moved
        self.on_apply: Callable[[], None] = lambda: None

    def apply(self, image: ClusterImage) -> None:
        """Lead the partitions ``image`` gives this broker (their logs made if missing); drop the others."""
        with self._apply_lock:
            before = self._applied.led
            led: dict[tuple[str, int], Partition] = {}
            offline: dict[tuple[str, int], str] = {}
            for topic, states in image.topics.items():
                for index, state in enumerate(states):
                    key = (topic, index)
                    if state.leader != self.node_id:
                        continue
                    try:
                        partition_log = self._log_manager.get_or_create_log(topic, index)
                    except (OSError, LogError) as exc:
                        offline[key] = str(exc)
                        log.error("%s-%d is offline on this broker: %s", topic, index, exc)
                        continue
                    unchanged = key in before and before[key].state == state and before[key].log is partition_log
                    if not unchanged:
                        try:
                            self._record_topic_id(partition_log, image.topic_ids.get(topic))
                        except OSError as exc:
                            offline[key] = f"cannot write its topic id: {exc.strerror or exc}"
                            log.error("%s-%d is offline on this broker: %s", topic, index, offline[key])
                            continue
                    led[key] = before[key] if unchanged else Partition(topic, index, state, partition_log)
            self._applied = _Applied(image, led, offline)
        self.on_apply()

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
        """Append a COMMIT or ABORT marker of ``producer_id``'s transaction to a partition led here
        (PartitionError if it is not); its offset."""
        partition = self.leader_partition(*tp)
        key, value = batch.control_record(
            batch.ControlType.COMMIT if commit else batch.ControlType.ABORT, coordinator_epoch
        )
        marker = batch.build(
            [batch.Record(0, wall_clock_ms(), key, value)],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            is_transactional=True,
            is_control=True,
        )
        return partition.log.append(marker, leader_epoch=partition.leader_epoch, from_coordinator=True).first_offset

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

    def shutdown(self) -> None:
        """Flush and close every log, writing the checkpoints and the clean-shutdown marker."""
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
