"""An idempotent producer's identity and its next sequence number per partition.

As Kafka's producer with ``enable.idempotence=true``: the broker hands out a producer id and epoch
(InitProducerId); each batch carries them with the sequence number of its first record, counted per
partition from 0. A batch sent again after a lost answer carries the same numbers, so the broker
recognises it and stores it once. The numbers advance only when a batch is acknowledged, so a batch
the broker refused (and a split of it) is sent with the numbers it would have had. Idempotence
holds within one producer id: a new producer (a new task, a restarted process) gets a new id, and
what it sends again is stored again. A transactional producer's batches also carry the
transactional bit (``transactional_id`` set; ``broker.client.transactions``).
"""

from typing import TypedDict

INT32_MAX = 2**31 - 1


class BatchFields(TypedDict):
    """The producer fields of a batch, as ``batch.build`` takes them."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool


class ProducerSequences:
    def __init__(self, producer_id: int, epoch: int, transactional_id: str | None = None):
        self.producer_id, self.epoch = producer_id, epoch
        self.transactional_id = transactional_id
        self._next: dict[tuple[str, int], int] = {}

    def batch_fields(self, topic: str, partition: int) -> BatchFields:
        """The producer fields of the next batch to ``topic``-``partition`` (``batch.build``'s arguments)."""
        return {
            "producer_id": self.producer_id,
            "producer_epoch": self.epoch,
            "base_sequence": self._next.get((topic, partition), 0),
            "is_transactional": self.transactional_id is not None,
        }

    def acknowledged(self, topic: str, partition: int, records: int) -> None:
        """A batch of ``records`` to ``topic``-``partition`` was stored: its successor follows it (wrapping
        at INT32_MAX, as Kafka's sequence numbers do)."""
        following = self._next.get((topic, partition), 0) + records
        self._next[(topic, partition)] = following if following <= INT32_MAX else following - INT32_MAX - 1
