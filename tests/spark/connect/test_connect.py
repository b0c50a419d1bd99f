"""The ``kafkalog`` source and sink from a Spark Connect client (``remote``) against a real Connect
server that has the project installed and registers the format by itself: a batch read with
offsets and a filter, a batch write read back, an AvailableNow stream from a topic to a topic
resumed from its checkpoint, and option errors that reach the client as their one line.

The client side uses SQL expressions only: ``pyspark.sql.functions`` builds classic columns in this
process, which also holds the classic session (see conftest.py)."""

import json

import pytest
from pyspark.errors import AnalysisException, StreamingQueryException

from broker.embedded import free_port

from ..feed import Msg, base_time, create_topic, load, produce, topic_name

# slow: every test needs the Connect server (the broker fixture alone would not mark them all);
# the timeout covers the server's start, when first, and the streaming runs
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

QUERY_SECONDS = 240


def texts(df) -> list[tuple]:
    """(partition, offset, key, value) of each row, sorted, keys and values as strings."""
    rows = df.selectExpr("partition", "offset", "CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v").collect()
    return sorted((r.partition, r.offset, r.k, r.v) for r in rows)


def produced(bootstrap: str, topic: str, start: int, count: int, partitions: int = 2) -> list[tuple]:
    """Produce ``count`` records numbered from ``start`` round robin over the partitions; their rows."""
    recs = produce(
        bootstrap,
        topic,
        [Msg(n % partitions, f"k{n}".encode(), f"v{n}".encode(), base_time()) for n in range(start, start + count)],
    )
    return sorted((r.partition, r.offset, r.key.decode(), r.value.decode()) for r in recs)


def finished(query) -> None:
    """Wait (bounded) until an AvailableNow query stops, and check that it did not fail."""
    try:
        assert query.awaitTermination(QUERY_SECONDS), "the streaming query did not finish"
        assert query.exception() is None
    finally:
        query.stop()


def test_a_batch_read_with_offsets_and_a_filter(remote, broker, request):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 2)
    everything = produced(broker.bootstrap, topic, 0, 12)
    df = load(
        remote,
        broker.bootstrap,
        subscribe=topic,
        startingOffsets=json.dumps({topic: {"0": 1, "1": -2}}),
        endingOffsets=json.dumps({topic: {"0": 5, "1": -1}}),
    )
    assert texts(df) == [row for row in everything if (row[0] == 0 and 1 <= row[1] < 5) or row[0] == 1]
    assert texts(df.where("partition = 1 AND offset >= 3")) == [
        row for row in everything if row[0] == 1 and row[1] >= 3
    ]
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def test_a_batch_write_is_read_back(remote, broker, request):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 3)
    pairs = [(f"user{n % 4}", f"event {n}") for n in range(20)]
    remote.createDataFrame(pairs, "key string, value string").write.format("kafkalog").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).option("topic", topic).mode("append").save()
    assert sorted((k, v) for _, _, k, v in texts(load(remote, broker.bootstrap, subscribe=topic))) == sorted(pairs)


def test_a_stream_from_topic_to_topic_resumes_from_its_checkpoint(remote, broker, request, tmp_path):
    source, target = topic_name(request, "_in"), topic_name(request, "_out")
    create_topic(broker.bootstrap, source, 2)
    create_topic(broker.bootstrap, target, 1)

    def run() -> None:
        stream = (
            remote.readStream.format("kafkalog")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
        )
        finished(
            stream.writeStream.format("kafkalog")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("topic", target)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )

    def written() -> list[tuple]:
        return sorted((k, v) for _, _, k, v in texts(load(remote, broker.bootstrap, subscribe=target)))

    first = produced(broker.bootstrap, source, 0, 6)
    run()
    assert written() == sorted((k, v.upper()) for _, _, k, v in first)
    second = produced(broker.bootstrap, source, 6, 4)
    run()
    assert written() == sorted((k, v.upper()) for _, _, k, v in first + second)  # each record once


def test_a_misspelt_option_reaches_the_client_as_its_one_line(remote, broker):
    with pytest.raises(AnalysisException) as caught:
        load(remote, broker.bootstrap, subscrib="events").collect()
    first_line = caught.value.getMessage().splitlines()[0]
    assert "option subscrib: unknown option of the kafkalog source (did you mean subscribe?)" in first_line
    assert "Traceback" not in caught.value.getMessage()


def test_a_batch_only_option_in_a_stream_reaches_the_client_as_its_one_line(remote, broker, request, tmp_path):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 1)
    stream = (
        remote.readStream.format("kafkalog")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("endingOffsets", "latest")
        .load()
    )
    query = (
        stream.writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        with pytest.raises(StreamingQueryException) as caught:
            query.awaitTermination(QUERY_SECONDS)
    finally:
        query.stop()
    message = caught.value.getMessage()
    assert "option endingOffsets: is not valid in a streaming query" in message.splitlines()[0], message
    assert "Traceback" not in message


def test_a_broker_the_server_cannot_reach_is_named_at_the_client(remote):
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(AnalysisException) as caught:
        load(
            remote, address, {"kafka.request.timeout.ms": "2000", "fetchOffset.numRetries": "0"}, subscribe="events"
        ).collect()
    first_line = caught.value.getMessage().splitlines()[0]
    assert f"no broker of {address} could be reached" in first_line, first_line
    assert "Traceback" not in caught.value.getMessage()


def test_without_the_server_stack_trace_an_option_error_is_one_line(remote, broker):
    remote.conf.set("spark.sql.connect.serverStacktrace.enabled", "false")
    try:
        with pytest.raises(AnalysisException) as caught:
            load(remote, broker.bootstrap, subscrib="events").collect()
    finally:
        remote.conf.unset("spark.sql.connect.serverStacktrace.enabled")
    message = caught.value.getMessage()
    lines = [line for line in message.splitlines() if not line.strip().startswith("SQLSTATE")]
    assert len(lines) == 1 and "option subscrib: unknown option of the kafkalog source" in lines[0], message
