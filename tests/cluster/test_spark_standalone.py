"""Both engines distributed: the ``kafkalog`` source and ``kafkalog load`` on a real Spark standalone
cluster (a master and two workers, separate JVMs, ``spark_standalone``) against the real 3-broker
cluster. Each Spark application is a driver in a subprocess (this process's own SparkContext is the
shared local one), its executors on the workers running this Python.

* the data source reads a topic spread over the three brokers: the rows are exactly the records
  produced, and the tasks ran in executors of both workers (their working directories say which);
* ``kafkalog load --master spark://...`` stays exactly once through broker kills: a run that finds a
  broker dead at planning fails in one line and changes nothing, a run whose broker dies while the
  executors read fails without publishing, and the runs after the broker returns load every offset
  exactly once;
* ``spark-submit --master spark://... jobs/submit.py`` runs the load job on the cluster."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pyspark
import pytest

from jobs import submit
from tests.jobs.loads import RUN_TIMEOUT, Result, assert_exactly_once, load_args, ok, output_rows, run_dir
from tests.processes import kill_tree
from tests.spark.feed import Rec, messages, produce
from tests.waiting import wait_for

from .spark_standalone import SparkStandalone
from .test_cluster_failover import partitions
from .test_cluster_topics import created_everywhere

PARTITIONS = 6
KAFKALOG = str(Path(sys.executable).with_name("kafkalog"))
# a driver and its executors on 127.0.0.1, small heaps, one core on each worker, and no task before
# both executors registered (so the tasks are spread over both workers)
DRIVER_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "512m",
    "spark.executor.memory": "512m",
    "spark.cores.max": "2",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
}

READ = """
import os, sys
from pyspark.sql import SparkSession, functions as F
import spark_kafka_source

master, bootstrap, topic, output, conf = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
builder = SparkSession.builder.master(master).appName("kafkalog-standalone-read")
for setting in conf:
    builder = builder.config(*setting.split("=", 1))
spark = builder.getOrCreate()
spark_kafka_source.register(spark)
executor = F.udf(lambda: os.getcwd(), "string")  # an executor works in <worker dir>/<app id>/<executor id>
df = (spark.read.format("kafkalog").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
      .option("includeHeaders", "true").load())
(df.withColumn("ts_ms", F.unix_millis("timestamp")).withColumn("executor", executor())
   .write.parquet(output))
