"""kafka-python (3.x) behind the interop client interface; its differences are the flags set on
``KafkaPythonClient``. aiokafka mirrors this API, so ``client_aiokafka`` reuses the producer and
consumer classes."""

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kafka_errors
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic

from . import client_api as api
from .common import WAIT_SECONDS, Rec


class KafkaPythonClient(api.Client):
    name = "kafka-python"
    sends_null_header_values = False  # refused on the client side
    sends_null_key_and_value = False  # refused on the client side
    invents_offsets_for_acks_0 = True  # counted within the batch
    idempotent_by_default = True  # kafka-python 3's default
    # kafka-python 3.0.12 classifies any non-retriable batch error of a non-transactional idempotent
    # producer as fatal, so the producer is unusable afterwards (Kafka's answer is the same)
    idempotent_producer_survives_rejected_batch = False
    broker_error_marker = "exceeds max.message.bytes"  # the broker's error message, passed on
    describe_configs_reports_errors = False  # drops the per-resource error codes

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
        return KafkaPythonProducer(
            KafkaProducer(
                **api.settings(
                    {
                        "bootstrap_servers": self.bootstrap,
                        "linger_ms": linger_ms,
                        "request_timeout_ms": 15000,
                        "max_block_ms": 15000,
                        "compression_type": None if compression == "none" else compression,
                    },
                    {
                        "acks": acks,
                        "enable_idempotence": idempotence,
                        "batch_size": batch_bytes,
                        "max_request_size": max_request_bytes,
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
        return KafkaPythonConsumer(
            KafkaConsumer(
                **consumer_settings(self.bootstrap, reset, fetch_wait_ms, partition_fetch_bytes, fetch_bytes, native)
            ),
            timestamp_type,
        )

    def admin(self):
        return KafkaPythonAdmin(KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000))


def consumer_settings(bootstrap, reset, fetch_wait_ms, partition_fetch_bytes, fetch_bytes, native) -> dict:
    """kafka-python's and aiokafka's consumer configuration from ``Client.consumer``'s options."""
    return api.settings(
        {
            "bootstrap_servers": bootstrap,
            "group_id": None,
            "enable_auto_commit": False,
            "auto_offset_reset": reset,
            "fetch_max_wait_ms": fetch_wait_ms,
            "request_timeout_ms": 15000,
        },
        {"max_partition_fetch_bytes": partition_fetch_bytes, "fetch_max_bytes": fetch_bytes},
        native,
    )


class KafkaPythonProducer(api.Producer):
    delivery_errors = kafka_errors.KafkaError

    def __init__(self, native):
        self.native = native

    def send(self, topic, rec):
        return self.native.send(
            topic,
            value=rec.value,
            key=rec.key,
            headers=list(rec.headers),
            partition=rec.partition,
            timestamp_ms=rec.timestamp,
        )

    def flush(self):
        self.native.flush(timeout=WAIT_SECONDS)

    def deliveries(self, handles):
        return [self.delivery(lambda future=future: future.get(timeout=WAIT_SECONDS)) for future in handles]

    def delivery(self, metadata_of) -> api.Delivery:
        try:
            metadata = metadata_of()
        except self.delivery_errors as exc:
            return api.Delivery(None, None, error_code=getattr(exc, "errno", -1), error_text=str(exc))
        if metadata is None:  # aiokafka with acks=0
            return api.Delivery(None, None)
        return api.Delivery(metadata.partition, metadata.offset, metadata.timestamp)

    def partitions_for(self, topic):
        return sorted(self.native.partitions_for(topic))

    def close(self):
        self.native.close(timeout=10)


class KafkaPythonConsumer(api.Consumer):
    timeout = {"timeout_ms": 10000}  # for the calls that take one
    out_of_range_error = kafka_errors.OffsetOutOfRangeError
    topic_partition = TopicPartition

    def __init__(self, native, timestamp_type: int):
        self.native = native
        self.timestamp_type = timestamp_type

    def assign(self, topic, positions):
        partitions = {p: self.topic_partition(topic, p) for p in positions}
        self.native.assign(list(partitions.values()))
        for p, position in positions.items():
            if position == api.EARLIEST:
                self.native.seek_to_beginning(partitions[p])
            elif position == api.LATEST:
                self.native.seek_to_end(partitions[p])
            elif position is not None:
                self.native.seek(partitions[p], position)

    def positions(self, topic, partitions):
        return {p: self.native.position(self.topic_partition(topic, p), **self.timeout) for p in partitions}

    def fetch(self, seconds):
        try:
            batches = self.poll_native(int(seconds * 1000))
        except self.out_of_range_error as exc:
            raise api.OutOfRange(str(exc)) from exc
        got = []
        for record in (r for batch in batches.values() for r in batch):
            self.check_timestamp_type(record.timestamp_type)
            got.append(
                Rec(
                    record.partition,
                    record.offset,
                    record.key,
                    record.value,
                    tuple(record.headers or ()),
                    record.timestamp,
                )
            )
        return got

    def poll_native(self, timeout_ms: int) -> dict:
        return self.native.poll(timeout_ms=timeout_ms)

    def watermarks(self, topic, partitions):
        tps = [self.topic_partition(topic, p) for p in partitions]
        low, high = self.native.beginning_offsets(tps, **self.timeout), self.native.end_offsets(tps, **self.timeout)
        return {tp.partition: (low[tp], high[tp]) for tp in tps}

    def offsets_for_times(self, topic, timestamps):
        found = self.native.offsets_for_times(
            {self.topic_partition(topic, p): t for p, t in timestamps.items()}, **self.timeout
        )
        return {tp.partition: o and (o.offset, o.timestamp) for tp, o in found.items()}

    def close(self):
        self.native.close()


def topic_info(described: dict, name_key: str, partition_keys: tuple) -> api.TopicInfo:
    """A topic of a metadata response as kafka-python and aiokafka give it, with their own keys for
    the name and for a partition's (id, leader, replicas, isr)."""
    api.raise_first_error([described["error_code"]] + [p["error_code"] for p in described["partitions"]])
    return api.TopicInfo(
        described[name_key],
        described["is_internal"],
        sorted(api.PartitionInfo(*(p[key] for key in partition_keys)) for p in described["partitions"]),
    )


def raising_broker_error(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except kafka_errors.BrokerResponseError as exc:
        raise api.BrokerError(exc.errno, str(exc)) from exc


class KafkaPythonAdmin(api.Admin):
    def __init__(self, native: KafkaAdminClient):
        self.native = native

    def create_topic(self, name, partitions, replication=1, configs=None, validate_only=False):
        new_topic = NewTopic(
            name, num_partitions=partitions, replication_factor=replication, topic_configs=configs or {}
        )
        raising_broker_error(self.native.create_topics, [new_topic], timeout_ms=10000, validate_only=validate_only)

    def delete_topic(self, name):
        raising_broker_error(self.native.delete_topics, [name], timeout_ms=10000)

    def topic_names(self):
        return set(self.native.list_topics())

    def describe_topic(self, name):
        [described] = self.native.describe_topics([name])
        return topic_info(described, "name", ("partition_index", "leader_id", "replica_nodes", "isr_nodes"))

    def topic_configs(self, name):
        return self.configs(ConfigResourceType.TOPIC, name)

    def broker_configs(self, broker_id):
        return self.configs(ConfigResourceType.BROKER, str(broker_id))

    def configs(self, kind, name):
        described = self.native.describe_configs(
            [ConfigResource(kind, name)], include_synonyms=True, config_filter="all"
        )
        return {
            key: api.ConfigEntry(
                c["value"],
                c["config_source"],
                c["config_source"] == "DEFAULT_CONFIG",
                c["read_only"],
                c["is_sensitive"],
                [(s["name"], s["value"], s["source"]) for s in c["synonyms"]],
                c["config_type"],
            )
            for key, c in described[kind.name.lower()][name].items()
        }

    def add_partitions(self, name, count):
        raising_broker_error(self.native.create_partitions, {name: NewPartitions(count)}, timeout_ms=10000)

    def set_configs(self, name, configs, broker=False):
        kind = ConfigResourceType.BROKER if broker else ConfigResourceType.TOPIC
        answer = self.native.alter_configs([ConfigResource(kind, name, configs=configs)])[kind.name.lower()][name]
        if answer != "OK":  # "[Error 40] InvalidConfigurationError: ..."
            raise api.BrokerError(int(answer.split("]")[0].removeprefix("[Error ")), answer)

    def delete_records(self, topic, offsets):
        answer = raising_broker_error(
            self.native.delete_records, {TopicPartition(topic, p): o for p, o in offsets.items()}, timeout_ms=10000
        )
        api.raise_first_error([r["error_code"] for r in answer.values()], str(answer))
        return {tp.partition: r["low_watermark"] for tp, r in answer.items()}

    def close(self):
        self.native.close()
