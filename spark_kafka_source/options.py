"""The options of the ``kafkalog`` source, with the names, values, defaults and precedence of
Spark's own Kafka source for batch reads, so switching is a matter of the format name.

Option names are case-insensitive (Spark hands them over lower-cased); errors name an option as
documented, and an unknown one with the capitals of the option it resembles. Every invalid option fails
at planning with an ``OptionError`` naming the option and showing a valid example, all built by
``option_error`` (the planner's errors too): ``option <name>: <problem>; for example <example>``. Where Spark's
Kafka source silently ignores an option it does not know, this one refuses it (with the closest
known name), because a typo in ``startingOffsets`` would otherwise read the wrong data.

Streaming queries (``parse(options, STREAM)``) follow Spark's streaming rules: ``startingOffsets``
defaults to ``latest`` (and ``latest``/-1 are allowed), the ending options are refused, and the rate
limits ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` with ``maxTriggerDelay`` and (an addition)
``maxOffsetsPerPartitionPerTrigger`` apply; ``commitOffsetsToGroup`` (or ``kafka.group.id``) names a
consumer group the stream commits its offsets to. A batch read logs that it ignores those.
``schema()`` runs before Spark says which kind of query it is: it checks with ``EITHER``.

Precedence, as in Spark: ``startingTimestamp`` over ``startingOffsetsByTimestamp`` over
``startingOffsets`` (default ``earliest``); ``endingTimestamp`` over ``endingOffsetsByTimestamp``
over ``endingOffsets`` (default ``latest``).

Added to Spark's set, for loads that checkpoint (see ``checkpoint``):
``startingOffsetsFromCheckpoint`` = a load checkpoint URI starts each partition where that
checkpoint's committed runs ended (partitions it does not know start at ``startingOffsets``:
earliest or latest); ``taskCheckpointLocation`` = a directory where each task writes what it read.
"""

import dataclasses
import difflib
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping

from broker.client import (
    ISOLATION_LEVELS,
    PLAINTEXT,
    READ_UNCOMMITTED,
    SECURITY_KEYS,
    ClientSecurity,
    KafkaClient,
    SecuritySettingError,
    from_settings,
    parse_bootstrap,
)
from broker.common.offsets import EARLIEST, LATEST
from broker.common.settings import parse_boolean, parse_choice, parse_integer

from .checkpoint import to_uri

log = logging.getLogger(__name__)


BATCH, STREAM, EITHER = "batch", "stream", "either"  # the kind of query the options are checked for


class OptionError(ValueError):
    """An invalid option of the kafkalog source; the message names it and shows a valid example."""


