"""The Spark source and the load job on 3 real brokers while one of them dies and returns.

A broker killed before a read is planned leaves its partitions leaderless (leader -1,
LEADER_NOT_AVAILABLE): the read retries as ``fetchOffset.numRetries`` / ``fetchOffset.retryIntervalMs``
say, then fails in one line naming the dead broker and every partition without a leader; it never
hangs and never reads the other partitions alone. A broker killed between planning and reading
fails the task, naming the partition and the address it was led from. Once the broker is back (at a
new leader epoch), the same DataFrame reads every record exactly. The load job does the same: a
run with a broker dead fails in one line and commits nothing, and the next run after the broker
returns loads every offset exactly once; a run whose broker dies after its plan is written fails,
and the next run executes that plan again, exactly once. An AvailableNow stream started while the
broker is down fails naming it, and started again from its checkpoint writes each offset once.
Records without a key, written by the sink or by ``kafkalog produce`` while the broker is down, go
to the partitions that have a leader: every write succeeds, each record stored once.
(The broker is not killed in the middle of a task's fetches: a UDF killing it at the task's first
row came too late, the task had fetched its whole range by then.)
"""

import contextlib

import pytest
from pyspark.errors import AnalysisException, PythonException, StreamingQueryException

import jobs.load
from broker.client import LATEST, KafkaClient
from jobs import consistency
from jobs.output import Output
from spark_kafka_source.checkpoint import CheckpointStore
from tests.cli.support import kafkalog
from tests.jobs.loads import Result, assert_exactly_once, load_args, ok, output_rows, run_load, tree
from tests.spark.feed import Msg, assert_rows, load, produce, rows
from tests.waiting import wait_for

from .test_cluster_topics import created_everywhere, metadata

pytestmark = pytest.mark.timeout(180)

PARTITIONS = 6
VICTIM = 2
FAST_RETRIES = {"fetchOffset.numRetries": "2", "fetchOffset.retryIntervalMs": "100", "kafka.request.timeout.ms": "5000"}
STREAM_SECONDS = 90


def partition_leaders(broker, topic: str) -> dict:
    """partition -> leader id, as ``broker`` answers Metadata (-1: no leader)."""
    [found] = metadata(broker, [topic])["topics"]
    return {p["partition_index"]: p["leader_id"] for p in found["partitions"]}


def records(topic: str, per_partition: int, tag: str) -> list[Msg]:
    return [
        Msg(p, f"{tag}-k{i}".encode(), f"{tag}-v{i}".encode(), 1_700_000_000_000 + i)
        for i in range(per_partition)
        for p in range(PARTITIONS)
    ]


def spread_topic(cluster, topic: str, per_partition: int = 10) -> tuple[list, list[int]]:
    """A topic over the three brokers with records in every partition; the records and the
    partitions the victim leads."""
    led_by = created_everywhere(cluster, 1, topic, PARTITIONS)
    assert set(led_by) == {1, 2, 3}
    produced = produce(cluster.bootstrap, topic, records(topic, per_partition, topic))
    return produced, [p for p, leader in enumerate(led_by) if leader == VICTIM]


@contextlib.contextmanager
def broker_dead(cluster, topic: str, led: list[int]):
    """The victim killed, until its partitions of ``topic`` have no leader; on leaving, started
    again, until every broker sees it lead them again."""
    cluster.brokers[VICTIM].kill()
    try:
        leaderless(cluster, topic, led)
        yield
    finally:
        back_again(cluster, topic, led)


def leaderless(cluster, topic: str, led: list[int]) -> None:
    """Wait until the dead victim's partitions have no leader (its ZooKeeper session is over)."""
    wait_for(
        lambda: all(partition_leaders(cluster.brokers[1], topic)[p] == -1 for p in led),
        timeout=60,
        what="the dead broker's partitions to lose their leader",
    )


def back_again(cluster, topic: str, led: list[int]) -> None:
    """Start the dead victim (once its registration is gone: a restart before is refused as a
    duplicate id) and wait until every broker sees it lead its partitions again."""
    if not cluster.brokers[VICTIM].running:
        leaderless(cluster, topic, led)
        cluster.brokers[VICTIM].start()
    for broker in cluster.brokers.values():
        wait_for(
            lambda broker=broker: all(partition_leaders(broker, topic)[p] == VICTIM for p in led),
            timeout=60,
            what="the returned broker to lead its partitions again",
        )


