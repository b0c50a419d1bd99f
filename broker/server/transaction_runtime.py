"""The transaction coordinator on the event loop: its timer, its store in ``__transaction_state``,
the markers it writes, and its loading.

The coordinator (``broker.coordinator.transaction_coordinator``) is sans-I/O; this runs it as
``group_runtime`` runs the group coordinator. Its records go to the id's partition of
``__transaction_state`` through the I/O pool, one batch per state change, as the partition's
writer; the topic is created on first use with ``transaction.state.log.num.partitions`` partitions
(an existing one keeps its count), compacted. The markers of a transaction are appended by this
broker to each of its partitions (``ReplicaManager.append_txn_marker``, with the coordinator epoch:
the leader epoch of the id's ``__transaction_state`` partition); a partition whose topic is gone is
skipped, as Kafka does, and any other failure (the partition is not led here) makes the coordinator
try again later. A marker in a partition of ``__consumer_offsets`` also settles the transaction's
pending offsets (TxnOffsetCommit) in the group coordinator.

Markers for partitions led by another broker (WriteTxnMarkers between brokers) are not sent yet:
in a cluster such a transaction stays prepared until its partitions are led here.

The coordinator serves the ids of the partitions of ``__transaction_state`` this broker leads,
following each change of leadership as the group coordinator does: a partition newly led here is
replayed on the I/O pool (its ids are answered COORDINATOR_LOAD_IN_PROGRESS until then), which
completes the transactions it left prepared; one led elsewhere now is unloaded.
"""

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING

from broker.common.clock import wall_clock_ms
from broker.coordinator.offset_manager import OFFSETS_TOPIC, StoreError
from broker.coordinator.transaction_coordinator import (
    TRANSACTION_STATE_TOPIC,
    Done,
    Markers,
    Record,
    TransactionCoordinator,
    replay,
)
from broker.log.errors import LogError
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.replica.replica_manager import PartitionError

from .coordinator_loop import CoordinatorLoop
from .group_runtime import read_records, store_error
from .topics import TopicError

if TYPE_CHECKING:  # the context holds this runtime
    from .context import BrokerContext

log = logging.getLogger(__name__)


def transaction_topic_configs(segment_bytes: int) -> dict[str, str]:
    """Kafka's settings of ``__transaction_state``."""
    return {"segment.bytes": str(segment_bytes), "cleanup.policy": "compact", "compression.type": "uncompressed"}


