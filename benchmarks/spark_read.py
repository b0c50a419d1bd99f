"""Rows per second of ``spark.read.format("kafkalog")`` against the ceiling of Spark's Python data source path.

In one run, on a local[2] SparkSession: ``count()`` and a ``noop`` write of a topic of 5 M records
with 100-byte values in 2 partitions (one task per core), read through the kafkalog source from
a broker process (with CRC checks, and with ``kafka.check.crcs=false``), side by side with a
reference Python data source whose tasks yield the same number of rows as pre-built Arrow batches
from memory (same schema, no I/O, no decoding): the most this path of Spark can do.

    .venv/bin/python -m benchmarks.spark_read [--records 5000000] [--rounds 3]
"""

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from confluent_kafka import Producer  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

from broker.embedded import EmbeddedBroker  # noqa: E402
from spark_kafka_source.arrow_records import arrow_schema, native_available  # noqa: E402
from spark_kafka_source.datasource import source_schema  # noqa: E402

if TYPE_CHECKING:
    import pyarrow as pa

PARTITIONS = 2
VALUE_SIZE = 100
BATCH_ROWS = 50_000


class PrebuiltArrowSource(DataSource):
    """The reference: each task yields one pre-built batch, over and over, until it has its rows."""

    @classmethod
    def name(cls) -> str:
        return "prebuilt_arrow"

    def schema(self) -> StructType:
        return source_schema(False)

    def reader(self, schema: StructType) -> "PrebuiltArrowReader":
        return PrebuiltArrowReader(int(self.options["rows"]), int(self.options["partitions"]))


class PrebuiltArrowReader(DataSourceReader):
    def __init__(self, rows: int, partitions: int) -> None:
        self.rows, self.partitions_count = rows, partitions

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.partitions_count)]

    def read(self, partition: InputPartition) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        n = BATCH_ROWS
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array([b"key-%08d" % i for i in range(n)], pa.binary()),
                pa.array([os.urandom(VALUE_SIZE)] * n, pa.binary()),
                pa.array(["bench"] * n, pa.string()),
                pa.array([partition.value] * n, pa.int32()),
                pa.array(range(n), pa.int64()),
                pa.array([1_700_000_000_000_000] * n, pa.timestamp("us", tz="UTC")),
                pa.array([0] * n, pa.int32()),
            ],
            schema=arrow_schema(False),
        )
        remaining = self.rows // self.partitions_count
        while remaining > 0:
            yield batch if remaining >= n else batch.slice(0, remaining)
            remaining -= n


def produce(bootstrap: str, records: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 1024 * 1024,
        }
    )
    value = os.urandom(VALUE_SIZE)
    for i in range(records):
        while True:
            try:
                producer.produce("bench", value, key=b"key-%08d" % i, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(300):
        raise RuntimeError("records not delivered")


def local_spark() -> SparkSession:
    """The benchmarks' Spark: local[2] (the machine's 2 cores), no UI or progress bars, UTC, errors only."""
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def write_noop(frame: DataFrame) -> None:
    """Read every row of ``frame`` and write it nowhere (Spark's noop sink)."""
    frame.write.format("noop").mode("overwrite").save()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    spark = local_spark()
    spark.dataSource.register(PrebuiltArrowSource)
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as directory:
        broker = EmbeddedBroker(os.path.join(directory, "log"), {"num.partitions": str(PARTITIONS)}).start()
        try:
            produce(broker.bootstrap, args.records)
            kafkalog = (
                spark.read.format("kafkalog")
                .option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", "bench")
            )
            frames = {
                "kafkalog": kafkalog.load(),
                "kafkalog, check.crcs=false": kafkalog.option("kafka.check.crcs", "false").load(),
                "reference": spark.read.format("prebuilt_arrow")
                .option("rows", args.records)
                .option("partitions", PARTITIONS)
                .load(),
            }
            for name, frame in frames.items():  # warm-up: Python workers, JIT, page cache
                assert frame.count() == args.records, name
            for _ in range(args.rounds):
                for name, frame in frames.items():
                    times.setdefault((name, "count"), []).append(timed(frame.count))
                    times.setdefault((name, "noop"), []).append(timed(functools.partial(write_noop, frame)))
        finally:
            broker.stop()
    spark.stop()
    rates = {key: args.records / statistics.median(values) for key, values in times.items()}
    print(
        f"{args.records:,} records of {VALUE_SIZE}-byte values, {PARTITIONS} partitions, local[2], "
        f"median of {args.rounds} (C decoder: {native_available()}):"
    )
    print(f"  {'':28s} {'count rows/s':>14s} {'ratio':>6s} {'noop rows/s':>14s} {'ratio':>6s}")
    for name in frames:
        count, noop = rates[(name, "count")], rates[(name, "noop")]
        print(
            f"  {name:28s} {count:14,.0f} {count / rates[('reference', 'count')]:6.2f} "
            f"{noop:14,.0f} {noop / rates[('reference', 'noop')]:6.2f}"
        )
    return rates


if __name__ == "__main__":
    main()
