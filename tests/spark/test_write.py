"""``df.write.format("kafkalog")`` on a real local SparkSession against a real broker: rows written
are read back exactly (by ``spark.read`` and by the three third-party consumers), keys land in the
partition Kafka's Java partitioner picks (checked against librdkafka's and kafka-python's murmur2
partitioners), rows without a key spread evenly, the topic column and option, the partition column,
null keys, headers, a DataFrame read with kafkalog written back, every codec; the errors a user
meets, each one line naming the column, option or row; and a write to librdkafka's mock cluster."""

import pytest
from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType

from broker.client import KafkaClient, partition_for_key
from broker.records import record_set

from ..interop.client_api import EARLIEST
from ..interop.clients import ADAPTERS
from .feed import Msg, base_time, create_topic, load, log_end, messages, produce, topic_name

pytestmark = pytest.mark.timeout(420)  # the first test starts Spark: minutes on a loaded 2-core machine

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
SCHEMA = StructType(
    [StructField("key", StringType()), StructField("value", BinaryType()), StructField("headers", HEADERS)]
)
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def sample_rows(count: int, tag: str) -> list[tuple]:
    """(key, value, headers), distinct values: one key in five null, headers (one with a null value) on every third."""
    return [
        (
            None if i % 5 == 4 else f"{tag}-k{i}",
            f"{tag}-v{i}".encode(),
            [("h", f"{i}".encode()), ("empty", None)] if i % 3 == 0 else None,
        )
        for i in range(count)
    ]


def write(df, bootstrap: str, **options):
    writer = df.write.format("kafkalog").mode("append").option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.save()


def read_back(spark, bootstrap: str, topic: str) -> list[tuple]:
    """(partition, key, value, headers) of every record, in partition and offset order."""
    df = load(spark, bootstrap, subscribe=topic, includeHeaders="true")
    return [
        (
            r.partition,
            None if r.key is None else bytes(r.key).decode(),
            None if r.value is None else bytes(r.value),
            None if r.headers is None else [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers],
        )
        for r in df.orderBy("partition", "offset").collect()
    ]


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
    assert java_partitions == partitions_by_confluent(
        broker.bootstrap, topic_name(request, "-confluent"), list(java_partitions)
    )
    assert java_partitions == partitions_by_kafka_python(
        broker.bootstrap, topic_name(request, "-kp"), list(java_partitions)
    )


def partitions_by_confluent(bootstrap: str, topic: str, keys: list[str]) -> dict:
    """Where librdkafka's Java-compatible partitioner (murmur2_random) puts ``keys`` in a 4-partition topic."""
    from confluent_kafka import Producer

    create_topic(bootstrap, topic, 4)
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    placed = {}
    for key in keys:
        producer.produce(
            topic,
            key=key.encode(),
            value=b"x",
            on_delivery=lambda err, msg: placed.__setitem__(msg.key().decode(), msg.partition()),
        )
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


def test_the_topic_column_the_partition_column_and_the_topic_option_that_wins(spark, broker, request):
    first, second, chosen = (topic_name(request, suffix) for suffix in ("-a", "-b", "-option"))
    for topic in (first, second, chosen):
        create_topic(broker.bootstrap, topic, 3)
    rows = [
        (first, 2, "k1", "to a, 2"),
        (second, None, None, "to b, sticky"),
        (second, 0, "k2", "to b, 0"),
        (first, None, "k3", "to a, by key"),
    ]
    df = spark.createDataFrame(rows, "topic string, partition int, key string, value string")
    write(df, broker.bootstrap)
    assert read_back(spark, broker.bootstrap, first) == sorted(
        [(2, "k1", b"to a, 2", None), (partition_for_key(b"k3", 3), "k3", b"to a, by key", None)]
    )
    in_second = read_back(spark, broker.bootstrap, second)
    assert [(p, k, v) for p, k, v, _ in in_second if k] == [(0, "k2", b"to b, 0")]
    assert [v for _, k, v, _ in in_second if k is None] == [b"to b, sticky"]
    write(df, broker.bootstrap, topic=chosen)  # the option wins over the column
    assert sorted(v for _, _, v, _ in read_back(spark, broker.bootstrap, chosen)) == sorted(r[3].encode() for r in rows)


