"""aiokafka behind the interop client interface, synchronously: every call runs on one event loop.

aiokafka mirrors kafka-python's API with coroutines, so its producer and consumer are
kafka-python's adapter classes driving aiokafka objects through ``Synced``, which runs each call
(coroutine or not: ``assign`` needs the running loop too) to completion, bounded. Between two
calls the loop stands still, so aiokafka's background tasks (fetcher, sender) run only during a
call; no test relies on them running in between.

Its differences are the flags set on ``AiokafkaClient``; besides, its admin client returns most
error codes rather than raising (``BrokerError`` here; create_partitions and delete_records raise),
and its ``flush`` waits out ``linger_ms`` where the other clients cut it short.
"""

import asyncio
import inspect

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka import errors as aiokafka_errors
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from . import client_api as api
from .client_kafka_python import KafkaPythonConsumer, KafkaPythonProducer, consumer_settings, topic_info
from .common import WAIT_SECONDS

CALL_SECONDS = 60
LOOP = asyncio.new_event_loop()


def run(awaitable, seconds: float = CALL_SECONDS):
    return LOOP.run_until_complete(asyncio.wait_for(awaitable, seconds))


class Synced:
    """An aiokafka client, made and started on ``LOOP``, whose methods run there to completion."""

    def __init__(self, kind, seconds: float = CALL_SECONDS, **settings):
        self.seconds = seconds
        self.native = run(self.started(kind, settings))

    @staticmethod
    async def started(kind, settings):
        client = kind(**settings)  # aiokafka clients must be made on a running loop
        await client.start()
        return client

    def __getattr__(self, name):
        method = getattr(self.native, name)

        async def called(*args, **kwargs):
            result = method(*args, **kwargs)
            return await result if inspect.isawaitable(result) else result

        return lambda *args, **kwargs: run(called(*args, **kwargs), self.seconds)


class AiokafkaClient(api.Client):
    name = "aiokafka"
    sends_null_key_and_value = False  # refused on the client side
    # aiokafka 0.14 keeps the sequence number a refused batch used, so the next batch is one ahead and
    # gets OUT_OF_ORDER_SEQUENCE_NUMBER, from this broker as from Kafka (the Java client rewinds)
    idempotent_producer_survives_rejected_batch = False
    describes_configs = False  # its describe_configs gives raw protocol structs; not wrapped

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
        return AiokafkaProducer(
            Synced(
                AIOKafkaProducer,
                linger_ms / 1000 + WAIT_SECONDS,
                **api.settings(
                    {
                        "bootstrap_servers": self.bootstrap,
                        "linger_ms": linger_ms,
                        "request_timeout_ms": 15000,
                        "compression_type": None if compression == "none" else compression,
                    },
                    {
                        "acks": acks,
                        "enable_idempotence": idempotence,
                        "max_batch_size": batch_bytes,
                        "max_request_size": max_request_bytes,
                    },
                    native,
                ),
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
        return AiokafkaConsumer(
            Synced(
                AIOKafkaConsumer,
                **consumer_settings(self.bootstrap, reset, fetch_wait_ms, partition_fetch_bytes, fetch_bytes, native),
            ),
            timestamp_type,
        )

    def admin(self):
        return AiokafkaAdmin(Synced(AIOKafkaAdminClient, bootstrap_servers=self.bootstrap, request_timeout_ms=15000))


class AiokafkaProducer(KafkaPythonProducer):
    """``send`` returns an asyncio future; ``flush`` may take ``linger_ms`` longer."""

    delivery_errors = aiokafka_errors.KafkaError

    def flush(self):
        self.native.flush()

    def deliveries(self, handles):
        return [self.delivery(lambda future=future: run(future, WAIT_SECONDS)) for future in handles]

    def close(self):
        self.native.stop()


class AiokafkaConsumer(KafkaPythonConsumer):
    timeout = {}  # aiokafka's calls take none; ``Synced`` bounds them
    out_of_range_error = aiokafka_errors.OffsetOutOfRangeError
    topic_partition = TopicPartition

    def poll_native(self, timeout_ms):
        return self.native.getmany(timeout_ms=timeout_ms)

    def close(self):
        self.native.stop()


class AiokafkaAdmin(api.Admin):
    def __init__(self, native: Synced):
        self.native = native

    @staticmethod
    def raise_errors(response) -> None:
        """A CreateTopics / DeleteTopics response's first topic error, as ``BrokerError``."""
        rows = getattr(response, "topic_errors", None) or response.topic_error_codes
        api.raise_first_error([row[1] for row in rows], str(rows))

    def create_topic(self, name, partitions, replication=1, configs=None, validate_only=False):
        new_topic = NewTopic(
            name, num_partitions=partitions, replication_factor=replication, topic_configs=configs or {}
        )
        self.raise_errors(self.native.create_topics([new_topic], timeout_ms=10000, validate_only=validate_only))

    def delete_topic(self, name):
        self.raise_errors(self.native.delete_topics([name], timeout_ms=10000))

    def topic_names(self):
        return set(self.native.list_topics())

    def describe_topic(self, name):
        [described] = self.native.describe_topics([name])
        return topic_info(described, "topic", ("partition", "leader", "replicas", "isr"))

    @staticmethod
    def raising_broker_error(call, *args, **kwargs):
        """Some of its admin calls raise the broker's error instead of returning it."""
        try:
            return call(*args, **kwargs)
        except aiokafka_errors.KafkaError as exc:
            raise api.BrokerError(getattr(exc, "errno", -1), str(exc)) from exc

    def add_partitions(self, name, count):
        self.raising_broker_error(self.native.create_partitions, {name: NewPartitions(count)}, timeout_ms=10000)

    def set_configs(self, name, configs, broker=False):
        """aiokafka has only AlterConfigs, which replaces every dynamic setting of the resource."""
        kind = ConfigResourceType.BROKER if broker else ConfigResourceType.TOPIC
        for response in self.native.alter_configs([ConfigResource(kind, name, configs=configs)]):
            api.raise_first_error([r[0] for r in response.resources], str(response.resources))

    def delete_records(self, topic, offsets):
        answer = self.raising_broker_error(
            self.native.delete_records,
            {TopicPartition(topic, p): RecordsToDelete(o) for p, o in offsets.items()},
            timeout_ms=10000,
        )
        return {tp.partition: low_watermark for tp, low_watermark in answer.items()}

    def close(self):
        self.native.close()