def one_line(message: str) -> str:
    lines = [line for line in message.splitlines() if line.strip() and not line.strip().startswith("SQLSTATE")]
    assert len(lines) == 1 and "Traceback" not in message, message[:1500]
    return lines[0]


def test_a_read_planned_while_a_broker_is_down_fails_naming_it_and_its_partitions(cluster, spark):
    topic = "spark-down-at-planning"
    produced, led = spread_topic(cluster, topic)
    bootstrap = cluster.bootstrap  # all three, the dead one too, as a job's configuration would name them
    with broker_dead(cluster, topic, led):
        with pytest.raises(AnalysisException) as raised:
            load(spark, bootstrap, {"subscribe": topic, **FAST_RETRIES}).collect()
        message = one_line(str(raised.value))
        print(message)
        assert f"broker {VICTIM}" in message, message
        for p in led:
            assert f"{topic}-{p}" in message, message
    assert_rows(rows(load(spark, bootstrap, subscribe=topic)), produced)


def test_a_broker_dead_between_planning_and_reading_fails_the_task_then_the_same_read_is_exact(cluster, spark):
    topic = "spark-dies-before-reading"
    produced, led = spread_topic(cluster, topic)
    address = cluster.brokers[VICTIM].bootstrap
    df = load(spark, cluster.bootstrap, {"subscribe": topic, "includeHeaders": "true", **FAST_RETRIES})
    assert df.rdd.getNumPartitions() == PARTITIONS  # planned: each task knows its leader
    with broker_dead(cluster, topic, led):
        with pytest.raises(PythonException) as raised:
            df.collect()
        message = str(raised.value)
        print(message)
        assert address in message and "Traceback" not in message, message[:1500]
        assert any(f"{topic}-{p}" in message for p in led), message[:1500]
    assert_rows(rows(df), produced)


# -- the load job ------------------------------------------------------------------------------------


def load_run(cluster, bootstrap: str, topic: str, output) -> Result:
    """One ``kafkalog load`` run in this process (the shared Spark session), with short retries."""
    return run_load(
        load_args(
            bootstrap,
            topic,
            output,
            "--option",
            "fetchOffset.numRetries=2",
            "--option",
            "fetchOffset.retryIntervalMs=100",
        ),
        output.parent,
    )


def test_a_load_run_while_a_broker_is_down_fails_committing_nothing_and_the_next_run_loads_exactly_once(
    cluster, spark, tmp_path
):
    topic = "load-down-at-planning"
    first, led = spread_topic(cluster, topic)
    bootstrap, output = cluster.bootstrap, tmp_path / "out"
    ok(load_run(cluster, bootstrap, topic, output))
    second = produce(bootstrap, topic, records(topic, 5, "second"))
    before = tree(output)
    with broker_dead(cluster, topic, led):
        failed = load_run(cluster, bootstrap, topic, output)
        assert failed.code == 1, failed
        error = failed.one_error()
        assert f"broker {VICTIM}" in error and all(f"{topic}-{p}" in error for p in led), error
        assert tree(output) == before  # nothing planned, written or committed
    ok(load_run(cluster, bootstrap, topic, output))
    assert_exactly_once(output, first + second)
    assert consistency.problems(CheckpointStore(str(output / "_checkpoint")), Output(str(output), "parquet")) == []


def test_a_broker_killed_between_planning_and_writing_fails_the_run_and_the_rerun_loads_exactly_once(
    cluster, spark, tmp_path, monkeypatch
):
    topic = "load-dies-mid-run"
    produced, led = spread_topic(cluster, topic)
    bootstrap, output = cluster.bootstrap, tmp_path / "out"
    victim = cluster.brokers[VICTIM]
    real_session = jobs.load.spark_session

    def killing_then_session(*args, **kwargs):  # called once the run's plan is written, before its read
        victim.kill()
        leaderless(cluster, topic, led)
        return real_session(*args, **kwargs)

    monkeypatch.setattr(jobs.load, "spark_session", killing_then_session)
    try:
        failed = load_run(cluster, bootstrap, topic, output)
    finally:
        monkeypatch.undo()
        back_again(cluster, topic, led)
    assert failed.code == 1, failed
    error = failed.one_error()
    assert f"broker {VICTIM}" in error and all(f"{topic}-{p}" in error for p in led), error
    store = CheckpointStore(str(output / "_checkpoint"))
    assert [(run.number, run.pending) for run in store.runs()] == [(1, True)]
    assert output_rows(output) == []
    again = ok(load_run(cluster, bootstrap, topic, output))
    assert "run 1 was planned but not committed: executing its plan again" in again.stdout
    assert_exactly_once(output, produced)


