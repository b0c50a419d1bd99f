"""A topic's ``compression.type``, against a real broker and confluent-kafka producers: ``producer``
(the default) stores each batch with the codec it was sent with; any other codec makes the broker
recompress batches that differ, as Kafka does, keeping every record (key, value, headers,
timestamp) and the idempotent producer's sequence; a change of the setting applies to the next
batches of the running log; a batch over ``max.message.bytes`` is MESSAGE_TOO_LARGE."""

import os
import time

import confluent_kafka
import pytest

from broker.client import EARLIEST, LATEST, KafkaClient, NewTopic
from broker.embedded import EmbeddedBroker
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch, record_set
from broker.records.batch import Record
from broker.records.compression import Codec

from .test_admin_apis import SET, TOPIC, incremental, new_topic
from .wire import connect_to, produce_body

WAIT_SECONDS = 20
BASE_TIMESTAMP = int(time.time() * 1000) - 60_000  # recent: the default retention keeps it


@pytest.fixture(scope="module")
def compression_broker(tmp_path_factory):
    process = EmbeddedBroker(tmp_path_factory.mktemp("compression") / "log", {"num.partitions": "1"}).start()
    yield process
    process.kill()


def produce(bootstrap: str, topic: str, codec: str, count: int, tag: str, **settings) -> None:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "linger.ms": 50,
            "message.timeout.ms": WAIT_SECONDS * 1000,
            **settings,
        }
    )
    errors = []
    for i in range(count):
        producer.produce(
            topic,
            key=b"k%d" % i,
            value=(tag * 50).encode() + b"%d" % i,
            partition=0,
            headers=[("h", b"%d" % i)],
            timestamp=BASE_TIMESTAMP + i,
            on_delivery=lambda err, msg: errors.append(err) if err else None,
        )
    assert producer.flush(WAIT_SECONDS) == 0 and not errors, errors


def stored(bootstrap: str, topic: str) -> tuple[list[str], list[tuple]]:
    """The codec of each stored batch, and every record as (offset, key, value, headers, timestamp)."""
    codecs, records, offset = [], [], 0
    with KafkaClient(bootstrap, timeout=10) as client:
        assert client.list_offsets({(topic, 0): EARLIEST})[(topic, 0)][0] == 0
        end = client.list_offsets({(topic, 0): LATEST})[(topic, 0)][0]
        while offset < end:
            data = client.fetch(topic, 0, offset, 1 << 20).records
            for position, header in record_set.iter_entries(data):
                codecs.append(header.compression.name.lower())
                decoded = batch.decode(bytes(data[position : position + header.size]))
                records += [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in decoded.records]
                offset = header.last_offset + 1
    return codecs, records


def expected(count: int, tag: str, first_offset: int = 0) -> list[tuple]:
    return [
        (first_offset + i, b"k%d" % i, (tag * 50).encode() + b"%d" % i, (("h", b"%d" % i),), BASE_TIMESTAMP + i)
        for i in range(count)
    ]


@pytest.mark.parametrize(
    "setting, sent, kept",
    [
        ("producer", "snappy", "snappy"),
        ("producer", "gzip", "gzip"),
        ("gzip", "snappy", "gzip"),
        ("zstd", "none", "zstd"),
        ("uncompressed", "gzip", "none"),
        ("snappy", "snappy", "snappy"),
    ],
)
def test_batches_are_stored_with_the_topics_codec(compression_broker, setting, sent, kept):
    with KafkaClient(compression_broker.bootstrap) as client:
        topic = f"codec-{setting}-{sent}"
        assert client.create_topics([NewTopic(topic, 1, {"compression.type": setting})]) == {topic: None}
    produce(compression_broker.bootstrap, topic, sent, 20, "a")
    codecs, records = stored(compression_broker.bootstrap, topic)
    assert codecs and set(codecs) == {kept}
    assert records == expected(20, "a")


def test_recompressed_idempotent_batches_keep_their_sequence_and_a_change_applies_to_later_batches(compression_broker):
    with connect_to(compression_broker) as wire:
        topic = new_topic(wire, configs={"compression.type": "gzip"})
        produce(compression_broker.bootstrap, topic, "snappy", 10, "b", **{"enable.idempotence": True})
        assert incremental(wire, TOPIC, topic, [("compression.type", SET, "zstd")])["error_code"] == 0
        produce(compression_broker.bootstrap, topic, "snappy", 10, "c", **{"enable.idempotence": True})
    codecs, records = stored(compression_broker.bootstrap, topic)
    assert codecs[0] == "gzip" and codecs[-1] == "zstd" and set(codecs) == {"gzip", "zstd"}
    assert records == expected(10, "b") + expected(10, "c", first_offset=10)


def test_a_batch_over_max_message_bytes_is_refused_by_a_recompressing_topic(compression_broker):
    with connect_to(compression_broker) as wire:
        topic = new_topic(wire, configs={"compression.type": "zstd", "max.message.bytes": "2000"})
        records = batch.build(
            [Record(i, BASE_TIMESTAMP, None, os.urandom(1000)) for i in range(4)], compression=Codec.GZIP
        )
        assert len(records) > 2000
        [answer] = wire.call(ApiKey.PRODUCE, 8, produce_body(topic, 0, records))["responses"][0]["partitions"]
    assert answer["error_code"] == ErrorCode.MESSAGE_TOO_LARGE, answer