@dataclasses.dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends: ``kind`` is earliest, latest, offsets, timestamp, timestamps, or
    checkpoint (the ends of a load checkpoint's committed runs; other partitions at ``otherwise``)."""

    kind: str
    offsets: dict = dataclasses.field(default_factory=dict)  # (topic, partition) -> offset (-2/-1 allowed)
    timestamp: int | None = None  # for kind "timestamp": one time for every partition
    timestamps: dict = dataclasses.field(default_factory=dict)  # (topic, partition) -> time, kind "timestamps"
    checkpoint: str | None = None  # for kind "checkpoint": the checkpoint URI
    otherwise: str = "earliest"  # for kind "checkpoint": where partitions it does not know start

    def named_partitions(self) -> set:
        return set(self.offsets) | set(self.timestamps)


@dataclasses.dataclass(frozen=True)
class ClientSettings:
    """What the ``kafka.*`` options mean to this source's client."""

    client_id: str = "kafkalog-spark"
    timeout_s: float = 30.0
    fetch_max_bytes: int = 50 * 1024 * 1024
    partition_fetch_bytes: int = 8 * 1024 * 1024
    isolation_level: int = READ_UNCOMMITTED
    check_crcs: bool = True
    retries: int = 3
    retry_backoff_ms: int = 1000
    security: ClientSecurity = PLAINTEXT  # its repr hides every password

    def client(self, bootstrap_servers: str) -> KafkaClient:
        """A client for ``bootstrap_servers`` with these settings."""
        return KafkaClient(
            bootstrap_servers,
            timeout=self.timeout_s,
            client_id=self.client_id,
            retries=self.retries,
            retry_backoff_ms=self.retry_backoff_ms,
            isolation_level=self.isolation_level,
            security=self.security,
        )


@dataclasses.dataclass(frozen=True)
class TriggerLimits:
    """How much one micro-batch may read (streaming only); None = no such limit."""

    max_offsets: int | None = None  # maxOffsetsPerTrigger, split over partitions by backlog
    min_offsets: int | None = None  # minOffsetsPerTrigger: wait for this many new records ...
    max_delay_ms: int = 15 * 60 * 1000  # ... or at most maxTriggerDelay
    max_offsets_per_partition: int | None = None  # maxOffsetsPerPartitionPerTrigger

    @property
    def any(self) -> bool:
        return bool(self.max_offsets or self.min_offsets or self.max_offsets_per_partition)


@dataclasses.dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    assign: dict | None  # topic -> [partitions]
    subscribe: tuple | None
    subscribe_pattern: str | None
    starting: OffsetSpec
    ending: OffsetSpec
    on_no_matching_start: str  # "error" or "latest"
    fail_on_data_loss: bool
    min_partitions: int | None
    max_records_per_partition: int | None
    include_headers: bool
    poll_timeout_ms: int
    client: ClientSettings
    task_checkpoint_location: str | None = None
    limits: TriggerLimits = TriggerLimits()
    commit_group: str | None = None  # streaming: the consumer group each micro-batch's offsets go to


# canonical names, as documented; matching is on the lower-cased form
_SOURCE_OPTIONS = [
    "kafka.bootstrap.servers",
    "assign",
    "subscribe",
    "subscribePattern",
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "endingTimestamp",
    "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "failOnDataLoss",
    "minPartitions",
    "maxRecordsPerPartition",
    "includeHeaders",
    "kafkaConsumer.pollTimeoutMs",
    "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs",
    "groupIdPrefix",
    "startingOffsetsFromCheckpoint",
    "taskCheckpointLocation",
]
_STREAMING_ONLY = [
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "maxOffsetsPerPartitionPerTrigger",
    "commitOffsetsToGroup",
]
_BATCH_ONLY = ["endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp", "taskCheckpointLocation"]
_CANONICAL = {name.lower(): name for name in _SOURCE_OPTIONS + _STREAMING_ONLY}

# Kafka client settings Spark's source refuses, with its advice (their examples, in EXAMPLES, show
# the Spark way of doing the same)
_REFUSED_KAFKA = {
    "auto.offset.reset": "set the source option 'startingOffsets' to 'earliest' or an offset JSON instead",
    "key.deserializer": "keys are always read as bytes; cast or decode the key column with DataFrame operations",
    "value.deserializer": "values are always read as bytes; decode the value column with DataFrame operations",
    "enable.auto.commit": (
        "the source reads the offsets it was given and commits none on its own; a stream commits "
        "its micro-batches to a consumer group with the option commitOffsetsToGroup"
    ),
    "interceptor.classes": "interceptors are not supported; transform the records with DataFrame operations",
}
_SECURITY_FAMILIES = ("sasl.", "ssl.")

EXAMPLES = {
    "kafka.bootstrap.servers": '.option("kafka.bootstrap.servers", "127.0.0.1:9092")',
    "assign": '.option("assign", \'{"events":[0,1]}\')',
    "subscribe": '.option("subscribe", "events,clicks")',
    "subscribePattern": '.option("subscribePattern", "events-.*")',
    "startingOffsets": '.option("startingOffsets", \'{"events":{"0":23,"1":-2}}\') or "earliest"',
    "endingOffsets": '.option("endingOffsets", \'{"events":{"0":50,"1":-1}}\') or "latest"',
    "startingTimestamp": '.option("startingTimestamp", "1700000000000")',
    "endingTimestamp": '.option("endingTimestamp", "1700000000000")',
    "startingOffsetsByTimestamp": '.option("startingOffsetsByTimestamp", \'{"events":{"0":1700000000000}}\')',
    "endingOffsetsByTimestamp": '.option("endingOffsetsByTimestamp", \'{"events":{"0":1700000000000}}\')',
    "startingOffsetsByTimestampStrategy": '.option("startingOffsetsByTimestampStrategy", "latest")',
    "failOnDataLoss": '.option("failOnDataLoss", "false")',
    "minPartitions": '.option("minPartitions", "8")',
    "maxRecordsPerPartition": '.option("maxRecordsPerPartition", "1000000")',
    "includeHeaders": '.option("includeHeaders", "true")',
    "kafkaConsumer.pollTimeoutMs": '.option("kafkaConsumer.pollTimeoutMs", "120000")',
    "fetchOffset.numRetries": '.option("fetchOffset.numRetries", "3")',
    "fetchOffset.retryIntervalMs": '.option("fetchOffset.retryIntervalMs", "1000")',
    "startingOffsetsFromCheckpoint": '.option("startingOffsetsFromCheckpoint", "hdfs://nn/loads/events/_checkpoint")',
    "taskCheckpointLocation": '.option("taskCheckpointLocation", "file:///data/checkpoint/runs/00000007/tasks")',
    "groupIdPrefix": '.option("groupIdPrefix", "spark-kafka-relation")',
    "maxOffsetsPerTrigger": '.option("maxOffsetsPerTrigger", "100000") (streaming only; a batch read ignores it)',
    "minOffsetsPerTrigger": '.option("minOffsetsPerTrigger", "1000") (streaming only; a batch read ignores it)',
    "maxTriggerDelay": '.option("maxTriggerDelay", "15m") (streaming only; a batch read ignores it)',
    "maxOffsetsPerPartitionPerTrigger": (
        '.option("maxOffsetsPerPartitionPerTrigger", "10000") (streaming only; a batch read ignores it)'
    ),
    "commitOffsetsToGroup": '.option("commitOffsetsToGroup", "page-views-stream") (streaming only)',
    # kafka.* settings this source reads
    "kafka.group.id": '.option("kafka.group.id", "page-views-readers")',
    "kafka.request.timeout.ms": '.option("kafka.request.timeout.ms", "30000")',
    "kafka.fetch.max.bytes": '.option("kafka.fetch.max.bytes", "52428800")',
    "kafka.max.partition.fetch.bytes": '.option("kafka.max.partition.fetch.bytes", "8388608")',
    "kafka.check.crcs": '.option("kafka.check.crcs", "false")',
    "kafka.isolation.level": '.option("kafka.isolation.level", "read_committed")',
    "kafka.security.protocol": '.option("kafka.security.protocol", "SSL")',
    "kafka.ssl.": '.option("kafka.ssl.truststore.location", "/etc/kafka/ca.pem")',
    "kafka.sasl.": '.option("kafka.sasl.mechanism", "SCRAM-SHA-512")',
    "kafka.sasl.jaas.config": (
        '.option("kafka.sasl.jaas.config", \'org.apache.kafka.common.security.scram.'
        'ScramLoginModule required username="alice" password="...";\')'
    ),
    # kafka.* settings Spark refuses: the Spark way instead
    "kafka.auto.offset.reset": '.option("startingOffsets", "earliest")',
    "kafka.key.deserializer": 'df.selectExpr("CAST(key AS STRING)")',
    "kafka.value.deserializer": 'df.select(from_json(col("value").cast("string"), schema))',
    "kafka.enable.auto.commit": (
        '.option("startingOffsetsFromCheckpoint", "hdfs://nn/loads/events/_checkpoint") to '
        "start where the committed runs of a load ended"
    ),
    "kafka.interceptor.classes": 'df.withColumn("value", upper(col("value").cast("string")))',
    # an option no other example fits (a path, an unknown name): a whole read
    "": (
        'spark.read.format("kafkalog").option("kafka.bootstrap.servers", "127.0.0.1:9092")'
        '.option("subscribe", "events").load()'
    ),
}


def example_of(option: str) -> str:
    """The valid example shown for ``option``: its own (prefixes such as ``kafka.ssl.`` cover a
    family), or a whole read when no example fits."""
    if option in EXAMPLES:
        return EXAMPLES[option]
    families = [key for key in EXAMPLES if key.endswith(".") and option.startswith(key)]
    return EXAMPLES[max(families, key=len)] if families else EXAMPLES[""]


def partitions_example(option: str, partitions: Iterable[tuple[str, int]], value: int, limit: int = 12) -> str:
    """An example of ``option`` (offset or timestamp JSON) naming exactly ``partitions`` (topic,
    partition pairs), each with ``value``; the option's own example when there are more than ``limit``."""
    partitions = sorted(partitions)
    if not partitions or len(partitions) > limit:
        return example_of(option)
    by_topic: dict = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, {})[str(partition)] = value
    return f".option({json.dumps(option)}, '{json.dumps(by_topic, separators=(',', ':'))}')"


