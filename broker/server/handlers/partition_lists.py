"""The topic/partition lists of requests, where a client may name one partition more than once.

Kafka reads a Produce or Fetch request into a map keyed by topic-partition, so a partition named
twice is acted on once, with its last mention, and answered once; ``distinct`` does the same and
keeps each partition at its first place. ListOffsets instead refuses every mention of a repeated
partition (INVALID_REQUEST), for which ``repeated`` says which ones those are.
"""

from collections import Counter


def distinct(topics: list[dict], topic_key: str, partition_key: str) -> list[tuple[str, list[dict]]]:
    """``(topic, partitions)`` in request order, each partition once: its last mention, at its first place."""
    wanted = {}
    for topic in topics:
        for partition in topic["partitions"]:
            wanted[(topic[topic_key], partition[partition_key])] = partition  # a dict keeps the first place
    grouped: list[tuple[str, list[dict]]] = []
    for (name, _), partition in wanted.items():
        if not grouped or grouped[-1][0] != name:
            grouped.append((name, []))
        grouped[-1][1].append(partition)
    return grouped


def repeated(topics: list[dict], topic_key: str, partition_key: str) -> set[tuple[str, int]]:
    """The ``(topic, partition)`` pairs named more than once."""
    counts = Counter((t[topic_key], p[partition_key]) for t in topics for p in t["partitions"])
    return {key for key, count in counts.items() if count > 1}
