"""The group coordinator on the event loop: its one timer, its store in ``__consumer_offsets``, its loading.

The coordinator (``broker.coordinator``) is sans-I/O; this runs it. Handlers start a waiting call
with ``wait`` (an asyncio future the coordinator's ``respond`` fills: a JoinGroup waiting for its
rebalance holds no thread and blocks nothing) or make a direct one with ``call``; after either,
and after every append, the single loop timer is armed for the coordinator's next deadline
(session expiry, rebalance timeouts, the initial delay, offset expiry).

Records go to ``__consumer_offsets`` through the I/O pool as the partition's writer, one batch per
commit, and the coordinator hears of them only once every in-sync replica has them (the high
watermark passed them, within ``offsets.commit.timeout.ms``, 5 s, else the commit fails
COORDINATOR_NOT_AVAILABLE), each under its log's flush policy (with
``log.flush.interval.messages=1``, on disk). The topic is created on first use (a FindCoordinator
or the first write) with ``offsets.topic.num.partitions`` partitions and
``offsets.topic.replication.factor`` replicas (3, capped by the live brokers with a warning); an
existing one keeps its count. It is compacted (``cleanup.policy=compact``), as in
Kafka: the log cleaner keeps each key's latest record, so a group's offsets take the space of its
last commit per partition, and tombstones go after ``delete.retention.ms``.
The coordinator serves the groups of the partitions this broker leads (all of them on a single
broker; in a cluster, each group's coordinator is the leader of its partition): whenever the
replica manager takes a new cluster image, a partition newly led here is read back and replayed on
the I/O pool (its groups are answered COORDINATOR_LOAD_IN_PROGRESS until then), and one led
elsewhere now is unloaded (its groups are answered NOT_COORDINATOR here). A topic that leaves the
image (deleted, or deleted and created again) takes the offsets the groups coordinated here
committed for it (tombstones, so a restart does not bring them back), and so does a topic missing
from the image when a partition's groups are loaded (deleted while another broker coordinated them).
"""

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING

from broker.common.clock import wall_clock_ms
from broker.coordinator.group_coordinator import GroupCoordinator
from broker.coordinator.offset_manager import OFFSETS_TOPIC, StoreError, replay
from broker.log.errors import LogError, LogStorageError, RecordTooLargeError
from broker.protocol.errors import ErrorCode
from broker.records import batch, record_set
from broker.replica.partition import Partition
from broker.replica.replica_manager import PartitionError

from .coordinator_loop import CoordinatorLoop
from .replication import replicated
from .topics import TopicError

if TYPE_CHECKING:  # the context holds this runtime
    from .context import BrokerContext

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 1024 * 1024
OFFSETS_COMMIT_TIMEOUT_MS = 5000  # Kafka's offsets.commit.timeout.ms


def store_error(exc: Exception) -> StoreError:
    """A failed append to ``__consumer_offsets`` as the coordinator hears of it: the error code of Kafka's append."""
    if isinstance(exc, PartitionError):
        code = exc.code  # not (or no longer) its leader
    elif isinstance(exc, TopicError):
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # the topic cannot be created
    elif isinstance(exc, RecordTooLargeError):
        code = ErrorCode.MESSAGE_TOO_LARGE
    elif isinstance(exc, (OSError, LogStorageError)):
        code = ErrorCode.KAFKA_STORAGE_ERROR
    else:
        code = ErrorCode.UNKNOWN_SERVER_ERROR
    return StoreError(code, str(exc))


def offsets_topic_configs(segment_bytes: int) -> dict[str, str]:
    """Kafka's settings of ``__consumer_offsets``."""
    return {"segment.bytes": str(segment_bytes), "cleanup.policy": "compact"}