spark.stop()
"""


@pytest.fixture(scope="module")
def spark_cluster(cluster, tmp_path_factory):
    with SparkStandalone(tmp_path_factory.mktemp("spark-standalone")) as running:
        yield running


@pytest.fixture(autouse=True)
def no_load_left_running():
    """Whatever happens in a test, no load it started outlives it."""
    yield
    while Load.started:
        load = Load.started.pop()
        if load.process.poll() is None:
            kill_tree(load.process)


def driver_environment(spark_cluster) -> dict:
    return {**spark_cluster.environment(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def conf_arguments() -> list[str]:
    return [f"{key}={value}" for key, value in DRIVER_CONF.items()]


def test_the_source_reads_every_record_of_three_brokers_in_executors_of_both_workers(cluster, spark_cluster, tmp_path):
    topic = "standalone-read"
    created_everywhere(cluster, 1, topic, PARTITIONS)
    expected = produce(cluster.bootstrap, topic, messages(120, partitions=tuple(range(PARTITIONS)), tag="read"))
    output = tmp_path / "read"
    finished = subprocess.run(
        [
            sys.executable,
            "-c",
            READ,
            spark_cluster.master_url,
            cluster.bootstrap,
            topic,
            str(output),
            *conf_arguments(),
        ],
        env=driver_environment(spark_cluster),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]

    table = ds.dataset(str(output), format="parquet").to_table().to_pylist()
    got = sorted(
        Rec(
            r["topic"],
            r["partition"],
            r["offset"],
            r["key"],
            r["value"],
            r["ts_ms"],
            r["timestampType"],
            tuple((h["key"], h["value"]) for h in r["headers"] or ()) or None,
        )
        for r in table
    )
    assert got == sorted(expected)
    workers = {str(spark_cluster.worker_dir(n)) + os.sep: n for n in (1, 2)}
    executors = {}  # partition -> the working directories of the executors that read it
    for row in table:
        executors.setdefault(row["partition"], set()).add(row["executor"])
    assert all(len(found) == 1 for found in executors.values()), executors  # one task per partition
    ran_on = {workers.get(os.path.dirname(os.path.dirname(d)) + os.sep) for found in executors.values() for d in found}
    assert ran_on == {1, 2}, executors  # executors of both workers, and nothing outside them (local mode: the cwd)


class Load:
    """``kafkalog load ARGS --master <the standalone cluster>`` in the background, in a session of its
    own (so that ``kill_tree`` takes its Spark driver with it), stdout and stderr in files."""

    started: list = []  # every load started, for ``no_load_left_running``

    def __init__(self, spark_cluster, args: list[str], directory: Path):
        self.stdout_path, self.stderr_path = directory / "load.out", directory / "load.err"
        directory.mkdir(parents=True, exist_ok=True)
        conf = [item for setting in conf_arguments() for item in ("--conf", setting)]
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                [KAFKALOG, "load", *args, "--master", spark_cluster.master_url, *conf],
                env=driver_environment(spark_cluster),
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        Load.started.append(self)

    def wait(self) -> Result:
        try:
            code = self.process.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            kill_tree(self.process)
            raise AssertionError(
                f"the load did not end within {RUN_TIMEOUT}s; stderr:\n{self.stderr_path.read_text()[-3000:]}"
            ) from None
        return Result(code, self.stdout_path.read_text(), self.stderr_path.read_text())


def kill_leader_of(cluster, topic: str, partition: int) -> tuple[int, list[str]]:
    """SIGKILL the broker leading ``partition``; once the others know it is gone, return its id and
    the partitions it led (``topic-N``)."""
    leaders = [p["leader_id"] for p in partitions(next(iter(cluster.brokers.values())), topic)]
    victim = leaders[partition]
    survivor = next(b for broker_id, b in cluster.brokers.items() if broker_id != victim)
    cluster.brokers[victim].kill()
    wait_for(
        lambda: partitions(survivor, topic)[partition]["leader_id"] == -1,
        timeout=60,
        what=f"partition {partition} to lose its leader, broker {victim}",
    )
    return victim, [f"{topic}-{p}" for p, leader in enumerate(leaders) if leader == victim]


def names_one_of(line: str, names: list[str]) -> bool:
    return any(re.search(rf"\b{re.escape(name)}\b", line) for name in names)


def restart(cluster, broker_id: int, topic: str) -> None:
    cluster.brokers[broker_id].start()
    for broker in cluster.brokers.values():
        wait_for(
            lambda broker=broker: -1 not in [p["leader_id"] for p in partitions(broker, topic)],
            timeout=60,
            what=f"every partition of {topic} led again after broker {broker_id} returned",
        )


def test_kafkalog_load_on_the_standalone_cluster_is_exactly_once_through_broker_kills(cluster, spark_cluster, tmp_path):
    topic = "standalone-load"
    created_everywhere(cluster, 2, topic, PARTITIONS)
    bootstrap, output = cluster.bootstrap, tmp_path / "output"
    every = tuple(range(PARTITIONS))
    produced = produce(bootstrap, topic, messages(60, partitions=every, tag="first"))
    ok(Load(spark_cluster, load_args(bootstrap, topic, output), tmp_path / "run-1").wait())
    assert_exactly_once(output, produced)

    # a broker dead when the run plans: the run fails in one line, and writes nothing
    produced += produce(bootstrap, topic, messages(60, partitions=every, tag="second"))
    victim, unavailable = kill_leader_of(cluster, topic, 0)
    failed = Load(spark_cluster, load_args(bootstrap, topic, output), tmp_path / "dead-at-planning").wait()
    assert failed.code == 1, failed
    assert names_one_of(failed.one_error(), unavailable), (failed.one_error(), unavailable)
    assert not run_dir(output, 2).exists() and not (output / "_staging" / "run=2").exists()
    restart(cluster, victim, topic)

    # a broker killed while the executors read (36 small tasks; the kill follows the first one's
    # checkpoint, and the last partition's tasks come last): the run fails once Spark's attempts of a
    # task of the dead broker failed (each after the client's retries, here 200 ms apart), nothing is published
    produced += produce(bootstrap, topic, messages(600, partitions=every, tag="third"))
    tasks = run_dir(output, 2) / "tasks"
    running = Load(
        spark_cluster,
        load_args(
            bootstrap, topic, output, "--max-records-per-partition", "20", "--option", "fetchOffset.retryIntervalMs=200"
        ),
        tmp_path / "killed-during-the-run",
    )
    wait_for(
        lambda: (tasks.exists() and any(tasks.iterdir())) or running.process.poll() is not None,
        timeout=RUN_TIMEOUT,
        interval=0.05,
        what="the first task's checkpoint",
    )
    victim, unavailable = kill_leader_of(cluster, topic, PARTITIONS - 1)
    failed = running.wait()
    assert failed.code == 1, failed
    assert names_one_of(failed.one_error(), unavailable), (failed.one_error(), unavailable)
    assert not (output / "run=2").exists() and not (run_dir(output, 2) / "commit.json").exists()
    assert {r.run for r in output_rows(output)} == {1}
    restart(cluster, victim, topic)

    again = ok(Load(spark_cluster, load_args(bootstrap, topic, output), tmp_path / "run-2-again").wait())
    assert "run 2 was planned but not committed: executing its plan again" in again.stdout
    assert_exactly_once(output, produced)


def test_spark_submit_runs_the_load_job_on_the_standalone_cluster(cluster, spark_cluster, tmp_path):
    topic = "standalone-submit"
    created_everywhere(cluster, 3, topic, PARTITIONS)
    produced = produce(cluster.bootstrap, topic, messages(30, partitions=tuple(range(PARTITIONS)), tag="submit"))
    before = {app["id"] for app in spark_cluster.state()["completedapps"]}
    spark_submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")
    conf = [item for setting in conf_arguments() for item in ("--conf", setting)]
    output = tmp_path / "output"
    finished = subprocess.run(
        [
            spark_submit,
            "--master",
            spark_cluster.master_url,
            *conf,
            submit.__file__,
            *load_args(cluster.bootstrap, topic, output),
        ],
        env=driver_environment(spark_cluster),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    ok(Result(finished.returncode, finished.stdout, finished.stderr))
    assert_exactly_once(output, produced)
    ran = [app for app in spark_cluster.state()["completedapps"] if app["id"] not in before]
    assert [app["name"] for app in ran] == ["kafkalog-load"], ran  # on the cluster, not in a local[*] driver
