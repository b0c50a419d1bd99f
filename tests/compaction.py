"""Helpers for tests of compacted topics on a real broker: create one, wait until the cleaner has
cleaned it up to an offset, and read a partition as it is now (with its gaps)."""

import os

from broker.client import LATEST, KafkaClient, NewTopic
from broker.log.checkpoints import read as read_checkpoint
from broker.log.cleaner_manager import CHECKPOINT_FILE
from broker.records import record_set
from tests.waiting import wait_for

COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01"}
WAIT_SECONDS = 30


def create_compacted(bootstrap: str, topic: str, partitions: int = 1, **settings) -> None:
    admin = KafkaClient(bootstrap)
    try:
        assert admin.create_topics([NewTopic(topic, partitions, COMPACTED | settings)]) == {topic: None}
    finally:
        admin.close()


def active_segment_base(log_dir: str, topic: str, partition: int = 0) -> int:
    directory = os.path.join(log_dir, f"{topic}-{partition}")
    return max(int(name[:20]) for name in os.listdir(directory) if name.endswith(".log"))


def wait_until_cleaned(log_dir: str, topic: str, at_least: int, partition: int = 0) -> None:
    """Until the cleaner's checkpoint says the partition is clean up to ``at_least`` (bounded)."""
    path = os.path.join(log_dir, CHECKPOINT_FILE)
    wait_for(
        lambda: os.path.exists(path) and read_checkpoint(path).get((topic, partition), 0) >= at_least,
        WAIT_SECONDS,
        what=f"{topic} cleaned up to {at_least}",
    )


def read_partition(client: KafkaClient, topic: str, partition: int = 0) -> list:
    """Every record of the partition as ``(offset, key, value)``, through the project's client."""
    end, _ = client.list_offsets({(topic, partition): LATEST})[(topic, partition)]
    offset, out = 0, []
    while offset < end:
        fetched = client.fetch(topic, partition, offset, 1024 * 1024)
        for decoded in record_set.iter_batches(bytes(fetched.records)):
            out.extend((r.offset, r.key, r.value) for r in decoded.records if r.offset >= offset)
            offset = max(offset, decoded.last_offset + 1)
    return out
