"""Real streaming queries on the session's SparkSession against a real broker (few: each costs
seconds): a query into a Parquet file sink with a processing-time trigger and a rate limit,
restarted from its checkpoint as an AvailableNow query after more records and a new partition
(each offset in the sink exactly once, every micro-batch within the limit, the query stops by
itself); a driver process SIGKILLed at a random moment of a running query and restarted from its
checkpoint (each offset in the file sink exactly once); a topic deleted under a running query (it
fails with failOnDataLoss, and goes on with the re-created topic without); the offsets committed to
a consumer group on librdkafka's mock cluster. The driver-side rules themselves are tested without
Spark in test_stream_reader.py. On a loaded machine Spark can fail to start the source's Python
process within its fixed 10 s ("Python worker failed to connect back"); ``started`` starts such a
query again, and waits poll the query's progress rather than run Spark jobs that compete with it.
"""

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException

from broker.client import GroupClient, KafkaClient
from spark_kafka_source.progress import offsets_behind_latest
from tests.processes import kill_tree
from tests.waiting import wait_for

from .feed import (
    client,
    create_topic,
    delete_topic,
    messages,
    produce,
    rows,
    topic_led_by_several_brokers,
    without_headers,
)

pytestmark = pytest.mark.timeout(480)  # a Spark start-up on a loaded 2-core machine alone can take 100 s

WAIT_SECONDS = 90
ROOT = Path(__file__).resolve().parents[2]


def stream(spark, bootstrap: str, **options):
    reader = spark.readStream.format("kafkalog").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def started(start):
    """``start()`` (a started query), started again (at most twice) when Spark could not start the
    source's Python process in time, before anything was read: PySpark gives that process 10 s to
    connect back, which a loaded machine can exceed; any other failure is left to the test."""
    for _ in range(2):
        query = start()
        wait_for(
            lambda query=query: not query.isActive or query.status["message"] != "Initializing sources",
            WAIT_SECONDS,
            interval=0.5,
            what="the query's sources initialized",
        )
        error = query.exception()
        if (
            error is None
            or "Python worker failed to connect back" not in str(error)
            or "Current Committed Offsets: {}" not in str(error)
        ):
            return query
    return start()


def wait_while_running(query, condition, what: str) -> None:
    """Wait (bounded) for ``condition``; fail at once, with the query's error, if the query fails."""

    def met():
        if query.exception() is not None:
            raise AssertionError(f"the query failed while waiting for {what}: {query.exception()}")
        return condition()

    wait_for(met, WAIT_SECONDS, interval=0.5, what=what)


def source_progress(query) -> list:
    """The query's recent progress of its source: numInputRows, and endOffset and latestOffset as dicts."""
    return [
        {
            "numInputRows": source["numInputRows"],
            "endOffset": as_dict(source["endOffset"]),
            "latestOffset": as_dict(source["latestOffset"]),
        }
        for source in (progress["sources"][0] for progress in query.recentProgress)
    ]


def ended_at(query, offsets: dict) -> bool:
    """Whether a micro-batch of the query ended at ``offsets`` (asked of its progress: cheap, unlike
    a Spark job polling the sink, which starves Spark's start of the source's Python process)."""
    return any(source["endOffset"] == offsets for source in source_progress(query))


def as_dict(offsets):
    return json.loads(offsets) if isinstance(offsets, str) else offsets


def test_a_stream_restarted_from_its_checkpoint_reads_each_offset_exactly_once(spark, broker, tmp_path):
    topic = "stream-restart"
    create_topic(broker.bootstrap, topic, 3)
    produced = produce(broker.bootstrap, topic, messages(30, partitions=(0, 1, 2), tag="first"))
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def start(starting: str, **trigger):
        frame = stream(
            spark,
            broker.bootstrap,
            subscribe=topic,
            startingOffsets=starting,
            maxOffsetsPerTrigger="7",
            includeHeaders="true",
        )
        return (
            frame.writeStream.format("parquet")
            .option("path", out)
            .option("checkpointLocation", checkpoint)
            .trigger(**trigger)
            .start()
        )

    query = started(lambda: start("earliest", processingTime="200 milliseconds"))
    try:
        wait_while_running(query, lambda: ended_at(query, {topic: {"0": 10, "1": 10, "2": 10}}), "the first 30 records")
        first_run = source_progress(query)
    finally:
        query.stop()
    assert all(s["numInputRows"] <= 7 for s in first_run)
    first_batch = (Path(checkpoint) / "offsets" / "0").read_text().splitlines()[-1]  # the source's line, as stored
    assert json.loads(first_batch) == {topic: {"0": 2, "1": 2, "2": 2}}
    assert first_run[-1]["latestOffset"] == {topic: {"0": 10, "1": 10, "2": 10}}  # reportLatestOffset
    assert offsets_behind_latest(first_run[0]) == {
        "minOffsetsBehindLatest": 8,
        "maxOffsetsBehindLatest": 8,
        "avgOffsetsBehindLatest": 8.0,
    }  # 7 split 10:10:10 -> 2 each

    with client(broker.bootstrap) as c:
        c.create_partitions(topic, 4)
    produced += produce(broker.bootstrap, topic, messages(20, partitions=(0, 1, 2, 3), tag="second"))
    query = started(lambda: start("latest", availableNow=True))  # the checkpoint's offsets win over startingOffsets
    try:
        assert query.awaitTermination(WAIT_SECONDS), "the AvailableNow query did not stop by itself"
        second_run = source_progress(query)
    finally:
        query.stop()
    assert query.exception() is None
    assert len([s for s in second_run if s["numInputRows"]]) >= 3 and all(s["numInputRows"] <= 7 for s in second_run)
    assert second_run[-1]["endOffset"] == {topic: {"0": 15, "1": 15, "2": 15, "3": 5}}
    assert rows(spark.read.parquet(out)) == sorted(produced)  # every offset once, the new partition from 0


