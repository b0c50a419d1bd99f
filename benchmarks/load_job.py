"""What a checkpointed, exactly-once load costs over a plain Spark read-and-write of the same records.

In one run, on a local[2] SparkSession, for a topic of 1 M page views (JSON, ~150 bytes, 4
partitions, LZ4 batches) on a broker process, each round times:

* the load job's run (``jobs.runner.load``: lock, plan, per-task checkpoints, staging write,
  publish, commit, report) into a fresh output and checkpoint;
* the reference: ``spark.read.format("kafkalog")`` of the same offsets written as the same
  partitioned Parquet (``topic``/``date``/``hour``), with no checkpoint at all.

    .venv/bin/python -m benchmarks.load_job [--records 1000000] [--rounds 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from broker.client import KafkaClient, NewTopic  # noqa: E402
from broker.embedded import EmbeddedBroker  # noqa: E402
from jobs import activity  # noqa: E402
from jobs.load import spark_session  # noqa: E402
from jobs.output import PARTITION_COLUMNS, with_event_hour  # noqa: E402
from jobs.runner import LoadSettings, load  # noqa: E402

TOPIC = "page-views"
PARTITIONS = 4


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    spark = spark_session("local[2]", [("spark.ui.enabled", "false")])
    times: dict = {"load job": [], "plain read + write": []}
    with (
        tempfile.TemporaryDirectory() as directory,
        EmbeddedBroker(os.path.join(directory, "log"), {"num.partitions": str(PARTITIONS)}) as broker,
    ):
        with KafkaClient(broker.bootstrap) as client:
            client.create_topics([NewTopic(TOPIC, PARTITIONS)])
        now = int(time.time() * 1000)
        activity.produce(
            broker.bootstrap, TOPIC, activity.page_views(args.records, now - 3_600_000 * 3, now), PARTITIONS
        )
        for round_number in range(args.rounds + 1):  # round 0 warms up Python workers and the page cache
            output = os.path.join(directory, f"out-{round_number}")
            settings = LoadSettings(
                bootstrap_servers=broker.bootstrap,
                topics=[TOPIC],
                output=output + "-job",
                checkpoint=output + "-job/_checkpoint",
                progress=False,
            )
            began = time.perf_counter()
            report = load(spark, settings)
            job = time.perf_counter() - began
            assert report["total"]["records"] == args.records
            began = time.perf_counter()
            (
                with_event_hour(
                    spark.read.format("kafkalog")
                    .option("kafka.bootstrap.servers", broker.bootstrap)
                    .option("subscribe", TOPIC)
                    .option("includeHeaders", "true")
                    .load()
                )
                .write.partitionBy(*PARTITION_COLUMNS)
                .parquet(output + "-plain")
            )
            plain = time.perf_counter() - began
            if round_number:
                times["load job"].append(job)
                times["plain read + write"].append(plain)
    spark.stop()
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{args.records:,} page views, {PARTITIONS} partitions, local[2], median of {args.rounds}:")
    for name, seconds in medians.items():
        print(
            f"  {name:20s} {seconds:7.2f} s  {args.records / seconds:12,.0f} records/s  "
            f"ratio {medians['plain read + write'] / seconds:5.2f}"
        )
    return medians


if __name__ == "__main__":
    main()
