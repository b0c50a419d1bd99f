"""A streaming query in a process of its own, for tests that SIGKILL its driver:
``python -m tests.spark.stream_process BOOTSTRAP TOPIC OUTPUT CHECKPOINT (processing|available-now)``
reads TOPIC from earliest, at most 6 records per micro-batch, into a Parquet file sink at OUTPUT
with its checkpoint at CHECKPOINT, printing ``batch N`` (flushed) as each micro-batch ends. With
``processing`` it runs until killed; with ``available-now`` it stops when everything present at its
start is in OUTPUT, and exits 0."""

import os
import sys
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402


def main(bootstrap: str, topic: str, output: str, checkpoint: str, trigger: str) -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    frame = (
        spark.readStream.format("kafkalog")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "6")
        .load()
    )
    writer = frame.writeStream.format("parquet").option("path", output).option("checkpointLocation", checkpoint)
    writer = (
        writer.trigger(availableNow=True)
        if trigger == "available-now"
        else writer.trigger(processingTime="100 milliseconds")
    )
    query = writer.start()
    printed = -1
    while query.isActive:
        progress = query.lastProgress
        if progress is not None and progress["batchId"] > printed:
            printed = progress["batchId"]
            print(f"batch {printed}", flush=True)
        time.sleep(0.02)
    query.awaitTermination()  # raises the query's error, if any
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
