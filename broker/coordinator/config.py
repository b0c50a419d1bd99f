"""The group coordinator's settings: Kafka's broker keys, names and defaults, and bounds of our own.

``group.max.size`` is unbounded in Kafka (2^31-1); here it defaults to 1000 so that one client
cannot make the broker hold any number of members. Each member's protocol metadata (all its
protocols together) is bounded by ``MAX_MEMBER_METADATA_BYTES``, and all of one group's members
together by ``group.max.metadata.bytes`` (a setting of this project, 1 MiB: the group's record in
``__consumer_offsets`` must fit ``message.max.bytes``, and the leader's JoinGroup and a
DescribeGroups answer carry it whole); Kafka bounds them only by the request size, which lets a
group of many members hold gigabytes.
"""

from dataclasses import dataclass

MAX_MEMBER_METADATA_BYTES = 64 * 1024
MAX_GROUP_ID_LENGTH = 32_767  # a STRING's limit: the id goes into record keys as one


@dataclass(frozen=True)
class GroupConfig:
    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3_000
    max_size: int = 1_000
    max_metadata_bytes: int = 1024 * 1024
    offsets_topic_partitions: int = 50
    offsets_topic_replication_factor: int = 3  # capped by the live brokers when the topic is made
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096


# Kafka's broker key -> GroupConfig field, minimum accepted value, multiplier to the field's unit
KEYS = {
    "group.min.session.timeout.ms": ("min_session_timeout_ms", 1, 1),
    "group.max.session.timeout.ms": ("max_session_timeout_ms", 1, 1),
    "group.initial.rebalance.delay.ms": ("initial_rebalance_delay_ms", 0, 1),
    "group.max.size": ("max_size", 1, 1),
    "group.max.metadata.bytes": ("max_metadata_bytes", 1, 1),
    "offsets.topic.num.partitions": ("offsets_topic_partitions", 1, 1),
    "offsets.topic.replication.factor": ("offsets_topic_replication_factor", 1, 1),
    "offsets.topic.segment.bytes": ("offsets_topic_segment_bytes", 14, 1),
    "offsets.retention.minutes": ("offsets_retention_ms", 1, 60_000),
    "offsets.retention.check.interval.ms": ("offsets_retention_check_interval_ms", 1, 1),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", 0, 1),
}


@dataclass(frozen=True)
class TransactionConfig:
    """The transaction coordinator's settings, with Kafka's defaults."""

    state_log_partitions: int = 50
    state_log_segment_bytes: int = 100 * 1024 * 1024
    max_timeout_ms: int = 900_000
    id_expiration_ms: int = 7 * 24 * 3600 * 1000
    abort_timed_out_interval_ms: int = 10_000
    remove_expired_interval_ms: int = 3_600_000
    marker_retry_backoff_ms: int = 100  # a failed marker write is tried again after this (Kafka's request backoff)


TRANSACTION_KEYS = {
    "transaction.state.log.num.partitions": ("state_log_partitions", 1, 1),
    "transaction.state.log.segment.bytes": ("state_log_segment_bytes", 14, 1),
    "transaction.max.timeout.ms": ("max_timeout_ms", 1, 1),
    "transactional.id.expiration.ms": ("id_expiration_ms", 1, 1),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("abort_timed_out_interval_ms", 1, 1),
    "transaction.remove.expired.transaction.cleanup.interval.ms": ("remove_expired_interval_ms", 1, 1),
}