def test_keyless_rows_spread_evenly_over_the_partitions(spark, broker, request):
    """Each task's sticky partition moves on after a batch's worth of bytes (16 KiB at most), as Kafka's
    built-in partitioner: 20,000 rows in 4 tasks of 5,000 once landed 5,000/5,000/10,000/0 (each task
    kept one partition). With 1 KiB batches a task moves on about every 60 rows, so a partition's share
    is 5,000 give or take one move per task (with 16 KiB a task of 5,000 rows moves only 5 to 7 times,
    and its random first partition alone could put a partition 25% off)."""
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 4)
    count = 20_000
    df = spark.range(count).selectExpr("CAST(id AS STRING) AS value").repartition(4)
    write(df, broker.bootstrap, topic=topic, **{"kafka.batch.size": "1024"})
    landed = [log_end(broker.bootstrap, topic, p) for p in range(4)]
    assert sum(landed) == count and all(count / 4 * 0.75 <= n <= count / 4 * 1.25 for n in landed), landed


def test_a_dataframe_read_with_kafkalog_is_written_back_to_the_same_partitions(spark, broker, request):
    source, copy = topic_name(request, "-source"), topic_name(request, "-copy")
    create_topic(broker.bootstrap, source, 3)
    create_topic(broker.bootstrap, copy, 3)
    produce(
        broker.bootstrap,
        source,
        messages(30, partitions=(0, 1, 2), tag="copy") + [Msg(1, b"deleted", None, base_time())],
    )  # a tombstone: null value
    write(load(spark, broker.bootstrap, subscribe=source, includeHeaders="true"), broker.bootstrap, topic=copy)
    assert read_back(spark, broker.bootstrap, copy) == read_back(spark, broker.bootstrap, source)
    assert (1, "deleted", None, None) in read_back(spark, broker.bootstrap, copy)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_is_stored_as_asked_and_read_back(spark, broker, request, codec):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 2)
    rows = sample_rows(60, codec)
    write(
        spark.createDataFrame(rows, SCHEMA).coalesce(1),
        broker.bootstrap,
        topic=topic,
        **{"kafka.compression.type": codec},
    )
    assert sorted(v for _, _, v, _ in read_back(spark, broker.bootstrap, topic)) == sorted(v for _, v, _ in rows)
    with KafkaClient(broker.bootstrap) as client:
        codecs = {
            header.compression
            for partition in (0, 1)
            for _, header in record_set.iter_entries(client.fetch(topic, partition, 0, 1 << 20).records)
        }
    assert codecs == {CODEC_IDS[codec]}


@pytest.fixture(scope="module")
def written_for_consumers(spark, broker):
    """A topic written once by the sink (zstd, headers with values), and the rows written."""
    topic = "sink-for-consumers"
    create_topic(broker.bootstrap, topic, 1)
    rows = [(k, v, [("h", v), ("again", b"")] if hs else None) for k, v, hs in sample_rows(30, "consumers")]
    write(
        spark.createDataFrame(rows, SCHEMA).coalesce(1),
        broker.bootstrap,
        topic=topic,
        **{"kafka.compression.type": "zstd"},
    )
    return topic, rows


@pytest.mark.parametrize("client", sorted(ADAPTERS))
def test_each_third_party_consumer_reads_what_was_written(broker, written_for_consumers, client):
    topic, rows = written_for_consumers
    consumed = ADAPTERS[client](broker.bootstrap).consume(topic, {0: EARLIEST}, len(rows))
    assert [(r.key, r.value, tuple(r.headers or ())) for r in consumed] == [
        (None if k is None else k.encode(), v, tuple(hs or ())) for k, v, hs in rows
    ]


def test_a_write_to_librdkafkas_mock_cluster(spark, mock):
    bootstrap, handle = mock
    topic = "sink-to-mock"
    assert handle.list_topics(topic, timeout=10).topics[topic].partitions  # the mock creates it, 4 partitions
    rows = sample_rows(80, "mock")
    write(spark.createDataFrame(rows, SCHEMA).repartition(2), bootstrap, topic=topic)
    stored = read_back(spark, bootstrap, topic)
    assert sorted(v for _, _, v, _ in stored) == sorted(v for _, v, _ in rows)
    partitions = len(handle.list_topics(topic, timeout=10).topics[topic].partitions)
    assert all(p == partition_for_key(k.encode(), partitions) for p, k, _, _ in stored if k is not None)


# -- errors: one line naming the column, the option or the row ---------------------------------------


