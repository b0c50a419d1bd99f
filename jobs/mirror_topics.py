"""The topics of ``kafkalog mirror`` on the target cluster: each source topic the mirror reads has
one there (named with the optional prefix), with at least the source's partition count, since
every record keeps its partition number.

A missing target topic is created with the source's partition count and the source topic's own
settings (those DescribeConfigs reports as set on the topic, ``DYNAMIC_TOPIC_CONFIG``: retention,
cleanup policy, timestamp type, ...; defaults are left to the target's brokers), with the target's
default replication factor. A target topic that exists with fewer partitions than its source is
refused, naming the command that grows it: the mirror never changes an existing topic, so
partitions added to a source topic while it runs stop it the same way (grow the target topic, then
run the same command again: it resumes).
"""

from broker.client import NewTopic, UnknownTopicOrPartitionError
from broker.protocol.errors import ErrorCode

from .report import counted

TOPIC_OWN_SETTING = 1  # Kafka's ConfigSource DYNAMIC_TOPIC_CONFIG: a setting of the topic itself


class MirrorError(ValueError):
    """What stops the mirror, on one line: no topic to mirror, a target topic that cannot take the records."""


class TargetTopics:
    """Makes the target's topics ready for the source's, remembering those already checked."""

    def __init__(self, source, target, prefix: str = "", read_back=None, ready: dict | None = None, say=print):
        """``read_back(name)``: whether the mirror reads topic ``name`` of the source (given when source
        and target are one cluster, so that a target topic it would read again is refused); ``ready``:
        source topic -> partitions already checked on the target (kept between micro-batches)."""
        self.source, self.target, self.prefix, self.read_back, self.say = source, target, prefix, read_back, say
        self.ready = {} if ready is None else ready

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
            raise MirrorError(f"source and target are one cluster and the mirror reads topic {name!r}, where it would "
                              f"write topic {topic!r}'s records: choose a --topic-prefix its topics do not match")
        try:
            existing = len(self.target.partitions_of(name))
        except UnknownTopicOrPartitionError:
            self._create(topic, name, count)
            return
        if existing < count:
            raise MirrorError(f"target topic {name!r} has {counted(existing, 'partition')} but source topic {topic!r} "
                              f"has {count}, and the mirror keeps partition numbers; grow it first (kafkalog topics "
                              f"alter {name} --partitions {count} --bootstrap-server <target>)")

    def _create(self, topic: str, name: str, count: int) -> None:
        settings = {entry.name: entry.value for entry in self.source.describe_configs(topic)
                    if entry.source == TOPIC_OWN_SETTING and not entry.sensitive and entry.value is not None}
        error = self.target.create_topics([NewTopic(name, count, settings)])[name]
        if error is not None and error.code != ErrorCode.TOPIC_ALREADY_EXISTS:  # another mirror may create it too
            raise MirrorError(f"could not create target topic {name!r} ({count} partitions, settings "
                              f"{settings or 'none'}): {error}")
        shown = ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))
        self.say(f"created topic {name} on the target: {counted(count, 'partition')}{', ' + shown if shown else ''}")
        if error is not None:
            self._prepare(topic, count)  # created meanwhile by someone else: check its partitions


def same_cluster(source_servers: str, target_servers: str) -> bool:
    """Whether the two bootstrap lists name a broker in common."""
    def servers(text):
        return {server.strip().lower() for server in text.split(",") if server.strip()}
    return bool(servers(source_servers) & servers(target_servers))