# -- keyless writes ----------------------------------------------------------------------------------


def stored_per_partition(bootstrap: str, topic: str, partitions: list[int]) -> dict:
    """partition -> its latest offset, for ``partitions`` (which must have a leader)."""
    with KafkaClient(bootstrap, timeout=10) as client:
        ends = client.list_offsets({(topic, p): LATEST for p in partitions})
    return {p: offset for (_, p), (offset, _) in ends.items()}


def test_keyless_lines_produced_while_a_broker_is_down_go_to_the_partitions_with_a_leader(cluster):
    topic = "cli-keyless-down"
    _, led = spread_topic(cluster, topic, per_partition=0)
    bootstrap = cluster.bootstrap  # the dead broker's address too
    live = [p for p in range(PARTITIONS) if p not in led]
    runs, lines = 8, 50
    with broker_dead(cluster, topic, led):
        for run in range(runs):  # each run starts on a random partition: once, one in three was leaderless
            done = kafkalog(
                "produce",
                topic,
                "--bootstrap-server",
                bootstrap,
                input="".join(f"run {run} line {i}\n" for i in range(lines)),
            )
            assert done.returncode == 0, done.stderr
        assert sum(stored_per_partition(cluster.brokers[1].bootstrap, topic, live).values()) == runs * lines


def test_keyless_rows_written_while_a_broker_is_down_go_to_the_partitions_with_a_leader(cluster, spark):
    topic = "sink-keyless-down"
    _, led = spread_topic(cluster, topic, per_partition=0)
    bootstrap = cluster.bootstrap
    count = 4_000
    df = spark.range(count).selectExpr("CAST(id AS STRING) AS value").repartition(4)
    with broker_dead(cluster, topic, led):
        df.write.format("kafkalog").mode("append").option("kafka.bootstrap.servers", bootstrap).option(
            "topic", topic
        ).save()  # once, 4 tasks of 4 failed, two after storing records
    stored = load(spark, bootstrap, subscribe=topic).select("partition", "value").collect()
    assert sorted(int(bytes(r.value)) for r in stored) == list(range(count))  # each once
    assert not {r.partition for r in stored} & set(led)


# -- a streaming query -------------------------------------------------------------------------------


def available_now(spark, bootstrap: str, topic: str, out, checkpoint):
    """An AvailableNow query of ``topic`` into a Parquet file sink, from the earliest offsets."""
    frame = (
        spark.readStream.format("kafkalog")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .options(**FAST_RETRIES)
        .load()
    )
    return (
        frame.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


def test_a_stream_started_while_a_broker_is_down_fails_naming_it_and_restarted_reads_each_offset_once(
    cluster, spark, tmp_path
):
    topic = "stream-through-a-kill"
    first, led = spread_topic(cluster, topic)
    bootstrap, out, checkpoint = cluster.bootstrap, tmp_path / "out", tmp_path / "checkpoint"
    query = available_now(spark, bootstrap, topic, out, checkpoint)
    assert query.awaitTermination(STREAM_SECONDS) and query.exception() is None
    second = produce(bootstrap, topic, records(topic, 5, "second"))
    with broker_dead(cluster, topic, led):
        query = available_now(spark, bootstrap, topic, out, checkpoint)
        with pytest.raises(StreamingQueryException) as raised:
            query.awaitTermination(STREAM_SECONDS)
        message = str(raised.value)
        assert f"broker {VICTIM}" in message and all(f"{topic}-{p}" in message for p in led), message[:2000]
    query = available_now(spark, bootstrap, topic, out, checkpoint)
    assert query.awaitTermination(STREAM_SECONDS) and query.exception() is None
    assert rows(spark.read.parquet(str(out))) == sorted(first + second)
