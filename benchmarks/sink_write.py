"""Rows per second written by ``df.write.format("kafkalog")``, side by side with ``kafkalog produce``
and with confluent-kafka producing the same rows from the driver.

One broker and one local[2] SparkSession, one run: a file of ``key:value`` lines (16-byte keys,
100-byte values) goes to a 4-partition topic, keyed by murmur2 of the key, acks=all, no compression,
three ways: the Spark sink (``spark.read.text`` of the file split into key and value, written by 2
tasks, each an idempotent producer), ``kafkalog produce --key-separator : --acks all``, and a Python
loop over the lines into confluent-kafka's producer (``partitioner=murmur2_random``, idempotent,
batching in C threads; the reference). Spark's first job (starting its Python workers) is a warm-up
write, not timed.

    .venv/bin/python -m benchmarks.sink_write [--rows 300000]
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from confluent_kafka import Producer  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from broker.client import KafkaClient, NewTopic  # noqa: E402
from broker.embedded import EmbeddedBroker  # noqa: E402

from .cli_produce import kafkalog_produce, send_all  # noqa: E402
from .spark_read import local_spark  # noqa: E402

PARTITIONS = 4
VALUE_BYTES = 100


def spark_write(spark: SparkSession, bootstrap: str, topic: str, path: Path) -> float:
    started = time.perf_counter()
    (
        spark.read.text(str(path))
        .selectExpr("substring_index(value, ':', 1) AS key", "substring(value, 18) AS value")
        .write.format("kafkalog")
        .mode("append")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .save()
    )
    return time.perf_counter() - started


def confluent_produce(bootstrap: str, topic: str, path: Path) -> float:
    started = time.perf_counter()
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
            "linger.ms": 50,
            "queue.buffering.max.messages": 10_000_000,
        }
    )
    with open(path, "rb") as lines:
        send_all(producer, topic, (line.rstrip(b"\n").split(b":", 1) for line in lines))
    return time.perf_counter() - started


def stored(bootstrap: str, topic: str) -> int:
    with KafkaClient(bootstrap) as client:
        ends = client.list_offsets({(topic, p): -1 for p in range(PARTITIONS)})
    return sum(offset for offset, _ in ends.values())


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=300_000)
    args = parser.parse_args(argv)
    spark = local_spark()
    with tempfile.TemporaryDirectory() as work, EmbeddedBroker(Path(work) / "log") as broker:
        lines = Path(work) / "rows.txt"
        lines.write_text(
            "".join(f"user-{i % 50_000:011d}:" + f"{i:09d} ".ljust(VALUE_BYTES, "v") + "\n" for i in range(args.rows))
        )
        warm_up = Path(work) / "warm-up.txt"
        warm_up.write_text("".join(f"user-{i:011d}:warm-up\n" for i in range(1000)))
        names = ("warm-up", "sink", "cli", "reference")
        with KafkaClient(broker.bootstrap) as client:
            client.create_topics([NewTopic(name, PARTITIONS) for name in names])
        spark_write(spark, broker.bootstrap, "warm-up", warm_up)
        seconds = {
            'df.write.format("kafkalog") (2 tasks)': spark_write(spark, broker.bootstrap, "sink", lines),
            "kafkalog produce --key-separator : --acks all": kafkalog_produce(
                broker.bootstrap, "cli", lines, "--key-separator", ":", "--acks", "all"
            ),
            "confluent-kafka from the driver (reference)": confluent_produce(broker.bootstrap, "reference", lines),
        }
        for topic in ("sink", "cli", "reference"):
            assert stored(broker.bootstrap, topic) == args.rows, topic
    spark.stop()
    reference = seconds["confluent-kafka from the driver (reference)"]
    print(
        f"{args.rows:,} rows (16-byte keys, {VALUE_BYTES}-byte values), {PARTITIONS} partitions by key, acks=all, "
        f"no compression, local[2]:"
    )
    for name, took in seconds.items():
        print(f"  {name:48s} {args.rows / took:10,.0f} rows/s  ({reference / took:.2f} of the reference)")
    return {name: args.rows / took for name, took in seconds.items()}


if __name__ == "__main__":
    main()
