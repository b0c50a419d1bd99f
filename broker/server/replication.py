"""Replication's tasks on the broker's event loop: the replica fetchers (Kafka's
``ReplicaFetcherThread``) and the leader's periodic ISR check.

One fetcher task runs per broker that leads partitions this broker follows. A partition that has
just become a follower first cuts what its leader does not have (Kafka's leader-epoch rule): the
fetcher asks the leader where the partition's latest leader epoch ends (OffsetForLeaderEpoch v3),
again for an older epoch while the answer names one this log never had, and truncates there (a
log with no epoch: at its high watermark); a fetch answered OFFSET_OUT_OF_RANGE truncates again
the same way, or restarts the log at the leader's log start when it ends below it. Then it sends
that broker real Fetch requests (v11, ``replica_id`` this broker's id, so a follower's traffic is
visible to tools) from each followed partition's log end offset, and appends what comes back as the leader
wrote it (``Partition.append_as_follower``, on the I/O pool, the partition's writer), taking the
leader's high watermark. Fetchers start and end as the replica manager's images change who follows
what (each image also wakes the requests waiting on a high watermark); a connection that fails is
opened again after a back-off, and a partition the leader answers with an error is tried again
after one (the next image brings its new leader or leader epoch). The leader is reached at its
PLAINTEXT listener: a cluster without one does not replicate.

``replicated`` is the wait of a write that needs every in-sync replica (a produce with acks=all,
a group coordinator's write to ``__consumer_offsets``), woken as the high watermark moves.

The ISR check (every ``replica.lag.time.max.ms`` / 2, at most every second) shrinks and grows the
ISR of the partitions led here (``ReplicaManager.update_isrs``, its ZooKeeper writes on the I/O
pool) and wakes the requests waiting on their high watermark; every 5 s it also checkpoints the
high watermarks (``replication-offset-checkpoint``).
"""

import asyncio
import logging
import time

from broker.log.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from broker.protocol import frames
from broker.protocol.apis import APIS, ApiKey
from broker.protocol.errors import ErrorCode
from broker.protocol.leader_epochs import EpochQuery, epoch_end_offsets, offset_for_leader_epoch_body
from broker.protocol.types import ProtocolError, Reader
from broker.replica.partition import Partition

log = logging.getLogger(__name__)

FETCH_VERSION = 11  # the last non-flexible version: every broker of the cluster runs this code
EPOCHS_VERSION = 3  # OffsetForLeaderEpoch's last non-flexible version, with replica_id
FETCH_MAX_WAIT_MS = 500
PARTITION_MAX_BYTES = 1024 * 1024  # Kafka's replica.fetch.max.bytes
BACKOFF_SECONDS = 1.0  # Kafka's replica.fetch.backoff.ms
RESPONSE_TIMEOUT_SECONDS = 30.0
HIGH_WATERMARK_CHECKPOINT_SECONDS = 5.0  # Kafka's replica.high.watermark.checkpoint.interval.ms


