"""Both engines distributed: the ``kafkalog`` source and ``kafkalog load`` on a real Spark standalone
cluster (a master and two workers, separate JVMs, ``spark_standalone``) against the real 3-broker
cluster. Each Spark application is a driver in a subprocess (this process's own SparkContext is the
shared local one), its executors on the workers running this Python.

* the data source reads a topic spread over the three brokers: the rows are exactly the records
  produced, and the tasks ran in executors of both workers (their working directories say which);
* ``kafkalog load --master spark://...`` stays exactly once through broker kills: a run that finds a
  broker dead at planning fails in one line and changes nothing, a run whose broker dies while the
  executors read fails without publishing, and the runs after the broker returns load every offset
  exactly once."""

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from tests.jobs.loads import SPARK_CONF, RUN_TIMEOUT, Result, assert_exactly_once, load_args, ok, output_rows, run_dir
from tests.processes import kill_tree
from tests.spark.feed import Msg, Rec, messages, produce
from tests.waiting import wait_for

from .spark_standalone import SparkStandalone
from .test_cluster_failover import partitions
from .test_cluster_topics import created_everywhere

PARTITIONS = 6
KAFKALOG = str(Path(sys.executable).with_name("kafkalog"))
# a driver and its executors on 127.0.0.1, small heaps, one core on each worker, and no task before
# both executors registered (so the tasks are spread over both workers)
DRIVER_CONF = {
    "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "512m", "spark.executor.memory": "512m", "spark.cores.max": "2",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.scheduler.minRegisteredResourcesRatio": "1.0", "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s"}

READ = """
import os, sys
from pyspark.sql import SparkSession, functions as F
import spark_kafka_source

master, bootstrap, topic, output, conf = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
builder = SparkSession.builder.master(master).appName("kafkalog-standalone-read").config("spark.ui.enabled", "false")
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


def driver_environment(spark_cluster) -> dict:
    return {**spark_cluster.environment(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def conf_arguments() -> list[str]:
    return [f"{key}={value}" for key, value in DRIVER_CONF.items()]


def test_the_source_reads_every_record_of_three_brokers_in_executors_of_both_workers(cluster, spark_cluster,
                                                                                      tmp_path):
    topic = "standalone-read"
    created_everywhere(cluster, 1, topic, PARTITIONS)
    expected = produce(cluster.bootstrap, topic, messages(120, partitions=tuple(range(PARTITIONS)), tag="read"))
    output = tmp_path / "read"
    finished = subprocess.run([sys.executable, "-c", READ, spark_cluster.master_url, cluster.bootstrap, topic,
                               str(output), *conf_arguments()], env=driver_environment(spark_cluster),
                              capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert finished.returncode == 0, finished.stderr[-4000:]

    table = ds.dataset(str(output), format="parquet").to_table().to_pylist()
    got = sorted(Rec(r["topic"], r["partition"], r["offset"], r["key"], r["value"], r["ts_ms"], r["timestampType"],
                     tuple((h["key"], h["value"]) for h in r["headers"] or ()) or None) for r in table)
    assert got == sorted(expected)
    workers = {str(spark_cluster.worker_dir(n)) + os.sep: n for n in (1, 2)}
    executors = {}  # partition -> the working directories of the executors that read it
    for row in table:
        executors.setdefault(row["partition"], set()).add(row["executor"])
    assert all(len(found) == 1 for found in executors.values()), executors  # one task per partition
    ran_on = {workers.get(os.path.dirname(os.path.dirname(d)) + os.sep) for found in executors.values() for d in found}
    assert ran_on == {1, 2}, executors  # executors of both workers, and nothing outside them (local mode: the cwd)
