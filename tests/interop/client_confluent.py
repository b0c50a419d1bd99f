"""confluent-kafka (librdkafka) behind the interop client interface; its differences are the flags
set on ``ConfluentClient``.

A consumer needs a ``group.id`` (it never joins the group: it only ``assign()``s); its
``position()`` is known only once a record was consumed, so ``positions`` reads the fetch offset
from the statistics librdkafka emits every 50 ms; it checks CRCs only with ``check.crcs``, set here.
"""

import contextlib
import json

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from . import client_api as api
from .common import WAIT_SECONDS, Rec, deadline, expired

POSITIONS = {api.EARLIEST: OFFSET_BEGINNING, api.LATEST: OFFSET_END, None: OFFSET_STORED}


class ConfluentClient(api.Client):
    name = "confluent"
    broker_error_marker = "Broker:"  # librdkafka prefixes errors it got from the broker
    delivery_reports_timestamp_type = True
    offsets_for_times_gives_timestamp = False  # the offset only; -1 (OFFSET_END) where there is none
    describes_config_types = False  # confluent-kafka's ConfigEntry has no type

    def producer(
        self,
        *,
        acks=None,
        idempotence=None,
        compression="none",
        linger_ms=5,
        batch_bytes=None,
        max_request_bytes=None,
        **native,
    ):
        return ConfluentProducer(
            Producer(
                api.settings(
                    {
                        "bootstrap.servers": self.bootstrap,
                        "linger.ms": linger_ms,
                        "message.timeout.ms": 15000,
                        "compression.type": compression,
                    },
                    {
                        "acks": None if acks is None else str(acks),
                        "enable.idempotence": idempotence,
                        "batch.size": batch_bytes,
                        "message.max.bytes": max_request_bytes,
                    },
                    native,
                )
            )
        )

    def consumer(
        self,
        *,
        reset="none",
        fetch_wait_ms=100,
        partition_fetch_bytes=None,
        fetch_bytes=None,
        timestamp_type=api.CREATE_TIME,
        **native,
    ):
        return ConfluentConsumer(
            api.settings(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": "interop",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "auto.offset.reset": "error" if reset == "none" else reset,
                    "fetch.wait.max.ms": fetch_wait_ms,
                    "check.crcs": True,
                    "statistics.interval.ms": 50,
                },
                {
                    "max.partition.fetch.bytes": partition_fetch_bytes,
                    "fetch.max.bytes": fetch_bytes,
                    # librdkafka refuses a fetch.max.bytes below its message.max.bytes
                    "message.max.bytes": fetch_bytes and min(1000, fetch_bytes),
                },
                native,
            ),
            timestamp_type,
        )

    def admin(self):
        return ConfluentAdmin(AdminClient({"bootstrap.servers": self.bootstrap}))


class ConfluentProducer(api.Producer):
    """Learns a topic's metadata before its first record: librdkafka parks records for a topic it
    knows nothing of and, once metadata comes, moves them to their partition one at a time; a flush
    running meanwhile sends each as a batch of its own, which breaks tests that group by flush."""

    def __init__(self, native: Producer):
        self.native = native
        self.reports = []
        self.known_topics = set()

    def send(self, topic, rec):
        if topic not in self.known_topics:
            with contextlib.suppress(KafkaException):  # a broker that is down fails the send itself
                self.native.list_topics(topic, timeout=WAIT_SECONDS)
            self.known_topics.add(topic)
        index = len(self.reports)
        self.reports.append(None)

        def on_delivery(err, msg):
            ts_type, ts = msg.timestamp()
            offset = msg.offset() if msg.offset() is not None and msg.offset() >= 0 else None
            self.reports[index] = api.Delivery(
                msg.partition(),
                offset,
                ts,
                ts_type - TIMESTAMP_CREATE_TIME,
                err.code() if err else 0,
                str(err) if err else "",
            )

        self.native.produce(
            topic,
            value=rec.value,
            key=rec.key,
            partition=rec.partition,
            headers=list(rec.headers) if rec.headers else None,
            timestamp=rec.timestamp or 0,
            on_delivery=on_delivery,
        )
        self.native.poll(0)
        return index

    def flush(self):
        assert self.native.flush(WAIT_SECONDS) == 0, "messages still undelivered after flush"

    def deliveries(self, handles):
        found = [self.reports[h] for h in handles]
        assert None not in found, "a delivery report is missing"
        return found

    def partitions_for(self, topic):
        return sorted(self.native.list_topics(topic, timeout=10).topics[topic].partitions)

    def close(self):
        self.native.close()