def with_example(message: str, example: str) -> OptionError:
    """An OptionError: ``message``, then a valid example."""
    return OptionError(f"{message}; for example {example}")


def option_error(
    option: str, problem: str, *, example: str | None = None, example_option: str | None = None
) -> OptionError:
    """The one way an invalid option is reported: ``option <name>: <problem>; for example <example>``.

    The example is ``example`` when given (one built for this read), else the example of
    ``example_option`` (when another option is the way out), else the option's own."""
    return with_example(f"option {option}: {problem}", example or example_of(example_option or option))


def bootstrap_servers(opts: Mapping[str, str], error: Callable[[str, str], OptionError] = option_error) -> str:
    """The ``kafka.bootstrap.servers`` option (of lowercased ``opts``), required and checked; ``error``
    reports it invalid."""
    bootstrap = opts.get("kafka.bootstrap.servers", "").strip()
    if not bootstrap:
        raise error("kafka.bootstrap.servers", "is required")
    try:
        parse_bootstrap(bootstrap)
    except ValueError as exc:
        raise error("kafka.bootstrap.servers", str(exc)) from None
    return bootstrap


def parse(options: Mapping[str, str], query: str = BATCH) -> SourceOptions:
    """Check the options (a case-insensitive mapping of strings) for a ``query`` (BATCH, STREAM, or
    EITHER: only what both kinds require) and return them parsed."""
    opts = {k.lower(): v for k, v in options.items()}
    kafka = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
    _check_names(opts, kafka, query)

    bootstrap = bootstrap_servers(opts)

    assign, subscribe, pattern = _strategy(opts)
    starting = _offsets(opts, "starting", query)
    ending = _offsets(opts, "ending", query)
    _check_ranges(starting, ending)
    return SourceOptions(
        bootstrap_servers=bootstrap,
        assign=assign,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        starting=starting,
        ending=ending,
        on_no_matching_start=_choice(opts, "startingOffsetsByTimestampStrategy", ("error", "latest"), "error"),
        fail_on_data_loss=_boolean(opts, "failOnDataLoss", True),
        min_partitions=_positive(opts, "minPartitions"),
        max_records_per_partition=_positive(opts, "maxRecordsPerPartition"),
        include_headers=_boolean(opts, "includeHeaders", False),
        poll_timeout_ms=_positive(opts, "kafkaConsumer.pollTimeoutMs") or 120_000,
        client=_client_settings(opts, kafka),
        task_checkpoint_location=_uri(opts, "taskCheckpointLocation"),
        limits=_trigger_limits(opts),
        commit_group=_commit_group(opts, kafka),
    )