class GroupRuntime(CoordinatorLoop):
    def __init__(self, ctx: "BrokerContext") -> None:
        super().__init__()
        self.ctx = ctx
        config = ctx.config.group
        existing = ctx.topics.partitions(OFFSETS_TOPIC)
        if existing is not None and existing != config.offsets_topic_partitions:
            log.info(
                "%s has %d partitions; offsets.topic.num.partitions=%d applies only to a new one",
                OFFSETS_TOPIC,
                existing,
                config.offsets_topic_partitions,
            )
            config = dataclasses.replace(config, offsets_topic_partitions=existing)
        self.coordinator = GroupCoordinator(config, self, wall_clock_ms)
        self._topic_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    # -- for handlers: call and wait (CoordinatorLoop) ----------------------------------------

    async def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` if it does not exist yet (TopicError if it cannot be)."""
        async with self._topic_lock:
            if self.ctx.topics.partitions(OFFSETS_TOPIC) is not None:
                return
            config = self.coordinator.config
            live = len(self.ctx.metadata.alive_brokers())
            factor = min(config.offsets_topic_replication_factor, max(live, 1))
            if factor < config.offsets_topic_replication_factor:
                # a broker alone (no ZooKeeper) has one replica of everything: no news
                log.log(
                    logging.WARNING if self.ctx.config.zookeeper_connect else logging.INFO,
                    "creating %s with replication factor %d: offsets.topic.replication.factor is %d "
                    "but only %d broker(s) are live",
                    OFFSETS_TOPIC,
                    factor,
                    config.offsets_topic_replication_factor,
                    live,
                )
            try:
                await self.ctx.io.run(
                    self.ctx.topics.create,
                    OFFSETS_TOPIC,
                    config.offsets_topic_partitions,
                    offsets_topic_configs(config.offsets_topic_segment_bytes),
                    False,
                    None,
                    factor,
                )
            except TopicError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    raise
            log.info("created %s with %d partitions", OFFSETS_TOPIC, config.offsets_topic_partitions)

    # -- the coordinator's store -----------------------------------------------------------------

    def append(self, partition: int, records: list, done) -> None:
        task = asyncio.ensure_future(self._append(partition, records, done))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _append(self, partition: int, records: list, done) -> None:
        error: StoreError | None = None
        try:
            await self.ensure_topic()
            leader, up_to = await self.ctx.io.write([(OFFSETS_TOPIC, partition)], self._append_now, partition, records)
            code, message = await replicated(self.ctx, leader, up_to, OFFSETS_COMMIT_TIMEOUT_MS)
            if code != ErrorCode.NONE:
                error = StoreError(code, message or code.name)
        except Exception as exc:  # a full disk, a storage error: the coordinator answers and keeps its cache
            error = store_error(exc)
        done(error)
        self.arm()

    def _append_now(self, partition: int, records: list) -> tuple[Partition, int]:
        """One batch of ``(key, value)`` records appended to the partition this broker leads (on an I/O
        thread): the partition and the offset the batch ends before; the replica manager's
        PartitionError if it does not lead it."""
        leader = self.ctx.replicas.leader_partition(OFFSETS_TOPIC, partition)
        now = wall_clock_ms()
        result = leader.append_records(
            batch.build([batch.Record(i, now, key, value) for i, (key, value) in enumerate(records)])
        )
        return leader, result.last_offset + 1

    # -- following the leadership of __consumer_offsets ---------------------------------------

    def start(self) -> None:
        """Coordinate the groups of the partitions led here now, and follow each change of leadership."""
        loop = asyncio.get_running_loop()
        seen = set(self.ctx.replicas.image.topics)

        def applied() -> None:  # on the applying thread, after each image: a topic gone from one is not missed
            nonlocal seen
            topics = set(self.ctx.replicas.image.topics)
            gone, seen = seen - topics, topics
            loop.call_soon_threadsafe(self.follow_metadata, gone)

        self.ctx.replicas.on_apply = applied
        self.follow_leadership()
        self.arm()  # offset expiry runs from the start

    def follow_metadata(self, gone: set[str]) -> None:
        """After a new cluster image: follow the leadership of ``__consumer_offsets``, and remove the
        offsets of the topics ``gone`` from the image since the one before."""
        self.follow_leadership()
        self.remove_deleted_topics(gone)

    def remove_deleted_topics(self, gone=frozenset()) -> None:
        """Tombstones for the groups' offsets of the topics ``gone`` and of those the image lacks."""
        if self.ctx.stopping:
            return
        existing = self.ctx.replicas.image.topics
        committed = {topic for group in self.coordinator.groups.values() for topic, _ in group.offsets}
        deleted = {topic for topic in committed if topic in gone or topic not in existing}
        if deleted:
            log.info("removing the committed offsets of deleted topics %s", ", ".join(sorted(deleted)))
            self.call(self.coordinator.remove_topics, deleted)

    def follow_leadership(self) -> None:
        """Load the partitions of ``__consumer_offsets`` this broker has come to lead (at once when
        empty, else replayed on the I/O pool), unload those it no longer leads."""
        if self.ctx.stopping:
            return
        offsets = self.coordinator.offsets
        led = {
            index: partition
            for index, partition in self.ctx.replicas.led_partitions(OFFSETS_TOPIC).items()
            if index < self.coordinator.config.offsets_topic_partitions
        }
        for index in sorted(offsets.owned - led.keys()):
            self.call(self.coordinator.unload, index)
            log.info("no longer the coordinator of the groups of %s-%d", OFFSETS_TOPIC, index)
        for index in sorted(led.keys() - offsets.owned):
            self.coordinator.begin_loading(index)
            if led[index].log_end_offset == 0:  # nothing to replay: its groups are ready at once
                self.call(self.coordinator.install, index, ({}, {}))
            else:
                task = asyncio.ensure_future(self._load(index))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _load(self, partition: int) -> None:
        try:
            replayed = await self.ctx.io.run(self._read_partition, partition)
        except (OSError, LogError) as exc:
            log.error(
                "cannot load %s-%d: %s; its groups stay unavailable until it is led here anew",
                OFFSETS_TOPIC,
                partition,
                exc,
            )
            return
        if partition in self.coordinator.offsets.loading:  # still led here
            self.call(self.coordinator.install, partition, replayed)
            log.info("loaded the groups of %s-%d", OFFSETS_TOPIC, partition)
            self.remove_deleted_topics()

    def _read_partition(self, partition: int):
        partition_log = self.ctx.replicas.local_log(OFFSETS_TOPIC, partition)
        return replay(read_records(partition_log) if partition_log is not None else ())

    async def stop(self) -> None:
        """Stop the timer and finish the appends in flight (the waiting calls were answered at the
        start of the shutdown: ``coordinator.shutdown()``)."""
        self.ctx.replicas.on_apply = lambda: None
        self.stop_timer()
        if self._tasks:
            await asyncio.wait(list(self._tasks))


def read_records(partition_log):
    """The ``(key, value)`` of every keyed data record of a coordinator's partition, from its start."""
    offset = partition_log.log_start_offset
    while True:
        found = partition_log.read(offset, READ_CHUNK_BYTES)
        if found is None:
            return
        for decoded in record_set.iter_batches(found.read()):
            offset = decoded.last_offset + 1
            if not decoded.is_control:
                for record in decoded.records:
                    if record.key is not None:
                        yield record.key, record.value
