"""The schema of a kafkalog read and the values in its typed columns.

* ``df.schema`` equals Spark's Kafka source schema exactly (names, order, types, nullability),
  with and without ``includeHeaders``.
* ``timestamp`` is the producer's epoch milliseconds (checked as text in the UTC session, as
  ``unix_millis``, and as local time in another session time zone), ``timestampType`` 0 for
  CreateTime and 1 (with the broker's append time) for a LogAppendTime topic; null keys, empty
  values, null header values survive.
* A user-specified schema is refused ("fixed schema"), as Spark's source does.
"""

import datetime
import time
import zoneinfo

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .feed import LOG_APPEND_TIME, Msg, assert_rows, create_topic, load, messages, produce, rows, without_headers

pytestmark = pytest.mark.timeout(120)

TOPIC = "schema-main"

SPARK_KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
    ]
)
SPARK_HEADERS = StructField(
    "headers",
    ArrayType(StructType([StructField("key", StringType(), True), StructField("value", BinaryType(), True)]), True),
    True,
)


@pytest.fixture(scope="module")
def produced(broker):
    return produce(broker.bootstrap, TOPIC, messages(12, partitions=(0, 1, 2, 3), tag="schema"))


def test_schema_is_sparks_kafka_schema(spark, broker, produced):
    df = load(spark, broker.bootstrap, subscribe=TOPIC)
    assert df.schema == SPARK_KAFKA_SCHEMA
    assert [f.nullable for f in df.schema.fields] == [True] * 7
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,timestampType:int>"
    )


def test_schema_with_headers_adds_the_headers_column(spark, broker, produced):
    df = load(spark, broker.bootstrap, subscribe=TOPIC, includeHeaders="true")
    assert df.schema == StructType(SPARK_KAFKA_SCHEMA.fields + [SPARK_HEADERS])
    headers = df.schema["headers"]
    assert headers.nullable and headers.dataType.containsNull
    assert all(f.nullable for f in headers.dataType.elementType.fields)
    assert df.schema.simpleString().endswith(",headers:array<struct<key:string,value:binary>>>")


def test_timestamps_are_the_producers_epoch_milliseconds_in_utc(spark, broker, produced):
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    df = load(spark, broker.bootstrap, subscribe=TOPIC)
    got = {
        (r["partition"], r["offset"]): (r["text"], r["ms"], r["timestampType"])
        for r in df.select(
            "partition",
            "offset",
            "timestampType",
            F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss.SSS").alias("text"),
            F.unix_millis("timestamp").alias("ms"),
        ).collect()
    }
    expected = {}
    for rec in produced:
        when = datetime.datetime.fromtimestamp(rec.timestamp / 1000, datetime.timezone.utc)
        expected[(rec.partition, rec.offset)] = (
            when.strftime("%Y-%m-%d %H:%M:%S.") + f"{rec.timestamp % 1000:03d}",
            rec.timestamp,
            0,
        )
    assert got == expected


def test_timestamps_are_instants_whatever_the_session_time_zone(spark, broker, produced):
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = load(spark, broker.bootstrap, subscribe=TOPIC)
        got = {
            (r.partition, r.offset): (r.ms, r.text)
            for r in df.select(
                "partition",
                "offset",
                F.unix_millis("timestamp").alias("ms"),
                F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss.SSS").alias("text"),
            ).collect()
        }
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    new_york = zoneinfo.ZoneInfo("America/New_York")
    expected = {}
    for rec in produced:
        when = datetime.datetime.fromtimestamp(rec.timestamp / 1000, datetime.timezone.utc).astimezone(new_york)
        expected[(rec.partition, rec.offset)] = (
            rec.timestamp,
            when.strftime("%Y-%m-%d %H:%M:%S.") + f"{rec.timestamp % 1000:03d}",
        )
    assert got == expected


def test_millisecond_timestamps_and_edge_values_survive(spark, broker):
    topic = "schema-edges"
    # a record stamped in 2100 needs the topic to accept timestamps ahead of the clock (Kafka 4 refuses
    # those more than an hour ahead by default: INVALID_TIMESTAMP)
    create_topic(broker.bootstrap, topic, 1, {"message.timestamp.after.max.ms": str(2**63 - 1)})
    msgs = [
        Msg(0, None, None, 1, None),
        Msg(0, b"", b"", 999, (("", b""),)),
        Msg(0, b"\x00\xff", b"\x00" * 3, 1_700_000_000_123, (("k\u00e9y", None), ("k\u00e9y", b"\x01"))),
        Msg(0, b"k" * 5000, b"v" * 100_000, 4_102_444_800_999, None),
    ]  # 2100-01-01T00:00:00.999Z
    produced = produce(broker.bootstrap, topic, msgs)
    df = load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true")
    assert_rows(rows(df), produced)
    texts = [
        r[0] for r in df.orderBy("offset").select(F.date_format("timestamp", "yyyy-MM-dd'T'HH:mm:ss.SSS")).collect()
    ]
    assert texts == [
        "1970-01-01T00:00:00.001",
        "1970-01-01T00:00:00.999",
        "2023-11-14T22:13:20.123",
        "2100-01-01T00:00:00.999",
    ]


def test_log_append_time_topic_gives_type_1_and_the_brokers_time(spark, broker):
    topic = "schema-log-append"
    create_topic(broker.bootstrap, topic, 1, {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    produced = produce(broker.bootstrap, topic, messages(5, partitions=(0,), base_ts=1_000_000_000_000, tag="lat"))
    after = int(time.time() * 1000)
    got = rows(load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true"))
    assert [r.timestamp_type for r in got] == [LOG_APPEND_TIME] * 5
    assert all(before - 1000 <= r.timestamp <= after + 1000 for r in got), [r.timestamp for r in got]
    assert_rows([r._replace(timestamp=0, timestamp_type=0) for r in got], [r._replace(timestamp=0) for r in produced])


def test_a_different_user_schema_is_refused(spark, broker, produced):
    with pytest.raises(Exception, match="fixed schema"):
        (
            spark.read.format("kafkalog")
            .schema("key binary, value binary")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", TOPIC)
            .load()
            .collect()
        )


def test_even_the_same_schema_given_by_the_user_is_refused(spark, broker, produced):
    # Spark's Kafka source refuses any user schema ("Kafka source has a fixed schema and cannot be
    # set with a custom one"), also one equal to its own
    with pytest.raises(Exception, match="fixed schema"):
        (
            spark.read.format("kafkalog")
            .schema(SPARK_KAFKA_SCHEMA)
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", TOPIC)
            .load()
            .collect()
        )


def test_casting_key_and_value_to_string_as_in_sparks_examples(spark, broker, produced):
    df = load(spark, broker.bootstrap, subscribe=TOPIC).selectExpr(
        "CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v", "partition", "offset"
    )
    got = sorted((r.partition, r.offset, r.k, r.v) for r in df.collect())
    assert got == sorted(
        (r.partition, r.offset, r.key.decode() if r.key is not None else None, r.value.decode())
        for r in without_headers(produced)
    )