def _trigger_limits(opts: dict) -> TriggerLimits:
    limits = TriggerLimits(
        max_offsets=_positive(opts, "maxOffsetsPerTrigger"),
        min_offsets=_positive(opts, "minOffsetsPerTrigger"),
        max_offsets_per_partition=_positive(opts, "maxOffsetsPerPartitionPerTrigger"),
    )
    if "maxtriggerdelay" in opts:
        limits = dataclasses.replace(limits, max_delay_ms=_duration_ms(opts, "maxTriggerDelay"))
    if limits.min_offsets and limits.max_offsets and limits.min_offsets > limits.max_offsets:
        raise option_error(
            "minOffsetsPerTrigger", f"{limits.min_offsets} is above maxOffsetsPerTrigger {limits.max_offsets}"
        )
    return limits


# Spark's time units (its timeStringAsMs), in microseconds
_DURATION_UNITS_US = {
    "us": 1,
    "ms": 1000,
    "s": 1_000_000,
    "m": 60_000_000,
    "min": 60_000_000,
    "h": 3_600_000_000,
    "d": 86_400_000_000,
}


def _duration_ms(opts: dict, name: str) -> int:
    """A duration in ms as Spark reads one (``500ms``, ``30s``, ``15m``, ``1h``, ``2d``, ``1500us``
    rounded down; a bare number is ms)."""
    text = opts[name.lower()].strip().lower()
    found = re.fullmatch(r"(\d+)([a-z]*)", text)
    if not found or found.group(2) not in ("", *_DURATION_UNITS_US):
        raise option_error(name, f"{opts[name.lower()]!r} is not a duration such as 30s, 15m or 1h")
    return int(found.group(1)) * _DURATION_UNITS_US.get(found.group(2), 1000) // 1000