class Replication:
    def __init__(self, ctx):
        self._ctx = ctx
        self._fetchers: dict[int, asyncio.Task] = {}
        self._isr_check: asyncio.Task | None = None

    def start(self) -> None:
        """Start the ISR check and the fetchers the current image needs (on the event loop)."""
        loop = asyncio.get_running_loop()
        self._ctx.replicas.on_image = lambda: loop.call_soon_threadsafe(self._image_applied)
        if self._ctx.replicas.isr_store is not None:  # a single broker's partitions have no followers
            self._isr_check = asyncio.ensure_future(self._check_isrs())
        self.follow()

    def _image_applied(self) -> None:
        """Follow the partitions the new image places here, and wake the requests waiting on a high
        watermark or an ISR that the image may have changed (acks=all produces, long polls)."""
        self.follow()
        self._ctx.waiters.notify_all()

    def follow(self) -> None:
        """Start a fetcher for each leader of partitions followed here that has none."""
        if self._ctx.stopping:
            return
        for leader in self._ctx.replicas.followed_by_leader().keys() - self._fetchers.keys():
            self._fetchers[leader] = asyncio.ensure_future(self._fetch_from(leader))

    async def stop(self) -> None:
        self._ctx.replicas.on_image = lambda: None
        tasks = [*self._fetchers.values(), *([self._isr_check] if self._isr_check else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- the leader's ISR check ----------------------------------------------------------

    async def _check_isrs(self) -> None:
        lag_ms = self._ctx.config.replica_lag_time_max_ms
        interval = min(lag_ms / 2, 1000) / 1000
        next_checkpoint = time.monotonic() + HIGH_WATERMARK_CHECKPOINT_SECONDS
        while not self._ctx.stopping:
            await asyncio.sleep(interval)
            if time.monotonic() >= next_checkpoint:
                next_checkpoint = time.monotonic() + HIGH_WATERMARK_CHECKPOINT_SECONDS
                try:
                    await self._ctx.io.run(self._ctx.replicas.write_high_watermarks)
                except OSError as exc:
                    log.error("cannot checkpoint the high watermarks: %s", exc)
            try:
                changed = await self._ctx.io.run(self._ctx.replicas.update_isrs, lag_ms)
            except Exception as exc:  # ZooKeeper away: the next check tries again
                log.warning("cannot update the in-sync replicas now: %r", exc)
                continue
            for partition in changed:
                self._ctx.waiters.notify((partition.topic, partition.index))

    # -- a follower's fetcher ------------------------------------------------------------

    async def _fetch_from(self, leader: int) -> None:
        try:
            while not self._ctx.stopping and self._followed(leader):
                address = self._address(leader)
                if address is None:
                    log.error("broker %d has no PLAINTEXT listener: its partitions cannot be replicated", leader)
                    await asyncio.sleep(BACKOFF_SECONDS)
                    continue
                writer = None
                try:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), RESPONSE_TIMEOUT_SECONDS)
                    await self._fetch_loop(leader, reader, writer)
                except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ProtocolError) as exc:
                    log.warning("fetching from broker %d at %s:%d failed: %r; trying again", leader, *address, exc)
                    await asyncio.sleep(BACKOFF_SECONDS)
                finally:
                    if writer is not None:
                        writer.close()
        finally:
            self._fetchers.pop(leader, None)
            if self._followed(leader):  # followed again between the last look and the end of this task
                self.follow()

    def _followed(self, leader: int) -> list[Partition]:
        return self._ctx.replicas.followed_by_leader().get(leader, [])

    def _address(self, leader: int) -> tuple[str, int] | None:
        broker = next((b for b in self._ctx.replicas.image.brokers if b.node_id == leader), None)
        return None if broker is None or broker.host is None else (broker.host, broker.port)

    async def _fetch_loop(self, leader: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        exchange = _Exchange(leader, f"replica-fetcher-{self._ctx.replicas.node_id}", reader, writer)
        node_id = self._ctx.replicas.node_id
        failing: set[tuple[str, int]] = set()
        while not self._ctx.stopping:
            followed = self._followed(leader)
            if not followed:
                return
            truncating = [p for p in followed if p.needs_truncation]
            failed = await self._truncate(exchange, truncating, failing) if truncating else set()
            partitions = {(p.topic, p.index): p for p in followed if not p.needs_truncation}
            if partitions:
                response = await exchange.call(ApiKey.FETCH, FETCH_VERSION, _request(node_id, partitions))
                if response["error_code"] != ErrorCode.NONE:
                    error = ErrorCode(response["error_code"]).name
                    raise ProtocolError(f"broker {leader} refused the fetch: {error}")
                for topic in response["responses"]:
                    for answer in topic["partitions"]:
                        key = (topic["topic"], answer["partition_index"])
                        partition = partitions.get(key)
                        if partition is None:
                            continue
                        if not await self._take(leader, partition, answer, key in failing):
                            failed.add(key)
            failing = failed
            if len(failing) >= len(followed):
                await asyncio.sleep(BACKOFF_SECONDS)

    async def _truncate(
        self, exchange: "_Exchange", partitions: list[Partition], failing: set[tuple[str, int]]
    ) -> set[tuple[str, int]]:
        """Cut each partition's log where the leader says its latest epoch ends (Kafka's KIP-101 and
        KIP-279 rule), asking again while the answer names an epoch this log never had; a log with
        no epoch cuts at its high watermark. The partitions that could not be cut (an error from
        the leader, logged unless in ``failing``, or from the disk) stay marked and are returned:
        the next round tries them again."""
        by_key = {(p.topic, p.index): p for p in partitions}
        cuts: dict[tuple[str, int], int] = {}
        asking: dict[tuple[str, int], EpochQuery] = {}
        for key, partition in by_key.items():
            epoch = partition.log.leader_epoch_cache.latest_epoch
            if epoch == UNDEFINED_EPOCH:
                cuts[key] = partition.truncation_for(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).offset
            else:
                asking[key] = EpochQuery(epoch, partition.leader_epoch)
        failed = set()
        while asking:
            body = offset_for_leader_epoch_body(asking, self._ctx.replicas.node_id)
            answers = epoch_end_offsets(await exchange.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, EPOCHS_VERSION, body))
            asked, asking = asking, {}
            for key in asked:
                answer = answers.get(key)
                if answer is None or answer.error_code != ErrorCode.NONE:
                    if key not in failing:
                        error = "nothing" if answer is None else ErrorCode(answer.error_code).name
                        log.warning("broker %d answers where %s-%d's epoch ends with %s", exchange.leader, *key, error)
                    cuts.pop(key, None)
                    failed.add(key)
                    continue
                truncation = by_key[key].truncation_for(answer.leader_epoch, answer.end_offset)
                cuts[key] = min(cuts.get(key, truncation.offset), truncation.offset)
                if not truncation.done:
                    asking[key] = EpochQuery(truncation.next_epoch, by_key[key].leader_epoch)
        for key, offset in cuts.items():
            try:
                await self._ctx.io.write([key], self._truncate_follower, by_key[key], offset)
            except Exception as exc:  # a failing disk: this partition waits, the others go on
                if key not in failing:
                    log.error("%s-%d cannot truncate its log to %d: %s", *key, offset, exc)
                failed.add(key)
        return failed

    def _truncate_follower(self, partition: Partition, offset: int) -> None:
        """Truncate, as the partition's writer, unless it no longer follows at the epoch asked about."""
        if self._ctx.replicas.follower_partition(partition.topic, partition.index, partition.leader_epoch) is partition:
            partition.truncate(offset)

    async def _take(self, leader: int, partition: Partition, answer: dict, failed_before: bool) -> bool:
        """Append one partition's answer; whether it was not an error (logged the first time)."""
        name = f"{partition.topic}-{partition.index}"
        error = answer["error_code"]
        if error == ErrorCode.NONE:
            records = answer["records"] or b""
            try:
                await self._ctx.io.write(
                    [(partition.topic, partition.index)],
                    partition.append_as_follower,
                    records,
                    answer["high_watermark"],
                    answer["log_start_offset"],
                )
                return True
            except Exception as exc:  # a divergent log, a full disk: this partition waits, the others go on
                if not failed_before:
                    log.error("%s cannot append what broker %d sent: %s", name, leader, exc)
                return False
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            return await self._out_of_range(leader, partition, answer["log_start_offset"])
        if not failed_before:
            log.warning("broker %d answers fetches of %s with %s", leader, name, ErrorCode(error).name)
        return False

    async def _out_of_range(self, leader: int, partition: Partition, leader_log_start: int) -> bool:
        """The leader has no records at this log's end: past the leader's end (a divergent tail), the
        partition is marked to truncate again, asking the leader where (False: not fetched this
        round); below the leader's log start, the log restarts there (whether it could)."""
        key = (partition.topic, partition.index)
        if partition.log_end_offset >= leader_log_start:
            log.warning("%s-%d: broker %d has no offset %d: truncating again", *key, leader, partition.log_end_offset)
            partition.needs_truncation = True
            return False
        try:
            await self._ctx.io.write([key], self._start_follower_at, partition, leader_log_start)
            return True
        except Exception as exc:  # a failing disk: this partition waits, the others go on
            log.error("%s-%d cannot restart its log at %d: %s", *key, leader_log_start, exc)
            return False

    def _start_follower_at(self, partition: Partition, offset: int) -> None:
        """Restart the log at ``offset``, as the partition's writer, unless it no longer follows."""
        if self._ctx.replicas.follower_partition(partition.topic, partition.index, partition.leader_epoch) is partition:
            partition.start_at(offset)


