"""Rows per second of a ``readStream.format("kafkalog")`` query with ``Trigger.AvailableNow`` against
the batch read of the same records, side by side in one run.

On a local[2] SparkSession: a topic of 5 M records with 100-byte values in 2 partitions (as
``spark_read``), written to Spark's ``noop`` sink by a batch read (``df.write``) and by AvailableNow
streaming queries (each with a new checkpoint): one with no rate limit (one micro-batch) and one
with ``maxOffsetsPerTrigger`` at a tenth of the records (ten micro-batches, each planned, written
and committed to the checkpoint). Then the fixed cost of a streaming query: the last one started
again on its finished checkpoint, with nothing left to read (Spark starts the source's Python
process on the driver, plans, checks for new data, stops).

    .venv/bin/python -m benchmarks.spark_stream [--records 5000000] [--rounds 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


from pyspark.sql import SparkSession  # noqa: E402

from benchmarks.spark_read import PARTITIONS, VALUE_SIZE, local_spark, produce, timed  # noqa: E402
from broker.embedded import EmbeddedBroker  # noqa: E402


def stream_seconds(spark: SparkSession, bootstrap: str, checkpoint: str, options: dict) -> float:
    """Seconds from start() to the end of an AvailableNow query into the noop sink."""
    reader = (
        spark.readStream.format("kafkalog")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "bench")
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    started = time.perf_counter()
    query = (
        reader.load()
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        if not query.awaitTermination(600):
            raise RuntimeError("the AvailableNow query did not finish in 10 minutes")
    finally:
        query.stop()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    spark = local_spark()
    limited = {"maxOffsetsPerTrigger": str(args.records // 10)}
    variants = {"batch read, noop write": None, "AvailableNow, no limit": {}, "AvailableNow, 10 micro-batches": limited}
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as directory:
        broker = EmbeddedBroker(os.path.join(directory, "log"), {"num.partitions": str(PARTITIONS)}).start()
        try:
            produce(broker.bootstrap, args.records)
            batch = (
                spark.read.format("kafkalog")
                .option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", "bench")
                .load()
            )
            assert batch.count() == args.records  # warm-up: Python workers, page cache
            for round_number in range(args.rounds):
                for name, options in variants.items():
                    if options is None:
                        seconds = timed(lambda: batch.write.format("noop").mode("overwrite").save())
                    else:
                        checkpoint = os.path.join(
                            directory, f"checkpoint-{round_number}-{len(times.get(name, []))}-{len(options)}"
                        )
                        seconds = stream_seconds(spark, broker.bootstrap, checkpoint, options)
                    times.setdefault(name, []).append(seconds)
                times.setdefault("start-up", []).append(stream_seconds(spark, broker.bootstrap, checkpoint, limited))
        finally:
            broker.stop()
    spark.stop()
    start_up = statistics.median(times.pop("start-up"))
    rates = {name: args.records / statistics.median(values) for name, values in times.items()}
    reference = rates["batch read, noop write"]
    print(
        f"{args.records:,} records of {VALUE_SIZE}-byte values, {PARTITIONS} partitions, local[2], "
        f"median of {args.rounds}:"
    )
    for name, rate in rates.items():
        print(f"  {name:32s} {rate:14,.0f} rows/s {rate / reference:6.2f}")
    print(f"  an AvailableNow query with nothing to read: {start_up:.2f} s")
    return rates


if __name__ == "__main__":
    main()