def _commit_group(opts: dict, kafka: dict) -> str | None:
    """The group the stream commits to: ``commitOffsetsToGroup``, else ``kafka.group.id``."""
    named = opts.get("commitoffsetstogroup", "").strip() or None
    given = kafka.get("group.id", "").strip() or None
    if "commitoffsetstogroup" in opts and named is None:
        raise option_error("commitOffsetsToGroup", "the group name is empty")
    if named and given and named != given:
        raise option_error(
            "commitOffsetsToGroup", f"names group {named!r} but kafka.group.id is {given!r}; give one of them"
        )
    return named or given


def _check_names(opts: dict, kafka: dict, query: str) -> None:
    for name in opts:
        if name.startswith("kafka.") or name in _CANONICAL:
            continue
        if name == "path":
            raise option_error(
                "path",
                "the kafkalog source reads topics, not a path: name them with assign, "
                "subscribe or subscribePattern (and call load() without a path)",
                example_option="subscribe",
            )
        close = difflib.get_close_matches(name, list(_CANONICAL), n=1, cutoff=0.75)
        if close:
            meant = _CANONICAL[close[0]]
            raise option_error(
                spelt_like(name, meant),
                f"unknown option of the kafkalog source (did you mean {meant}?)",
                example_option=meant,
            )
        if "." in name or f"kafka.{name}" in EXAMPLES:
            raise option_error(
                name,
                f"unknown option of the kafkalog source; Kafka client settings take the prefix kafka. "
                f"(did you mean kafka.{name}?)",
                example_option=f"kafka.{name}",
            )
        raise option_error(
            name,
            "unknown option of the kafkalog source; see docs/spark/batch.md for the options of the kafkalog source",
        )
    for name in _STREAMING_ONLY:
        if name.lower() in opts and query == BATCH:
            log.warning("option %s only applies to streaming queries; a batch read ignores it", name)
    if "groupidprefix" in opts and "group.id" in kafka:
        log.warning("option groupIdPrefix is ignored: kafka.group.id is set")
    for name in _BATCH_ONLY:
        if name.lower() in opts and query == STREAM:
            raise option_error(
                name,
                "is not valid in a streaming query (a stream has no end; an "
                "AvailableNow trigger reads what is there when it starts, then stops)",
                example="readStream...trigger(availableNow=True)",
            )
    for key, advice in _REFUSED_KAFKA.items():
        if key in kafka:
            raise option_error(f"kafka.{key}", f"Kafka option '{key}' is not supported: {advice}")
    for key in kafka:
        if key.startswith(_SECURITY_FAMILIES) and key not in SECURITY_KEYS:
            raise option_error(
                f"kafka.{key}",
                f"not supported by the kafkalog source (its security settings: "
                f"kafka.{', kafka.'.join(k for k in SECURITY_KEYS if '.' in k)})",
            )


def spelt_like(name: str, known: str) -> str:
    """``name`` (lower-cased by Spark) with the capitals of the known option it resembles, as the user
    most likely wrote it: ``startingoffset`` -> ``startingOffset`` when ``known`` is ``startingOffsets``."""
    letters = list(name)
    for block in difflib.SequenceMatcher(None, name, known.lower()).get_matching_blocks():
        letters[block.a : block.a + block.size] = known[block.b : block.b + block.size]
    return "".join(letters)


