"""The Python examples of Spark's Kafka integration guide, run with ``format("kafkalog")`` against a
real broker: the guide's option sets and ``selectExpr`` columns are copied below as data (topic names
adapted: ``topic1`` becomes ``<prefix>topic1``), each example runs as the guide writes it, and its
result is compared with the records produced.

Streaming reads start at ``latest`` (the guide sets no ``startingOffsets``), so each query sees only
records produced after its first micro-batch. What the guide leaves to the reader is added, and
named where it is: a ``checkpointLocation`` for a streaming sink, a streaming source for the
guide's ``df`` (``startingOffsets`` earliest, as its examples do not say where ``df`` comes from),
and ``.mode("append")`` for a batch write (PySpark refuses ``errorifexists``, the default, before a
Python sink is asked; Spark's Kafka sink takes it: the one difference, tested here too).
"""

import pytest
from pyspark.sql import functions as F

from .feed import Rec, create_topic, in_range, load, messages, produce
from .test_stream_queries import WAIT_SECONDS, ended_at, started, wait_while_running

pytestmark = pytest.mark.timeout(480)  # several streaming queries, and Spark's start when first

KV = ["CAST(key AS STRING)", "CAST(value AS STRING)"]

# "Creating a Kafka Source for Streaming Queries" (readStream)
GUIDE_STREAM_READS = {
    "subscribe to 1 topic": ({"subscribe": "topic1"}, KV),
    "subscribe to 1 topic, with headers": ({"subscribe": "topic1", "includeHeaders": "true"}, [*KV, "headers"]),
    "subscribe to multiple topics": ({"subscribe": "topic1,topic2"}, KV),
    "subscribe to a pattern": ({"subscribePattern": "topic.*"}, KV),
}
# "Creating a Kafka Source for Batch Queries" (read)
GUIDE_BATCH_READS = {
    "subscribe to 1 topic defaults to the earliest and latest offsets": ({"subscribe": "topic1"}, KV),
    "subscribe to multiple topics, specifying explicit Kafka offsets": (
        {
            "subscribe": "topic1,topic2",
            "startingOffsets": """{"topic1":{"0":23,"1":-2},"topic2":{"0":-2}}""",
            "endingOffsets": """{"topic1":{"0":50,"1":-1},"topic2":{"0":-1}}""",
        },
        KV,
    ),
    "subscribe to a pattern, at the earliest and latest offsets": (
        {"subscribePattern": "topic.*", "startingOffsets": "earliest", "endingOffsets": "latest"},
        KV,
    ),
}
# "Creating a Kafka Sink for Streaming Queries" (writeStream) and "Writing the output of Batch
# Queries to Kafka" (write): the same two examples each
GUIDE_WRITES = {
    "to a specific Kafka topic specified in an option": (KV, {"topic": "topic1"}),
    "to Kafka using a topic specified in the data": (["topic", *KV], {}),
}


def adapted(options: dict, prefix: str) -> dict:
    """The guide's options with its topic names (``topic1``, ``topic2``, ``topic.*``) prefixed."""
    return {name: value.replace("topic", f"{prefix}topic") for name, value in options.items()}


def key_values(recs, with_headers: bool = False) -> list[tuple]:
    """What the guide's ``selectExpr`` gives for ``recs``: (key, value[, headers]) as strings."""
    out = []
    for rec in recs:
        row = (None if rec.key is None else rec.key.decode(), None if rec.value is None else rec.value.decode())
        out.append((*row, rec.headers) if with_headers else row)
    return sorted(out, key=repr)


def collected(df) -> list[tuple]:
    """The rows of a DataFrame of the guide's columns, as ``key_values`` gives them."""
    out = []
    for row in df.collect():
        values = tuple(row)
        if "headers" in df.columns:
            headers = row["headers"]
            values = (
                *values[:2],
                None
                if headers is None
                else tuple((h.key, None if h.value is None else bytes(h.value)) for h in headers),
            )
        out.append(values)
    return sorted(out, key=repr)


@pytest.fixture(scope="module")
def batch_topics(broker) -> dict:
    """``batch-topic1`` (2 partitions: 60 and 10 records) and ``batch-topic2`` (1 partition, 5),
    the partitions the guide's offset JSON names; their records by topic."""
    create_topic(broker.bootstrap, "batch-topic1", 2)
    create_topic(broker.bootstrap, "batch-topic2", 1)
    first = produce(broker.bootstrap, "batch-topic1", messages(60, partitions=(0,), tag="b10"))
    first += produce(broker.bootstrap, "batch-topic1", messages(10, partitions=(1,), tag="b11"))
    return {"topic1": first, "topic2": produce(broker.bootstrap, "batch-topic2", messages(5, tag="b2"))}