class TransactionRuntime(CoordinatorLoop):
    def __init__(self, ctx: "BrokerContext") -> None:
        super().__init__()
        self.ctx = ctx
        config = ctx.config.transaction
        existing = ctx.topics.partitions(TRANSACTION_STATE_TOPIC)
        if existing is not None and existing != config.state_log_partitions:
            log.info(
                "%s has %d partitions; transaction.state.log.num.partitions=%d applies only to a new one",
                TRANSACTION_STATE_TOPIC,
                existing,
                config.state_log_partitions,
            )
            config = dataclasses.replace(config, state_log_partitions=existing)
        self.coordinator = TransactionCoordinator(config, self, wall_clock_ms)
        self._topic_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    async def ensure_topic(self) -> None:
        """Create ``__transaction_state`` if it does not exist yet (TopicError if it cannot be)."""
        async with self._topic_lock:
            if self.ctx.topics.partitions(TRANSACTION_STATE_TOPIC) is not None:
                return
            config = self.coordinator.config
            try:
                await self.ctx.io.run(
                    self.ctx.topics.create,
                    TRANSACTION_STATE_TOPIC,
                    config.state_log_partitions,
                    transaction_topic_configs(config.state_log_segment_bytes),
                )
            except TopicError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    raise
            log.info("created %s with %d partitions", TRANSACTION_STATE_TOPIC, config.state_log_partitions)

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the coordinator's store -----------------------------------------------------------------

    def append(self, partition: int, records: list[Record], done: Done) -> None:
        self._spawn(self._append(partition, records, done))

    async def _append(self, partition: int, records: list[Record], done: Done) -> None:
        error: StoreError | None = None
        try:
            await self.ctx.io.write([(TRANSACTION_STATE_TOPIC, partition)], self._append_now, partition, records)
        except Exception as exc:  # a full disk, a storage error: the coordinator answers and keeps its cache
            error = store_error(exc)
        self.call(done, error)

    def _append_now(self, partition: int, records: list[Record]) -> None:
        leader = self.ctx.replicas.leader_partition(TRANSACTION_STATE_TOPIC, partition)
        now = wall_clock_ms()
        leader.append_records(batch.build([batch.Record(i, now, key, value) for i, (key, value) in enumerate(records)]))

    def write_markers(self, markers: Markers, done: Done) -> None:
        self._spawn(self._write_markers(markers, done))

    async def _write_markers(self, markers: Markers, done: Done) -> None:
        error: StoreError | None = None
        for tp in sorted(markers.partitions):
            try:
                await self.ctx.io.write(
                    [tp],
                    self.ctx.replicas.append_txn_marker,
                    tp,
                    markers.producer_id,
                    markers.producer_epoch,
                    markers.coordinator_epoch,
                    markers.commit,
                )
            except PartitionError as exc:
                if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    error = store_error(exc)
                else:  # the topic is gone: nothing to mark (Kafka drops the partition too)
                    log.info("no marker for %s-%d: %s", tp[0], tp[1], exc)
                continue
            except Exception as exc:  # a full disk, a storage error: the coordinator tries again later
                error = store_error(exc)
                continue
            if tp[0] == OFFSETS_TOPIC:
                self.ctx.groups.call(
                    self.ctx.groups.coordinator.complete_txn_offsets, tp[1], markers.producer_id, markers.commit
                )
        self.call(done, error)

    # -- following the leadership of __transaction_state -----------------------------------------

    def start(self) -> None:
        """Coordinate the ids of the partitions led here now, and follow each change of leadership."""
        loop = asyncio.get_running_loop()
        before = self.ctx.replicas.on_apply  # the group coordinator's: both follow each image

        def applied() -> None:
            before()
            loop.call_soon_threadsafe(self.follow_leadership)

        self.ctx.replicas.on_apply = applied
        self.follow_leadership()
        self.arm()

    def follow_leadership(self) -> None:
        if self.ctx.stopping:
            return
        coordinator = self.coordinator
        led = {
            index: partition
            for index, partition in self.ctx.replicas.led_partitions(TRANSACTION_STATE_TOPIC).items()
            if index < coordinator.config.state_log_partitions
        }
        served = coordinator.owned.keys() | coordinator.loading
        for index in sorted(served - led.keys()):
            self.call(coordinator.unload, index)
            log.info("no longer the coordinator of the transactions of %s-%d", TRANSACTION_STATE_TOPIC, index)
        for index in sorted(led.keys() - served):
            coordinator.begin_loading(index)
            if led[index].high_watermark == 0:  # nothing to replay: its ids are served at once
                self.call(coordinator.install, index, led[index].leader_epoch, {})
            else:
                self._spawn(self._load(index, led[index].leader_epoch))

    async def _load(self, partition: int, coordinator_epoch: int) -> None:
        try:
            replayed = await self.ctx.io.run(self._read_partition, partition)
        except (OSError, LogError) as exc:
            log.error(
                "cannot load %s-%d: %s; its transactions stay unavailable until it is led here anew",
                TRANSACTION_STATE_TOPIC,
                partition,
                exc,
            )
            return
        if partition in self.coordinator.loading:  # still led here
            self.call(self.coordinator.install, partition, coordinator_epoch, replayed)
            if replayed:
                log.info("loaded %d transactional ids of %s-%d", len(replayed), TRANSACTION_STATE_TOPIC, partition)

    def _read_partition(self, partition: int):
        partition_log = self.ctx.replicas.local_log(TRANSACTION_STATE_TOPIC, partition)
        return replay(read_records(partition_log) if partition_log is not None else ())

    async def stop(self) -> None:
        """Stop the timer and finish the appends and markers in flight."""
        self.stop_timer()
        if self._tasks:
            await asyncio.wait(list(self._tasks))
