"""Batching records for one topic, as Kafka's producer does: one pending batch per partition, each
record with a number saying where it came from (``kafkalog produce``: its input line; the Spark
sink: its row), so that every record not stored can be named.

A record goes to the partition given with it, else to the one its key hashes to (murmur2, as
Kafka's Java producer, whether that partition has a leader or not), else (no key) to a sticky
partition, as Kafka's built-in partitioner: one of the partitions that have a leader by the
client's metadata (all of them when it knows none), first chosen at random, moving on to the next
one with a leader after ``STICKY_BYTES`` went to it, so that one writer's records spread evenly
and none waits for a broker that is down.
A batch is sent when full and every one on ``flush``; a record larger than a batch goes alone.
With an idempotent producer's sequences, every batch carries them (acks must then be all).

The client splits a batch the broker refuses because of its records until each refused record is
alone (``produce_each``), so one bad record never takes good ones with it: the refused record is
reported through ``on_refused`` and the others are stored. After any other failure (the broker
unreachable, the topic deleted) nothing more is sent: ``failure`` holds it, and the records of that
batch and of every pending one are not stored.
"""

import random
from collections.abc import Callable

from .client import KafkaClient
from .errors import RecordsRefusedError
from .idempotence import ProducerSequences
from .partitioner import partition_for_key
from .producer import ProducerRecord

BATCH_BYTES = 512 * 1024  # per batch, well under the default max.message.bytes (1 MiB) even uncompressed
RECORD_OVERHEAD = 16  # the framing of one record in a batch, about
STICKY_BYTES = 16 * 1024  # records without a key go to one partition for this many bytes (Kafka's batch.size)


def record_size(record: ProducerRecord) -> int:
    """The bytes of a record's ``(key, value, timestamp, headers)`` (called for every record: kept cheap)."""
    key, value, _, headers = record
    size = (0 if key is None else len(key)) + (0 if value is None else len(value))
    for name, data in headers:
        size += len(name) + (0 if data is None else len(data))
    return size


class Batcher:
    def __init__(
        self,
        client: KafkaClient,
        topic: str,
        partitions: list[int],
        fixed_partition: int | None,
        codec: int,
        acks: int,
        on_refused: Callable[[int, str], None],
        *,
        batch_bytes: int = BATCH_BYTES,
        sequences: ProducerSequences | None = None,
    ):
        self.client, self.topic, self.partitions = client, topic, partitions
        self.fixed_partition, self.codec, self.acks = fixed_partition, codec, acks
        self.on_refused = on_refused  # (record number, reason) -> None
        self.batch_bytes, self.sequences = batch_bytes, sequences
        self.pending: dict[int, list[tuple[int, ProducerRecord]]] = {p: [] for p in partitions}
        self.pending_bytes = dict.fromkeys(partitions, 0)
        self.sticky_bytes = min(STICKY_BYTES, batch_bytes)
        self.unkeyed_partition: int | None = None  # the sticky partition, chosen with the first record without a key
        self.unkeyed_bytes = 0  # added to it since it was chosen
        self.stored = 0  # records the broker acknowledged (sent, with acks=0)
        self.not_stored: list[int] = []  # record numbers, refused or not sent
        self.in_flight: list[int] = []  # record numbers of the batch being sent (unconfirmed if interrupted)
        self.failure: Exception | None = None  # a KafkaError, or UnsupportedVersionError

    def add(self, number: int, record: ProducerRecord, partition: int | None = None) -> None:
        """Add ``record`` ``(key, value, timestamp, headers)``, to ``partition`` when given (one of ``partitions``)."""
        size = record_size(record) + RECORD_OVERHEAD
        chosen = self._partition_for(record, partition, size)
        if self.pending[chosen] and self.pending_bytes[chosen] + size > self.batch_bytes:
            self._send(chosen)  # so a record larger than a batch goes alone, refused or not
        self.pending[chosen].append((number, record))
        self.pending_bytes[chosen] += size
        if self.pending_bytes[chosen] >= self.batch_bytes:
            self._send(chosen)

    def _partition_for(self, record: ProducerRecord, partition: int | None, size: int) -> int:
        if partition is not None:
            return partition
        if self.fixed_partition is not None:
            return self.fixed_partition
        if record[0] is not None:
            return partition_for_key(record[0], len(self.partitions))
        if self.unkeyed_partition is None or self.unkeyed_bytes >= self.sticky_bytes:
            self.unkeyed_partition, self.unkeyed_bytes = self._next_sticky(), 0
        self.unkeyed_bytes += size
        return self.unkeyed_partition

    def _next_sticky(self) -> int:
        """A random partition with a leader at first, then the next one with a leader after the sticky one."""
        available = [p for p in self.client.available_partitions(self.topic) if p in self.pending] or self.partitions
        if self.unkeyed_partition is None:
            return random.choice(available)
        return next((p for p in available if p > self.unkeyed_partition), available[0])

    def refuse(self, number: int, reason: str) -> None:
        """Record ``number`` is not stored, for ``reason``."""
        self.not_stored.append(number)
        self.on_refused(number, reason)

    def _take(self, partition: int) -> list[tuple[int, ProducerRecord]]:
        entries = self.pending[partition]
        self.pending[partition], self.pending_bytes[partition] = [], 0
        return entries

    def _send(self, partition: int) -> None:
        entries = self._take(partition)
        if not entries:
            return
        if self.failure is not None:
            self.not_stored += [number for number, _ in entries]
            return
        self.in_flight = [number for number, _ in entries]
        refused = self.client.produce_each(
            self.topic, partition, [record for _, record in entries], self.codec, self.acks, sequences=self.sequences
        )
        self.in_flight = []
        for index, error in sorted(refused.items()):
            number, record = entries[index]
            if isinstance(error, RecordsRefusedError):
                self.refuse(number, f"a record of {record_size(record):,} bytes: {error}")
            else:
                self.not_stored.append(number)
                self.failure = error
        self.stored += len(entries) - len(refused)

    def flush(self) -> None:
        """Send every pending batch (after a failure: count their records as not stored)."""
        for partition in self.partitions:
            self._send(partition)

    def abandon(self) -> None:
        """Send nothing more: every pending record is not stored (``in_flight`` keeps the records of a
        batch whose sending was interrupted: the broker may or may not have stored them)."""
        for partition in self.partitions:
            self.not_stored += [number for number, _ in self._take(partition)]