class _Exchange:
    """Requests to one leader on one connection, each read back before the next is sent."""

    def __init__(self, leader: int, client_id: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.leader = leader
        self._client_id = client_id
        self._reader = reader
        self._writer = writer
        self._correlation_id = 0

    async def call(self, api: ApiKey, version: int, body: dict) -> dict:
        """Send one request and read its response (ProtocolError when another one comes back)."""
        self._correlation_id += 1
        self._writer.write(frames.encode_request(api, version, self._correlation_id, self._client_id, body))
        await self._writer.drain()
        size = frames.SIZE.unpack(await asyncio.wait_for(self._reader.readexactly(4), RESPONSE_TIMEOUT_SECONDS))[0]
        data = await asyncio.wait_for(self._reader.readexactly(size), RESPONSE_TIMEOUT_SECONDS)
        if frames.SIZE.unpack_from(data)[0] != self._correlation_id:
            raise ProtocolError(f"broker {self.leader} answered another request than {api.name} {self._correlation_id}")
        return APIS[api].response.decode(Reader(data, 4), version)


def _request(node_id: int, partitions: dict[tuple[str, int], Partition]) -> dict:
    topics: dict[str, list[dict]] = {}
    for (topic, index), partition in partitions.items():
        topics.setdefault(topic, []).append(
            {
                "partition": index,
                "current_leader_epoch": partition.leader_epoch,
                "fetch_offset": partition.log_end_offset,
                "log_start_offset": partition.log_start_offset,
                "partition_max_bytes": PARTITION_MAX_BYTES,
            }
        )
    return {
        "replica_id": node_id,
        "max_wait_ms": FETCH_MAX_WAIT_MS,
        "min_bytes": 1,
        "max_bytes": 10 * PARTITION_MAX_BYTES,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": wanted} for topic, wanted in topics.items()],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


async def replicated(ctx, partition: Partition, up_to: int, timeout_ms: int) -> tuple[ErrorCode, str | None]:
    """Wait (parked on the event loop) until every in-sync replica has the records below ``up_to``
    (the high watermark reached it), as Kafka's delayed produce: NOT_ENOUGH_REPLICAS_AFTER_APPEND
    when the ISR has shrunk below min.insync.replicas by then, REQUEST_TIMED_OUT after
    ``timeout_ms``, NOT_LEADER_OR_FOLLOWER when this broker stopped leading the partition."""
    key = (partition.topic, partition.index)
    deadline = time.monotonic() + max(timeout_ms, 0) / 1000
    while True:
        with ctx.waiters.watching([key]) as wait_for_replication:
            if partition.high_watermark >= up_to:
                minimum = partition.log.config.min_insync_replicas
                if len(partition.isr) < minimum:
                    return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, (
                        f"the ISR {list(partition.isr)} shrank below min.insync.replicas ({minimum}) "
                        f"before the records were replicated"
                    )
                return ErrorCode.NONE, None
            if ctx.replicas.led_partitions(partition.topic).get(partition.index) is not partition:
                return (
                    ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    f"broker {ctx.replicas.node_id} no longer leads {key[0]}-{key[1]}",
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0 or ctx.stopping:
                return ErrorCode.REQUEST_TIMED_OUT, (
                    f"the in-sync replicas {list(partition.isr)} did not all get the records within {timeout_ms} ms"
                )
            await wait_for_replication(remaining)