class ConfluentConsumer(api.Consumer):
    def __init__(self, settings: dict, timestamp_type: int):
        self.stats, self.stats_reports = {}, 0
        self.native = Consumer(settings | {"stats_cb": self.take_stats})
        self.timestamp_type = timestamp_type
        self.early = []  # records polled while waiting for positions

    def take_stats(self, report):
        self.stats = json.loads(report)
        self.stats_reports += 1

    def assign(self, topic, positions):
        self.native.assign([TopicPartition(topic, p, POSITIONS.get(o, o)) for p, o in positions.items()])

    def positions(self, topic, partitions):
        """The positions librdkafka's statistics report once every partition is fetching, and the
        same in two reports in a row: the main thread marks a partition active a moment before the
        broker thread moves ``next_offset`` to the offset it looked up, and a report can fall between."""
        until, seen, report = deadline(15), None, self.stats_reports
        while not expired(until):
            self.early += self.fetch(0.05)
            if self.stats_reports == report:
                continue
            report = self.stats_reports
            states = self.stats.get("topics", {}).get(topic, {}).get("partitions", {})
            states = [states.get(str(p), {}) for p in partitions]
            positions = {p: s.get("next_offset") for p, s in zip(partitions, states, strict=True)}
            if all(s.get("fetch_state") == "active" for s in states):
                if positions == seen:
                    return positions
                seen = positions
        raise AssertionError(f"partitions not fetching within 15s: {self.stats.get('topics', {}).get(topic)}")

    def fetch(self, seconds):
        if self.early:
            got, self.early = self.early, []
            return got
        msg = self.native.poll(seconds)
        if msg is None:
            return []
        if msg.error():
            error = msg.error()
            if error.code() == KafkaError._AUTO_OFFSET_RESET and "out of range" in error.str().lower():
                raise api.OutOfRange(error.str())
            raise KafkaException(error)
        ts_type, ts = msg.timestamp()
        self.check_timestamp_type(ts_type - TIMESTAMP_CREATE_TIME)
        return [Rec(msg.partition(), msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ()), ts)]

    def watermarks(self, topic, partitions):
        return {p: self.native.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in partitions}

    def offsets_for_times(self, topic, timestamps):
        found = self.native.offsets_for_times([TopicPartition(topic, p, t) for p, t in timestamps.items()], timeout=10)
        assert all(tp.error is None for tp in found), found
        return {tp.partition: None if tp.offset == OFFSET_END else (tp.offset, None) for tp in found}

    def close(self):
        self.native.close()


def result(futures: dict, key):
    """The result of one admin future, a ``BrokerError`` for a broker's error code."""
    try:
        return futures[key].result(timeout=20)
    except KafkaException as exc:
        raise api.BrokerError(exc.args[0].code(), exc.args[0].str()) from exc


class ConfluentAdmin(api.Admin):
    def __init__(self, native: AdminClient):
        self.native = native

    def create_topic(self, name, partitions, replication=1, configs=None, validate_only=False):
        new_topic = NewTopic(name, num_partitions=partitions, replication_factor=replication, config=configs or {})
        result(
            self.native.create_topics(
                [new_topic], operation_timeout=10, request_timeout=15, validate_only=validate_only
            ),
            name,
        )

    def delete_topic(self, name):
        result(self.native.delete_topics([name], operation_timeout=10, request_timeout=15), name)

    def topic_names(self):
        return set(self.native.list_topics(timeout=10).topics)

    def describe_topic(self, name):
        described = result(self.native.describe_topics(TopicCollection([name]), request_timeout=15), name)
        return api.TopicInfo(
            described.name,
            described.is_internal,
            [
                api.PartitionInfo(p.id, p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr])
                for p in described.partitions
            ],
        )

    def topic_configs(self, name):
        return self.configs(ConfigResource(ResourceType.TOPIC, name))

    def broker_configs(self, broker_id):
        return self.configs(ConfigResource(ResourceType.BROKER, str(broker_id)))

    def add_partitions(self, name, count):
        result(
            self.native.create_partitions([NewPartitions(name, count)], operation_timeout=10, request_timeout=15), name
        )

    def set_configs(self, name, configs, broker=False):
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
        resource = ConfigResource(
            ResourceType.BROKER if broker else ResourceType.TOPIC, name, incremental_configs=entries
        )
        futures = self.native.incremental_alter_configs([resource], request_timeout=15)
        result(futures, next(iter(futures)))

    def delete_records(self, topic, offsets):
        futures = self.native.delete_records(
            [TopicPartition(topic, p, o) for p, o in offsets.items()], request_timeout=15, operation_timeout=10
        )
        return {tp.partition: result(futures, tp).low_watermark for tp in futures}

    def configs(self, resource: ConfigResource) -> dict:
        entries = result(self.native.describe_configs([resource], request_timeout=15), resource)
        source = lambda entry: ConfigSource(entry.source).name  # noqa: E731
        return {
            name: api.ConfigEntry(
                e.value,
                source(e),
                e.is_default,
                e.is_read_only,
                e.is_sensitive,
                [(s.name, s.value, source(s)) for s in e.synonyms.values()],
                None,
            )
            for name, e in entries.items()
        }

    def close(self):
        pass
