"""What an interop test may ask of any client: the client-neutral interface (``Client``,
``Producer``, ``Consumer``, ``Admin``) that each adapter module (``client_confluent``,
``client_kafka_python``, ``client_aiokafka``) implements around one unmodified third-party client.

Records are ``common.Rec`` values and errors Kafka's protocol error codes
(``broker.protocol.errors.ErrorCode``), the same for every client. Where the clients really differ,
a capability flag on ``Client`` says so (documented here, set and explained in the adapters); the
matrix tests branch, or pick their clients, on those flags, never on a client's name (only
``test_client_specific`` does that).
"""

from collections import namedtuple
from typing import NamedTuple

from .common import PARTITIONS, WAIT_SECONDS, deadline, expired

EARLIEST, LATEST = "earliest", "latest"
CREATE_TIME, LOG_APPEND_TIME = 0, 1


class BrokerError(Exception):
    """The broker answered with an error code (raised by ``Admin`` operations)."""

    def __init__(self, code: int, text: str = ""):
        super().__init__(f"error {code}: {text}")
        self.code, self.text = code, text


def raise_first_error(codes, text: str = "") -> None:
    """Raise ``BrokerError`` for the first non-zero error code."""
    for code in codes:
        if code:
            raise BrokerError(code, text)


class OutOfRange(Exception):
    """A fetch position was out of range and the consumer's reset policy is "none"."""


class Delivery(NamedTuple):
    """What the producer learned about one record: where it went, or the error code."""

    partition: int | None
    offset: int | None  # None: the client cannot know it (acks=0)
    timestamp: int | None = None
    timestamp_type: int | None = None  # None: the client does not report it
    error_code: int = 0
    error_text: str = ""


PartitionInfo = namedtuple("PartitionInfo", "id leader replicas isr")
TopicInfo = namedtuple("TopicInfo", "name internal partitions")  # partitions: PartitionInfo by id


class ConfigEntry(NamedTuple):
    value: str | None
    source: str  # "DYNAMIC_TOPIC_CONFIG", "DEFAULT_CONFIG", ...
    is_default: bool
    read_only: bool
    sensitive: bool
    synonyms: list  # of (name, value, source)
    type: str | None  # "LIST", "LONG", ...; None if the client does not report types


def settings(fixed: dict, optional: dict, native: dict) -> dict:
    """A client's configuration: ``fixed``, the ``optional`` values that are not None, ``native``."""
    return fixed | {key: value for key, value in optional.items() if value is not None} | native


class Client:
    """One kind of client connected to one broker. Adapters provide

    * ``producer(acks=None, idempotence=None, compression="none", linger_ms=5, batch_bytes=None,
      max_request_bytes=None, **native)`` (None: the client's default; ``native``: settings in the
      client's own spelling);
    * ``consumer(reset="none", fetch_wait_ms=100, partition_fetch_bytes=None, fetch_bytes=None,
      timestamp_type=CREATE_TIME, **native)`` (``reset``: what an out-of-range position does,
      "earliest", "latest" or "none": raise ``OutOfRange``);
    * ``admin()``."""

    name = ""
    # -- capabilities; an adapter that changes one says there why its client differs --
    sends_null_header_values = True
    sends_null_key_and_value = True  # a record whose key and value are both null
    invents_offsets_for_acks_0 = False  # reports offsets although acks=0 gets no answer
    idempotent_by_default = False
    idempotent_producer_survives_rejected_batch = True  # goes on producing after a batch was refused
    broker_error_marker: str | None = None  # text in a produce error that shows the broker sent it
    delivery_reports_timestamp_type = False
    offsets_for_times_gives_timestamp = True
    describes_configs = True
    describes_config_types = True
    describe_configs_reports_errors = True

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def on(self, broker) -> "Client":
        """The same kind of client for another broker."""
        return type(self)(broker.bootstrap)

    def produce(self, topic: str, records: list, **producer_options) -> list:
        """Produce ``records`` with a new producer; every delivery must succeed."""
        with self.producer(**producer_options) as producer:
            deliveries = producer.produce(topic, records)
        errors = [d for d in deliveries if d.error_code]
        assert not errors, f"delivery failed: {errors[:3]}"
        return deliveries

    def consume(self, topic: str, positions: dict, count: int, **consumer_options) -> list:
        """Assign ``positions`` (partition -> offset, EARLIEST or LATEST) and poll ``count`` records."""
        with self.consumer(**consumer_options) as consumer:
            consumer.assign(topic, positions)
            return consumer.poll(count)

    def consume_all(self, topic: str, count: int, partitions=range(PARTITIONS), **consumer_options) -> list:
        return self.consume(topic, dict.fromkeys(partitions, EARLIEST), count, **consumer_options)


class Closing:
    """Closed (``close()``) at the end of a ``with`` block."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Producer(Closing):
    """Adapters provide ``send(topic, rec)`` (queue ``rec`` with its partition and timestamp, if
    any; returns a handle), ``flush()`` (send everything queued now and wait, bounded, for the
    answers), ``deliveries(handles)`` (a ``Delivery`` each, after ``flush``), ``partitions_for(topic)``
    (from a metadata request, which creates the topic) and ``close()``."""

    def produce(self, topic: str, records: list) -> list:
        handles = [self.send(topic, rec) for rec in records]
        self.flush()
        return self.deliveries(handles)


class Consumer(Closing):
    """Adapters provide ``assign(topic, {partition: offset, EARLIEST, LATEST or None (the reset
    policy)})``, ``positions(topic, partitions)`` ({partition: where the next fetch starts}, waiting,
    bounded, until known), ``fetch(seconds)`` (the ``Rec`` values one poll returns, raising
    ``OutOfRange``), ``watermarks(topic, partitions)`` ({partition: (log start, end offset)}),
    ``offsets_for_times(topic, {partition: timestamp})`` ({partition: (offset, timestamp or None)
    of the first record at or after it, or None}) and ``close()``."""

    timestamp_type = CREATE_TIME  # every record polled must carry it

    def poll(self, count: int, seconds: float = WAIT_SECONDS, grace: float = 0.3) -> list:
        """Poll until ``count`` records arrived (failing after ``seconds``), then ``grace`` seconds
        more to catch anything unexpected."""
        got, until = [], deadline(seconds)
        while len(got) < count and not expired(until):
            got += self.fetch(0.2)
        assert len(got) >= count, f"only {len(got)} of {count} records arrived within {seconds}s"
        return got + self.poll_for(grace)

    def poll_for(self, seconds: float) -> list:
        """Everything that arrives within ``seconds``."""
        got, until = [], deadline(seconds)
        while not expired(until):
            got += self.fetch(0.05)
        return got

    def check_timestamp_type(self, timestamp_type: int) -> None:
        assert timestamp_type == self.timestamp_type, f"timestamp type {timestamp_type}"


class Admin(Closing):
    """Adapters provide ``create_topic(name, partitions, replication=1, configs=None,
    validate_only=False)`` and ``delete_topic(name)`` (both raise ``BrokerError``), ``topic_names()``,
    ``describe_topic(name)`` (a ``TopicInfo``), ``topic_configs(name)`` and ``broker_configs(id)``
    ({config name: ConfigEntry}, all of them, with synonyms; where ``describes_configs``),
    ``add_partitions(name, count)``, ``set_configs(name, {key: value}, broker=False)`` (the client's
    usual way to change settings: IncrementalAlterConfigs, or AlterConfigs where the client has
    nothing else) and ``delete_records(topic, {partition: offset})`` ({partition: the new log
    start offset}), all three raising ``BrokerError``, and ``close()``."""
