"""The ``topic.id`` file in a partition's directory (the role of Kafka's ``partition.metadata``):
the id of the topic the partition was made for, so that a directory left by an earlier topic of
the same name (deleted, then created again while this broker was away) is told from the current
topic's. In a cluster on ZooKeeper the id is the creation zxid of ``/brokers/topics/<topic>``."""

import os

from broker.common.files import write_atomically

TOPIC_ID_FILE = "topic.id"


def read_topic_id(directory: str) -> int | None:
    """The id written in ``directory``; None when there is none (made before ids were written) or it
    cannot be read as one."""
    try:
        with open(os.path.join(directory, TOPIC_ID_FILE), encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def write_topic_id(directory: str, topic_id: int) -> None:
    write_atomically(os.path.join(directory, TOPIC_ID_FILE), f"{topic_id}\n".encode())
