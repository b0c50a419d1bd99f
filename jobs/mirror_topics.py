"""The topics of ``kafkalog mirror`` on the target cluster: each source topic the mirror reads has
one there (named with the optional prefix), with at least the source's partition count, since
every record keeps its partition number.

A missing target topic is created with the source's partition count and the source topic's own
settings (those DescribeConfigs reports as set on the topic, ``DYNAMIC_TOPIC_CONFIG``: retention,
cleanup policy, timestamp type, ...; defaults are left to the target's brokers), with the target's
default replication factor. A target topic that exists with fewer partitions than its source is
grown to the source's count (CreatePartitions), as MirrorMaker 2 does, also when partitions are added
to a source topic while the mirror runs; one with more is left as it is (the extra partitions get no
records from the mirror). Nothing else of an existing target topic is changed. In a dry run the
target topics are checked and what would be created or grown is said, but nothing is changed.
"""

from collections.abc import Callable

from broker.client import KafkaClient, KafkaError, NewTopic, UnknownTopicOrPartitionError
from broker.protocol.errors import ErrorCode

from .report import counted

TOPIC_OWN_SETTING = 1  # Kafka's ConfigSource DYNAMIC_TOPIC_CONFIG: a setting of the topic itself


class MirrorError(ValueError):
    """What stops the mirror, on one line: no topic to mirror, a target topic that cannot take the records."""


class TargetTopics:
    """Makes the target's topics ready for the source's, remembering those already checked."""

    def __init__(
        self,
        source: KafkaClient,
        target: KafkaClient,
        prefix: str = "",
        read_back: Callable[[str], bool] | None = None,
        ready: dict | None = None,
        say: Callable[[str], None] = print,
        dry_run: bool = False,
    ) -> None:
        """``read_back(name)``: whether the mirror reads topic ``name`` of the source (given when source
        and target are one cluster, so that a target topic it would read again is refused); ``ready``:
        source topic -> partitions already checked on the target (kept between micro-batches);
        ``dry_run``: say what would be created or grown, change nothing."""
        self.source, self.target, self.prefix, self.read_back, self.say = source, target, prefix, read_back, say
        self.ready = {} if ready is None else ready
        self.dry_run = dry_run

    def target_name(self, topic: str) -> str:
        return self.prefix + topic

    def prepare(self, partitions: list[tuple[str, int]]) -> None:
        """Make a target topic ready for each source topic of ``partitions`` ((topic, partition) pairs)."""
        counts: dict[str, int] = {}
        for topic, partition in partitions:
            counts[topic] = max(counts.get(topic, 0), partition + 1)
        for topic, count in sorted(counts.items()):
            if self.ready.get(topic, 0) < count:
                self._prepare(topic, count)
                self.ready[topic] = count

    def _prepare(self, topic: str, count: int) -> None:
        name = self.target_name(topic)
        if self.read_back is not None and self.read_back(name):
            raise MirrorError(
                f"source and target are one cluster and the mirror reads topic {name!r}, where it would "
                f"write topic {topic!r}'s records: choose a --topic-prefix its topics do not match"
            )
        try:
            existing = len(self.target.partitions_of(name))
        except UnknownTopicOrPartitionError:
            self._create(topic, name, count)
            return
        if existing < count:
            self._grow(topic, name, existing, count)

    def _grow(self, topic: str, name: str, existing: int, count: int) -> None:
        """Give target topic ``name`` ``count`` partitions, as its source topic has: the mirror keeps
        partition numbers."""
        grown = f"topic {name} on the target from {existing} to {count} partitions, as source topic {topic}"
        if self.dry_run:
            self.say(f"would grow {grown}")
            return
        try:
            self.target.create_partitions(name, count)
        except KafkaError as exc:
            if exc.code != ErrorCode.INVALID_PARTITIONS or len(self.target.partitions_of(name)) < count:
                raise MirrorError(f"could not grow {grown}: {exc}") from None
            return  # grown meanwhile by someone else (another mirror of the same topic)
        self.say(f"grew {grown}")

    def _create(self, topic: str, name: str, count: int) -> None:
        settings = {
            entry.name: entry.value
            for entry in self.source.describe_configs(topic)
            if entry.source == TOPIC_OWN_SETTING and not entry.sensitive and entry.value is not None
        }
        shown = "".join(f", {k}={v}" for k, v in sorted(settings.items()))
        created = f"topic {name} on the target: {counted(count, 'partition')}{shown}"
        if self.dry_run:
            self.say(f"would create {created}")
            return
        error = self.target.create_topics([NewTopic(name, count, settings)])[name]
        if error is not None and error.code != ErrorCode.TOPIC_ALREADY_EXISTS:  # another mirror may create it too
            raise MirrorError(
                f"could not create target topic {name!r} ({count} partitions, settings {settings or 'none'}): {error}"
            )
        if error is not None:
            self._prepare(topic, count)  # created meanwhile by someone else: check its partitions
            return
        self.say(f"created {created}")


def same_cluster(source_servers: str, target_servers: str) -> bool:
    """Whether the two bootstrap lists name a broker in common."""

    def servers(text):
        return {server.strip().lower() for server in text.split(",") if server.strip()}

    return bool(servers(source_servers) & servers(target_servers))
