"""The offset manager: the cache of groups and offsets, kept in ``__consumer_offsets``.

Kafka's ``GroupMetadataManager``, without I/O. Every change is written as records of the group's
partition (``group_partition``), in Kafka's formats (``offsets_records``), through a ``store``
the server provides: ``store.append(partition, [(key, value or None)], done)``, which calls
``done(None)`` once the records are appended under the log's flush policy, or ``done(StoreError)``
with the error code Kafka's log append gives (KAFKA_STORAGE_ERROR on a full disk, ...).
The cache changes only after the append, so nothing is acknowledged that a restart would not
find. After a start each partition is replayed (``replay``, pure, on any thread) and installed
(``install``); until then its groups are loading (COORDINATOR_LOAD_IN_PROGRESS). Offsets of an
Empty group expire ``offsets.retention.minutes`` after the group became empty (after their own
commit for a group that never had members, and at an explicit expire timestamp), as tombstones.
"""

import logging
from collections.abc import Callable, Collection, Iterable
from typing import Protocol

from broker.protocol.errors import ErrorCode

from .config import GroupConfig
from .group import Group, GroupState
from .group_partition import partition_for
from .offsets_records import (
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetsRecordError,
    OffsetValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"


class StoreError(Exception):
    """A write to ``__consumer_offsets`` failed: the append's error code, and why."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


Record = tuple[bytes, "bytes | None"]  # (key, value) of a __consumer_offsets record; None: a tombstone
Done = Callable[["StoreError | None"], None]  # told how a write ended: None once appended
TopicPartition = tuple[str, int]
Offsets = dict[TopicPartition, OffsetValue]
Replayed = tuple[dict[str, Offsets], dict[str, "GroupValue | None"]]  # offsets and metadata by group


class OffsetsStore(Protocol):
    """Where the coordinator's records go: the partitions of ``__consumer_offsets`` (the server's log)."""

    def append(self, partition: int, records: list[Record], done: Done) -> None:
        """Append ``records`` to ``partition``, then call ``done`` (once, maybe on another thread)."""
        ...


def replay(records: Iterable[tuple[bytes | None, bytes | None]]) -> Replayed:
    """``(offsets by group, group metadata by group)`` after the ``(key, value)`` records of a
    partition, in log order (a tombstone removes its key; None marks a removed group's metadata)."""
    offsets: dict[str, Offsets] = {}
    groups: dict[str, GroupValue | None] = {}
    for key_bytes, value_bytes in records:
        try:
            key = decode_key(key_bytes)
            if isinstance(key, OffsetKey):
                value = decode_value(key, value_bytes)
                group_offsets = offsets.setdefault(key.group, {})
                if value is None:
                    group_offsets.pop((key.topic, key.partition), None)
                else:
                    group_offsets[(key.topic, key.partition)] = value
            else:
                groups[key.group] = decode_value(key, value_bytes)
        except OffsetsRecordError as exc:
            log.warning("skipping a %s record: %s", OFFSETS_TOPIC, exc)
    return offsets, groups


class OffsetManager:
    def __init__(self, config: GroupConfig, store: OffsetsStore):
        self.config = config
        self.store = store
        self.groups: dict[str, Group] = {}
        self.owned: set[int] = set()  # the partitions of __consumer_offsets this broker coordinates (leads)
        self.loading: set[int] = set()  # those of them still being replayed

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_partitions)

    def owns(self, group_id: str) -> bool:
        return self.partition_of(group_id) in self.owned

    def is_loading(self, group_id: str) -> bool:
        return self.partition_of(group_id) in self.loading

    def begin_loading(self, partition: int) -> None:
        """This broker leads ``partition`` now: its groups are loading until ``install``."""
        self.owned.add(partition)
        self.loading.add(partition)

    def unload(self, partition: int) -> list[Group]:
        """This broker no longer leads ``partition``: forget its groups (returned)."""
        self.owned.discard(partition)
        self.loading.discard(partition)
        gone = [group for group_id, group in self.groups.items() if self.partition_of(group_id) == partition]
        for group in gone:
            del self.groups[group.group_id]
        return gone

    def install(self, partition: int, replayed: Replayed, now: int) -> list[Group]:
        """Make the replayed partition's groups the cache's; returns them (the coordinator watches their members)."""
        offsets, values = replayed
        installed = []
        for group_id in offsets.keys() | values.keys():
            value = values.get(group_id)
            group_offsets = offsets.get(group_id, {})
            if value is None and not group_offsets:
                continue
            group = Group.loaded(group_id, value, now) if value is not None else Group(group_id, state_timestamp=now)
            group.offsets = dict(group_offsets)
            self.groups[group_id] = group
            installed.append(group)
        self.owned.add(partition)
        self.loading.discard(partition)
        return installed

    # -- writes ----------------------------------------------------------------------------

    def _append(self, group_id: str, records: list[Record], done: Done) -> None:
        self.store.append(self.partition_of(group_id), records, done)

    def store_group(self, group: Group, now: int, done: Done) -> None:
        """Write the group's metadata (its generation, members and assignments); ``done(error)``."""
        self._append(group.group_id, [(encode_key(GroupKey(group.group_id)), encode_value(group.value(now)))], done)

    def store_offsets(self, group: Group, offsets: Offsets, done: Done) -> None:
        """Commit ``offsets``; they enter the cache once appended. ``done(error)``."""
        records = [
            (encode_key(OffsetKey(group.group_id, topic, partition)), encode_value(value))
            for (topic, partition), value in offsets.items()
        ]

        def appended(error: StoreError | None) -> None:
            if error is None and self.groups.get(group.group_id) is group:
                group.offsets.update(offsets)
            done(error)

        self._append(group.group_id, records, appended)

    def delete_offsets(self, group: Group, partitions: Iterable[TopicPartition], done: Done) -> None:
        """Tombstones for the group's offsets of ``partitions`` (those it has); ``done(error)``."""
        present = [p for p in partitions if p in group.offsets]
        if not present:
            done(None)
            return
        records: list[Record] = [
            (encode_key(OffsetKey(group.group_id, topic, partition)), None) for topic, partition in present
        ]

        def appended(error: StoreError | None) -> None:
            if error is None:
                for p in present:
                    group.offsets.pop(p, None)
            done(error)

        self._append(group.group_id, records, appended)

    def delete_group(self, group: Group, now: int, done: Done) -> None:
        """The group is Dead at once; tombstones for its offsets and metadata, then it leaves the
        cache (back to Empty if they cannot be written). ``done(error)``."""
        records: list[Record] = [
            (encode_key(OffsetKey(group.group_id, topic, partition)), None) for topic, partition in group.offsets
        ]
        records.append((encode_key(GroupKey(group.group_id)), None))
        previous = group.state
        group.transition(GroupState.DEAD, now)

        def appended(error: StoreError | None) -> None:
            if error is None:
                if self.groups.get(group.group_id) is group:
                    del self.groups[group.group_id]
            else:
                group.state = previous
            done(error)

        self._append(group.group_id, records, appended)

    # -- reads -----------------------------------------------------------------------------

    def expired_offsets(self, group: Group, now: int) -> list[tuple[str, int]]:
        """The offsets of an Empty group that are past their retention."""
        if not group.is_(GroupState.EMPTY):
            return []
        retention = self.config.offsets_retention_ms
        expired = []
        for partition, value in group.offsets.items():
            if value.expire_timestamp != -1:
                deadline = value.expire_timestamp
            elif group.protocol_type is not None:
                deadline = group.state_timestamp + retention
            else:
                deadline = value.commit_timestamp + retention
            if deadline <= now:
                expired.append(partition)
        return expired

    def expire(self, now: int) -> None:
        """Tombstones for expired offsets; a group left with no offsets and no members is deleted."""
        for group in list(self.groups.values()):
            self._remove(group, self.expired_offsets(group, now), now, "expired")

    def remove_topics(self, topics: Collection[str], now: int) -> None:
        """Tombstones for every group's offsets of the deleted ``topics``, as Kafka writes them when a
        topic's partitions are deleted; an Empty group left with no offsets is deleted."""
        for group in list(self.groups.values()):
            self._remove(group, [p for p in group.offsets if p[0] in topics], now, "deleted topics'")

    def _remove(self, group: Group, partitions: list[tuple[str, int]], now: int, which: str) -> None:
        if not partitions:
            return
        warn = warn_on_failure(f"group {group.group_id!r}: cannot write the tombstones of its {which} offsets")
        if len(partitions) == len(group.offsets) and group.is_(GroupState.EMPTY):
            log.info("group %r: its %s offsets are removed; deleting the group", group.group_id, which)
            self.delete_group(group, now, warn)
        else:
            self.delete_offsets(group, partitions, warn)


def warn_on_failure(what: str) -> Done:
    """A ``done`` callback for writes nobody waits for: a failure is one log line (the next check retries)."""

    def done(error: StoreError | None) -> None:
        if error is not None:
            log.warning("%s: %s", what, error)

    return done