def write_error(spark, df, bootstrap: str, mode: str = "append", **options) -> str:
    writer = df.write.format("kafkalog").mode(mode).option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        writer = writer.option(name, value)
    with pytest.raises(Exception) as raised:
        writer.save()
    return one_line_error(raised)


@pytest.mark.parametrize(
    "columns, options, expected",
    [
        ("CAST(id AS STRING) AS key", {"topic": "t"}, "the DataFrame has no value column"),
        ("id AS value", {"topic": "t"}, "column value is bigint; the kafkalog sink writes a string or binary value"),
        ("1.5 AS key, 'v' AS value", {"topic": "t"}, "column key is decimal(2,1)"),
        ("'v' AS value", {}, "the DataFrame has no topic column and the topic option is not set"),
        ("'v' AS value, id AS topic", {}, "column topic is bigint; it must be a string"),
        ("'v' AS value, id AS partition", {"topic": "t"}, "column partition is bigint; it must be an int"),
        (
            "'v' AS value, array('x') AS headers",
            {"topic": "t"},
            "column headers is array<string>; it must be array<struct<key:string,value:binary>>",
        ),
        (
            "'v' AS value",
            {"topic": "t", "topik": "x"},
            "option topik: unknown option of the kafkalog sink (did you mean topic?)",
        ),
        ("'v' AS value", {"topic": "t", "kafka.acks": "2"}, "option kafka.acks: '2' is not all, -1, 1 or 0"),
        (
            "'v' AS value",
            {"topic": "t", "kafka.acks": "1", "kafka.enable.idempotence": "true"},
            "an idempotent producer needs kafka.acks all",
        ),
        ("'v' AS value", {"topic": "t", "kafka.compression.type": "brotli"}, "option kafka.compression.type: unknown"),
        (
            "'v' AS value",
            {"topic": "t", "kafka.partitioner.class": "com.example.P"},
            "a Java partitioner cannot run here",
        ),
    ],
)
def test_a_dataframe_or_option_the_sink_cannot_take_is_refused_before_any_task(
    spark, broker, columns, options, expected
):
    df = (
        spark.range(2).selectExpr(*columns.split(", "))
        if "1.5" not in columns
        else spark.range(2).selectExpr("1.5 AS key", "'v' AS value")
    )
    assert expected in write_error(spark, df, broker.bootstrap, **options)


def test_overwrite_is_refused_and_errorifexists_meets_sparks_own_check(spark, broker):
    df = spark.range(1).selectExpr("'v' AS value")
    assert "save mode overwrite is not supported by the kafkalog sink" in write_error(
        spark, df, broker.bootstrap, "overwrite", topic="t"
    )
    assert "append" in write_error(spark, df, broker.bootstrap, "errorifexists", topic="t").lower()


def test_rows_the_broker_cannot_take_are_named(spark, start_broker, request):
    broker = start_broker({"auto.create.topics.enable": "false", "num.partitions": "2"})
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 2, {"max.message.bytes": "2000"})
    missing = topic_name(request, "-missing")
    assert f"topic '{missing}' does not exist (row 0 of the task writing the DataFrame's partition 0" in write_error(
        spark, spark.range(1).selectExpr("'v' AS value"), broker.bootstrap, topic=missing
    )
    big = spark.range(5).selectExpr("CAST(id AS STRING) AS key", "IF(id = 3, repeat('x', 5000), 'small') AS value")
    message = write_error(spark, big.coalesce(1), broker.bootstrap, topic=topic)
    assert "row 3 of the task writing the DataFrame's partition 0" in message and "a record of 5,001 bytes" in message
    assert f"{topic}-{partition_for_key(b'3', 2)}" in message and "MESSAGE_TOO_LARGE" in message, message
    out_of_range = spark.range(3).selectExpr("'v' AS value", "CAST(id * 2 AS INT) AS partition").coalesce(1)
    assert (
        f"row 1 of the task writing the DataFrame's partition 0 (attempt 0): partition 2 of topic '{topic}' "
        f"does not exist "
        f"(it has 2 partitions)"
    ) in write_error(spark, out_of_range, broker.bootstrap, topic=topic)
    null_topic = spark.createDataFrame([(topic, "v"), (None, "v")], "topic string, value string").coalesce(1)
    assert "row 1 of the task writing the DataFrame's partition 0 (attempt 0): the topic column is null" in write_error(
        spark, null_topic, broker.bootstrap
    )