def _strategy(opts: dict):
    given = [name for name in ("assign", "subscribe", "subscribepattern") if name in opts]
    if len(given) != 1:
        which = "none" if not given else " and ".join(_CANONICAL[g] for g in given)
        raise with_example(
            f"exactly one of the options assign, subscribe, subscribePattern must be given, got {which}",
            example_of("subscribe"),
        )
    if "assign" in opts:
        assign = _json(opts, "assign")
        if (
            not isinstance(assign, dict)
            or not assign
            or not all(
                isinstance(ps, list)
                and ps
                and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in ps)
                for ps in assign.values()
            )
        ):
            raise option_error("assign", "must be a JSON object of topics to lists of partitions")
        return {t: sorted(set(ps)) for t, ps in assign.items()}, None, None
    if "subscribe" in opts:
        topics = tuple(dict.fromkeys(t.strip() for t in opts["subscribe"].split(",") if t.strip()))
        if not topics:
            raise option_error("subscribe", f"no topics to subscribe to in {opts['subscribe']!r}")
        return None, topics, None
    pattern = opts["subscribepattern"]
    if not pattern.strip():
        raise option_error("subscribePattern", "the pattern is empty")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise option_error("subscribePattern", f"{pattern!r} is not a valid regular expression ({exc})") from None
    return None, None, pattern


def _offsets(opts: dict, side: str, query: str) -> OffsetSpec:
    """Resolve one side (starting/ending) by Spark's precedence; a stream starts at latest by default
    and may start at latest, a batch query may not."""
    timestamp_name = f"{side}Timestamp"
    by_timestamp_name = f"{side}OffsetsByTimestamp"
    offsets_name = f"{side}Offsets"
    if side == "starting" and "startingoffsetsfromcheckpoint" in opts:
        return _from_checkpoint(opts)
    if timestamp_name.lower() in opts:
        return OffsetSpec("timestamp", timestamp=_non_negative(opts, timestamp_name))
    if by_timestamp_name.lower() in opts:
        return OffsetSpec("timestamps", timestamps=_partition_json(opts, by_timestamp_name, minimum=0))
    text = opts.get(offsets_name.lower())
    if text is None:
        return OffsetSpec("latest" if side == "ending" or query == STREAM else "earliest")
    word = text.strip().lower()
    if word in ("earliest", "latest"):
        if side == "starting" and word == "latest" and query == BATCH:
            raise option_error(offsets_name, "a batch query cannot start at latest")
        if side == "ending" and word == "earliest":
            raise option_error(offsets_name, "a batch query cannot end at earliest")
        return OffsetSpec(word)
    offsets = _partition_json(opts, offsets_name, minimum=EARLIEST)
    for (topic, partition), offset in offsets.items():
        if side == "starting" and offset == LATEST and query == BATCH:
            raise option_error(offsets_name, f"{topic}-{partition} cannot start at latest (-1) in a batch query")
        if side == "ending" and offset == EARLIEST:
            raise option_error(offsets_name, f"{topic}-{partition} cannot end at earliest (-2) in a batch query")
    return OffsetSpec("offsets", offsets=offsets)


def _from_checkpoint(opts: dict) -> OffsetSpec:
    """Start where a load checkpoint's committed runs ended; other partitions at startingOffsets."""
    name = "startingOffsetsFromCheckpoint"
    for other in ("startingTimestamp", "startingOffsetsByTimestamp"):
        if other.lower() in opts:
            raise option_error(name, f"cannot be combined with {other}: the checkpoint decides where the read starts")
    otherwise = opts.get("startingoffsets", "earliest").strip().lower()
    if otherwise not in ("earliest", "latest"):
        raise option_error(
            name,
            "with a checkpoint, startingOffsets may only say where partitions the checkpoint does "
            "not know start: earliest or latest",
        )
    return OffsetSpec("checkpoint", checkpoint=_uri(opts, name), otherwise=otherwise)


def _uri(opts: dict, name: str) -> str | None:
    text = opts.get(name.lower())
    if text is None:
        return None
    if not text.strip():
        raise option_error(name, "the location is empty")
    return to_uri(text.strip())