@pytest.mark.parametrize("example", GUIDE_BATCH_READS)
def test_a_batch_read_of_the_guide(spark, broker, batch_topics, example):
    options, columns = GUIDE_BATCH_READS[example]
    df = load(spark, broker.bootstrap, adapted(options, "batch-")).selectExpr(*columns)
    topic1, topic2 = batch_topics["topic1"], batch_topics["topic2"]
    expected = {
        "subscribe to 1 topic defaults to the earliest and latest offsets": topic1,
        "subscribe to multiple topics, specifying explicit Kafka offsets": (
            in_range(topic1, "batch-topic1", 0, 23, 50) + in_range(topic1, "batch-topic1", 1, 0, 10) + topic2
        ),
        "subscribe to a pattern, at the earliest and latest offsets": topic1 + topic2,
    }[example]
    assert collected(df) == key_values(expected)


@pytest.mark.parametrize("example", GUIDE_STREAM_READS)
def test_a_streaming_read_of_the_guide_starts_at_latest(spark, broker, example, tmp_path):
    options, columns = GUIDE_STREAM_READS[example]
    prefix = f"s{list(GUIDE_STREAM_READS).index(example)}-"
    create_topic(broker.bootstrap, f"{prefix}topic1", 2)
    create_topic(broker.bootstrap, f"{prefix}topic2", 1)
    produce(broker.bootstrap, f"{prefix}topic1", messages(4, partitions=(0, 1), tag="old"))  # before: not read
    reader = spark.readStream.format("kafkalog").option("kafka.bootstrap.servers", broker.bootstrap)
    for name, value in adapted(options, prefix).items():
        reader = reader.option(name, value)
    name = f"guide_stream_{prefix[:-1]}"
    query = started(
        lambda: (
            reader.load()
            .selectExpr(*columns)
            .writeStream.format("memory")
            .queryName(name)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
    )
    try:
        read = {f"{prefix}topic1": {"0": 2, "1": 2}}
        if "multiple" in example or "pattern" in example:
            read[f"{prefix}topic2"] = {"0": 0}
        wait_while_running(query, lambda: ended_at(query, read), "a first micro-batch at the latest offsets")
        new = produce(broker.bootstrap, f"{prefix}topic1", messages(6, partitions=(0, 1), tag="new"))
        new += produce(broker.bootstrap, f"{prefix}topic2", messages(3, tag="new2"))
        read[f"{prefix}topic1"] = {"0": 5, "1": 5}
        if f"{prefix}topic2" in read:
            read[f"{prefix}topic2"] = {"0": 3}
        wait_while_running(query, lambda: ended_at(query, read), "the records produced after the start")
    finally:
        query.stop()
    expected = [rec for rec in new if rec.topic in read]
    assert collected(spark.table(name)) == key_values(expected, with_headers="headers" in columns)


@pytest.fixture(scope="module")
def to_write(broker) -> list[Rec]:
    """The records of the guide's ``df`` for the writes: a topic read back by the examples."""
    create_topic(broker.bootstrap, "write-source", 2)
    return produce(broker.bootstrap, "write-source", messages(12, partitions=(0, 1), tag="w"))


def guide_df(df, columns: list, target: str):
    """The guide's ``df.selectExpr(...)``; a topic column it selects names the target topic."""
    return df.withColumn("topic", F.lit(target)).selectExpr(*columns)


@pytest.mark.parametrize("example", GUIDE_WRITES)
def test_a_batch_write_of_the_guide(spark, broker, to_write, example):
    columns, options = GUIDE_WRITES[example]
    prefix = f"bw{list(GUIDE_WRITES).index(example)}-"
    target = f"{prefix}topic1"
    create_topic(broker.bootstrap, target, 2)
    df = guide_df(load(spark, broker.bootstrap, subscribe="write-source"), columns, target)
    writer = df.write.format("kafkalog").option("kafka.bootstrap.servers", broker.bootstrap)
    for name, value in adapted(options, prefix).items():
        writer = writer.option(name, value)
    with pytest.raises(Exception, match="(?i)append"):  # the guide's default save mode, refused by PySpark
        writer.save()
    writer.mode("append").save()
    back = load(spark, broker.bootstrap, subscribe=target).selectExpr(*KV)
    assert collected(back) == key_values(to_write)


@pytest.mark.parametrize("example", GUIDE_WRITES)
def test_a_streaming_write_of_the_guide(spark, broker, to_write, example, tmp_path):
    columns, options = GUIDE_WRITES[example]
    prefix = f"sw{list(GUIDE_WRITES).index(example)}-"
    target = f"{prefix}topic1"
    create_topic(broker.bootstrap, target, 2)
    df = (
        spark.readStream.format("kafkalog")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "write-source")
        .option("startingOffsets", "earliest")
        .load()
    )
    writer = guide_df(df, columns, target).writeStream.format("kafkalog")
    writer = writer.option("kafka.bootstrap.servers", broker.bootstrap)
    for name, value in adapted(options, prefix).items():
        writer = writer.option(name, value)
    query = started(
        lambda: writer.option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start()
    )
    try:
        assert query.awaitTermination(WAIT_SECONDS), "the AvailableNow query did not stop by itself"
    finally:
        query.stop()
    assert query.exception() is None
    back = load(spark, broker.bootstrap, subscribe=target).selectExpr(*KV)
    assert collected(back) == key_values(to_write)
