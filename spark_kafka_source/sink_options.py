"""The options of the ``kafkalog`` sink (``df.write`` / ``df.writeStream`` with ``format("kafkalog")``),
with the names and meanings of Spark's Kafka sink: ``kafka.bootstrap.servers`` (required), ``topic``
(wins over a ``topic`` column), and producer settings under ``kafka.*`` with Kafka's producer names
(TLS and SASL as the source takes them: ``kafka.security.protocol``, ``kafka.sasl.*``, ``kafka.ssl.*``).

Defaults are Kafka's producer's, except ``kafka.batch.size``: a task sends one batch at a time and
waits for its answer (Kafka's producer keeps several in flight), so batches are larger, 512 KiB.
As in Kafka's producer, idempotence is on unless ``kafka.acks`` is not ``all`` (then it is off,
and asking for both is an error). Errors are ``OptionError`` lines, as the source's.
"""

import dataclasses
import difflib
from collections.abc import Mapping
from typing import overload

from broker.client import ACKS_ALL, BATCH_BYTES, SECURITY_KEYS, ClientSecurity, SecuritySettingError, from_settings
from broker.common.settings import parse_boolean, parse_integer
from broker.records.compression import Codec

from .options import ClientSettings, OptionError, bootstrap_servers, option_error, spelt_like

SINK_EXAMPLES = {
    "kafka.bootstrap.servers": '.option("kafka.bootstrap.servers", "127.0.0.1:9092")',
    "topic": '.option("topic", "events") or a string column named topic',
    "includeHeaders": '.option("includeHeaders", "true") (a headers column is written whether or not it is set)',
    "includeTimestamp": '.option("includeTimestamp", "true") (a timestamp column gives each record\'s timestamp)',
    "kafka.acks": '.option("kafka.acks", "all") (or "1", "0")',
    "kafka.enable.idempotence": '.option("kafka.enable.idempotence", "true") (with kafka.acks all, the default)',
    "kafka.compression.type": '.option("kafka.compression.type", "lz4") (none, gzip, snappy, lz4, zstd)',
    "kafka.batch.size": '.option("kafka.batch.size", "524288")',
    "kafka.linger.ms": '.option("kafka.linger.ms", "5")',
    "kafka.client.id": '.option("kafka.client.id", "nightly-export")',
    "kafka.request.timeout.ms": '.option("kafka.request.timeout.ms", "30000")',
    "kafka.retries": '.option("kafka.retries", "3")',
    "kafka.retry.backoff.ms": '.option("kafka.retry.backoff.ms", "1000")',
    "kafka.partitioner.class": 'a partition column: df.withColumn("partition", F.lit(0))',
    "kafka.key.serializer": 'df.selectExpr("CAST(id AS STRING) AS key", "to_json(struct(*)) AS value")',
    "kafka.value.serializer": 'df.selectExpr("CAST(id AS STRING) AS key", "to_json(struct(*)) AS value")',
    "": (
        'df.write.format("kafkalog").mode("append").option("kafka.bootstrap.servers", "127.0.0.1:9092")'
        '.option("topic", "events").save()'
    ),
}
# names as documented; matching is on the lower-cased form
_SINK_OPTIONS = ["kafka.bootstrap.servers", "topic", "includeHeaders", "includeTimestamp"]
_CANONICAL = {name.lower(): name for name in _SINK_OPTIONS}
# what Spark hands a streaming sink besides the user's options
_SPARK_OWN = {"checkpointlocation", "path", "queryname"}
# Kafka producer settings Spark's sink refuses (or this one cannot honour), with the way instead
_REFUSED_KAFKA = {
    "key.serializer": "keys are written as bytes (a string key as its UTF-8 bytes); serialize in the DataFrame",
    "value.serializer": "values are written as bytes (a string value as its UTF-8 bytes); serialize in the DataFrame",
    "partitioner.class": "a Java partitioner cannot run here; give each row's partition in a partition column",
    "transactional.id": "transactions are not supported (the sink is at-least-once, with idempotent retries)",
}
_ACKS = {"all": ACKS_ALL, "-1": ACKS_ALL, "1": 1, "0": 0}


@dataclasses.dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None  # the topic option: every row goes there, whatever its topic column says
    include_timestamp: bool  # the timestamp column gives each record's timestamp (else: stamped when sent)
    acks: int
    idempotent: bool
    codec: int
    batch_bytes: int
    client: ClientSettings


def sink_error(option: str, problem: str) -> OptionError:
    return option_error(option, problem, example=SINK_EXAMPLES.get(option, SINK_EXAMPLES[""]))