def _check_ranges(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Spark's rule: two JSON ends (or two per-partition timestamp ends) name the same partitions, start <= end."""
    if starting.kind == ending.kind and starting.kind in ("offsets", "timestamps"):
        start = starting.offsets or starting.timestamps
        end = ending.offsets or ending.timestamps
        name = "endingOffsets" if ending.kind == "offsets" else "endingOffsetsByTimestamp"
        if set(start) != set(end):
            raise option_error(name, "the starting and ending options must name the same topic partitions")
        for key, begin in start.items():
            if begin >= 0 and end[key] >= 0 and begin > end[key]:
                raise option_error(name, f"{key[0]}-{key[1]} ends at {end[key]}, before its start {begin}")
    if (
        starting.kind == ending.kind == "timestamp"
        and starting.timestamp is not None
        and ending.timestamp is not None
        and starting.timestamp > ending.timestamp
    ):
        raise option_error("endingTimestamp", f"{ending.timestamp} is before startingTimestamp {starting.timestamp}")


def _json(opts: dict, name: str):
    try:
        return json.loads(opts[name.lower()])
    except ValueError as exc:
        raise option_error(name, f"{opts[name.lower()]!r} is not valid JSON ({exc})") from None


def _partition_json(opts: dict, name: str, minimum: int) -> dict:
    """``{"topic": {"0": 23}}`` -> ``{("topic", 0): 23}``."""
    parsed = _json(opts, name)
    out = {}
    if not isinstance(parsed, dict) or not parsed:
        raise option_error(name, "must be a JSON object of topics to objects of partitions")
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict) or not partitions:
            raise option_error(name, f"topic {topic!r} must map partition numbers to values")
        for partition, value in partitions.items():
            if not str(partition).isdigit():
                raise option_error(name, f"{partition!r} of topic {topic!r} is not a partition number")
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise option_error(name, f"{topic}-{partition}: {value!r} is not an integer >= {minimum}")
            out[(topic, int(partition))] = value
    return out


def _boolean(opts: dict, name: str, default: bool) -> bool:
    text = opts.get(name.lower())
    if text is None:
        return default
    try:
        return parse_boolean(text)
    except ValueError as exc:
        raise option_error(name, str(exc)) from None


def _choice(opts: dict, name: str, choices: tuple, default: str) -> str:
    text = opts.get(name.lower())
    if text is None:
        return default
    try:
        return parse_choice(text, choices, ignore_case=True)
    except ValueError as exc:
        raise option_error(name, str(exc)) from None


def _integer(opts: dict, name: str, minimum: int, option_label: str | None = None) -> int | None:
    text = opts.get(name.lower())
    if text is None:
        return None
    label = option_label or name
    try:
        value = parse_integer(text)
    except ValueError as exc:
        raise option_error(label, str(exc)) from None
    if value < minimum:
        raise option_error(label, f"{value} must be at least {minimum}")
    return value


def _positive(opts: dict, name: str) -> int | None:
    return _integer(opts, name, 1)


def _non_negative(opts: dict, name: str) -> int | None:
    return _integer(opts, name, 0)


def _client_settings(opts: dict, kafka: dict) -> ClientSettings:
    settings = ClientSettings()
    prefixed = {f"kafka.{k}": v for k, v in kafka.items()}
    changes = {}
    if "client.id" in kafka:
        changes["client_id"] = kafka["client.id"]
    timeout = _integer(prefixed, "kafka.request.timeout.ms", 1)
    if timeout is not None:
        changes["timeout_s"] = timeout / 1000
    for key, field in (("fetch.max.bytes", "fetch_max_bytes"), ("max.partition.fetch.bytes", "partition_fetch_bytes")):
        value = _integer(prefixed, f"kafka.{key}", 1)
        if value is not None:
            changes[field] = value
    level = _choice(prefixed, "kafka.isolation.level", tuple(ISOLATION_LEVELS), "read_uncommitted")
    changes["isolation_level"] = ISOLATION_LEVELS[level]
    if "check.crcs" in kafka:
        changes["check_crcs"] = _boolean(prefixed, "kafka.check.crcs", True)
    try:
        changes["security"] = from_settings(kafka, prefix="kafka.")
    except SecuritySettingError as exc:  # "<option>: <problem>", never showing a secret
        name, _, problem = str(exc).partition(": ")
        raise option_error(name, problem) from None
    retries = _integer(opts, "fetchOffset.numRetries", 0)
    if retries is not None:
        changes["retries"] = retries
    backoff = _integer(opts, "fetchOffset.retryIntervalMs", 0)
    if backoff is not None:
        changes["retry_backoff_ms"] = backoff
    return dataclasses.replace(settings, **changes)