REFUSED_STREAMS = [
    pytest.param({"endingOffsets": "latest"}, "option endingOffsets: is not valid in a streaming query", id="ending"),
    pytest.param(
        {"endingTimestamp": "1700000000000"},
        "option endingTimestamp: is not valid in a streaming query",
        id="endingTimestamp",
    ),
    pytest.param(
        {"endingOffsetsByTimestamp": '{"t":{"0":1700000000000}}'},
        "option endingOffsetsByTimestamp: is not valid in a streaming query",
        id="endingByTimestamp",
    ),
    pytest.param(
        {"taskCheckpointLocation": "/tmp/tasks"},
        "option taskCheckpointLocation: is not valid in a streaming query",
        id="taskCheckpoint",
    ),
    pytest.param({"schema": "value binary"}, "has a fixed schema and cannot be set with a custom one", id="schema"),
]


@pytest.mark.parametrize("options, expected", REFUSED_STREAMS)
def test_an_option_refused_for_streams_fails_the_query_with_its_own_message(spark, broker, tmp_path, options, expected):
    reader = (
        spark.readStream.format("kafkalog")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "stream-refused")
    )
    for key, value in options.items():
        reader = reader.schema(value) if key == "schema" else reader.option(key, value)
    query = started(
        lambda: (
            reader.load().writeStream.format("noop").option("checkpointLocation", str(tmp_path / "checkpoint")).start()
        )
    )
    try:
        with pytest.raises(StreamingQueryException) as failed:
            query.awaitTermination(WAIT_SECONDS)
    finally:
        query.stop()
    error = str(failed.value)
    assert expected in error and "UnboundLocalError" not in error, error[:1500]


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_topic_deleted_under_a_running_query(spark, broker, tmp_path, fail_on_data_loss):
    topic = f"stream-deleted-{fail_on_data_loss}"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, messages(5, tag="before"))
    name = f"stream_deleted_{fail_on_data_loss}"
    frame = stream(
        spark, broker.bootstrap, subscribe=topic, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss
    )
    query = started(
        lambda: (
            frame.writeStream.format("memory")
            .queryName(name)
            .trigger(processingTime="200 milliseconds")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .start()
        )
    )
    try:
        wait_while_running(query, lambda: ended_at(query, {topic: {"0": 5}}), "the first records")
        assert spark.table(name).count() == 5
        delete_topic(broker.bootstrap, topic)
        if fail_on_data_loss == "true":
            with pytest.raises(StreamingQueryException) as raised:
                query.awaitTermination(WAIT_SECONDS)
            assert f"{topic}-0 is gone (its topic or the partition was deleted)" in str(raised.value), str(raised.value)
            assert "Set failOnDataLoss=false" in str(raised.value)
            return
        create_topic(broker.bootstrap, topic, 1)  # re-created: its offsets start over, below the checkpoint's
        again = produce(broker.bootstrap, topic, messages(2, tag="after"))
        wait_while_running(query, lambda: ended_at(query, {topic: {"0": 2}}), "the re-created topic's records")
        assert [r.value for r in rows(spark.table(name)) if r.value.startswith(b"after")] == [r.value for r in again]
        assert query.isActive
    finally:
        query.stop()


def test_each_micro_batch_is_committed_to_a_consumer_group_on_the_mock_cluster(spark, mock, tmp_path):
    bootstrap, _ = mock
    topic, _ = topic_led_by_several_brokers(bootstrap, "stream-group")
    produce(bootstrap, topic, messages(24, partitions=(0, 1, 2, 3), tag="group"))
    frame = stream(
        spark,
        bootstrap,
        subscribe=topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger="10",
        commitOffsetsToGroup="stream-lag",
    )
    query = started(
        lambda: (
            frame.writeStream.format("noop")
            .trigger(availableNow=True)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .start()
        )
    )
    try:
        assert query.awaitTermination(WAIT_SECONDS)
    finally:
        query.stop()
    with KafkaClient(bootstrap, timeout=10) as c:
        committed = GroupClient(c).committed("stream-lag", {topic: [0, 1, 2, 3]})
    assert {tp[1]: found.offset for tp, found in committed.items()} == {0: 6, 1: 6, 2: 6, 3: 6}
    assert as_dict(query.lastProgress["sources"][0]["endOffset"]) == {topic: {"0": 6, "1": 6, "2": 6, "3": 6}}


def test_a_driver_killed_at_a_random_moment_then_restarted_writes_each_offset_once(spark, broker, tmp_path):
    topic = "stream-killed"
    create_topic(broker.bootstrap, topic, 2)
    produced = produce(broker.bootstrap, topic, messages(24, partitions=(0, 1), tag="killed"))
    args = [broker.bootstrap, topic, str(tmp_path / "out"), str(tmp_path / "checkpoint")]
    log = tmp_path / "driver.out"
    batches = random.randint(0, 1)  # of the 4 micro-batches of 6 records
    with open(log, "wb") as out:
        driver = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.stream_process", *args, "processing"],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for(
            lambda: f"batch {batches}\n" in log.read_text() or driver.poll() is not None,
            WAIT_SECONDS * 2,
            what=f"micro-batch {batches} of the driver (which starts its own Spark)",
        )
        assert driver.poll() is None, log.read_text()[-3000:]
        time.sleep(random.uniform(0, 0.3))  # somewhere in a later micro-batch (or between two)
    finally:
        kill_tree(driver)
    finished = subprocess.run(
        [sys.executable, "-m", "tests.spark.stream_process", *args, "available-now"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS * 3,
    )
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    assert without_headers(rows(spark.read.parquet(args[2]))) == without_headers(sorted(produced))
