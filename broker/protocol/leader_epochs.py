"""OffsetForLeaderEpoch, sans I/O, for the client and for a follower's fetcher: the request body,
and the answer read into an ``EpochEndOffset`` per partition. A follower asks its leader where its own latest epoch ends
before fetching, and cuts its log there; per-partition errors come back as codes, since what to
do about each (stop on FENCED_LEADER_EPOCH, retry on the others) is the asker's decision.
"""

from collections.abc import Mapping
from typing import Any, NamedTuple

Body = dict[str, Any]
TopicPartition = tuple[str, int]

CONSUMER_REPLICA_ID = -1  # what a consumer puts as ``replica_id``; a follower puts its broker id


class EpochQuery(NamedTuple):
    """What is asked about one partition: the end of ``leader_epoch``, from a leader at
    ``current_leader_epoch`` (-1: do not check it)."""

    leader_epoch: int
    current_leader_epoch: int = -1


class EpochEndOffset(NamedTuple):
    """The answer for one partition: the largest epoch at or below the one asked and where it ends
    (both -1 when the leader knows no such epoch), or an error code."""

    error_code: int
    leader_epoch: int
    end_offset: int


def offset_for_leader_epoch_body(wanted: Mapping[TopicPartition, EpochQuery], replica_id: int) -> Body:
    """An OffsetForLeaderEpoch request for ``{(topic, partition): EpochQuery}``."""
    topics: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), query in wanted.items():
        topics.setdefault(topic, []).append(
            {
                "partition": partition,
                "current_leader_epoch": query.current_leader_epoch,
                "leader_epoch": query.leader_epoch,
            }
        )
    return {"replica_id": replica_id, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}


def epoch_end_offsets(response: Body) -> dict[TopicPartition, EpochEndOffset]:
    """The answers of an OffsetForLeaderEpoch response, by partition."""
    return {
        (topic["topic"], p["partition"]): EpochEndOffset(p["error_code"], p["leader_epoch"], p["end_offset"])
        for topic in response["topics"]
        for p in topic["partitions"]
    }