def parse_sink(options: Mapping[str, str]) -> SinkOptions:
    """Check the sink's options (a case-insensitive mapping of strings) and return them parsed."""
    opts = {k.lower(): v for k, v in options.items()}
    kafka = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
    _check_names(opts, kafka)
    bootstrap = bootstrap_servers(opts, sink_error)
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise sink_error("topic", "is empty")
    acks_text = kafka.get("acks", "all").strip().lower()
    if acks_text not in _ACKS:
        raise sink_error("kafka.acks", f"{kafka['acks']!r} is not all, -1, 1 or 0")
    acks = _ACKS[acks_text]
    idempotent = _boolean(kafka, "enable.idempotence", acks == ACKS_ALL)
    if idempotent and acks != ACKS_ALL:
        raise sink_error("kafka.enable.idempotence", f"an idempotent producer needs kafka.acks all, not {acks_text}")
    try:
        codec = Codec.from_name(kafka.get("compression.type", "none").strip().lower())
    except ValueError as exc:
        raise sink_error("kafka.compression.type", str(exc)) from None
    _integer(kafka, "linger.ms", 0)  # accepted: a task sends a batch when it is full, and all at its end
    settings = ClientSettings()
    client = dataclasses.replace(
        settings,
        client_id=kafka.get("client.id", settings.client_id),
        timeout_s=_integer(kafka, "request.timeout.ms", 1, int(settings.timeout_s * 1000)) / 1000,
        retries=_integer(kafka, "retries", 0, settings.retries),
        retry_backoff_ms=_integer(kafka, "retry.backoff.ms", 0, settings.retry_backoff_ms),
        security=_security(kafka),
    )
    include_timestamp = _boolean(opts, "includetimestamp", False, "includeTimestamp")
    return SinkOptions(
        bootstrap,
        topic.strip() if topic else None,
        include_timestamp,
        acks,
        idempotent,
        codec,
        _integer(kafka, "batch.size", 1, BATCH_BYTES),
        client,
    )


def _check_names(opts: dict, kafka: dict) -> None:
    for name in opts:
        if name.startswith("kafka.") or name in _CANONICAL or name in _SPARK_OWN:
            continue
        close = difflib.get_close_matches(name, list(_CANONICAL), n=1, cutoff=0.75)
        if close:
            meant = _CANONICAL[close[0]]
            raise sink_error(spelt_like(name, meant), f"unknown option of the kafkalog sink (did you mean {meant}?)")
        if "." in name or f"kafka.{name}" in SINK_EXAMPLES:
            raise option_error(
                name,
                f"unknown option of the kafkalog sink; Kafka producer settings take the prefix kafka. "
                f"(did you mean kafka.{name}?)",
                example=SINK_EXAMPLES.get(f"kafka.{name}", SINK_EXAMPLES[""]),
            )
        raise sink_error(
            name,
            "unknown option of the kafkalog sink; it takes kafka.bootstrap.servers, topic and "
            "kafka.* producer settings",
        )
    for key in kafka:
        refused = next((advice for prefix, advice in _REFUSED_KAFKA.items() if key.startswith(prefix)), None)
        if refused is None and key.startswith(("ssl.", "sasl.")) and key not in SECURITY_KEYS:
            refused = "not supported by kafkalog's client (see docs/operating/security.md for the settings it takes)"
        if refused is not None:
            raise option_error(
                f"kafka.{key}",
                f"Kafka option '{key}' is not supported: {refused}",
                example=SINK_EXAMPLES.get(f"kafka.{key}", SINK_EXAMPLES["kafka.bootstrap.servers"]),
            )


def _security(kafka: dict) -> ClientSecurity:
    """TLS and SASL from the ``kafka.*`` settings, as the source reads them."""
    try:
        return from_settings(kafka, prefix="kafka.")
    except SecuritySettingError as exc:  # "<option>: <problem>", never showing a secret
        name, _, problem = str(exc).partition(": ")
        raise sink_error(name, problem) from None


def _boolean(settings: dict, key: str, default: bool, option: str | None = None) -> bool:
    """A true/false setting (``option``: its name as shown, default ``kafka.<key>``)."""
    text = settings.get(key)
    if text is None:
        return default
    try:
        return parse_boolean(text)
    except ValueError as exc:
        raise sink_error(option or f"kafka.{key}", str(exc)) from None


@overload
def _integer(kafka: dict, key: str, minimum: int, default: int) -> int: ...
@overload
def _integer(kafka: dict, key: str, minimum: int, default: None = None) -> int | None: ...
def _integer(kafka: dict, key: str, minimum: int, default: int | None = None) -> int | None:
    text = kafka.get(key)
    if text is None:
        return default
    try:
        value = parse_integer(text)
    except ValueError as exc:
        raise sink_error(f"kafka.{key}", str(exc)) from None
    if value < minimum:
        raise sink_error(f"kafka.{key}", f"{value} must be at least {minimum}")
    return value
