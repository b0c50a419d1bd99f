"""A kafkalog DataFrame counted, then written, reads the same records both times, even with
records produced in between: its offsets were resolved once, when it was planned.

The write goes to Parquet (read back and compared record by record with what was produced before
the count) and to Spark's ``noop`` sink (which runs every task and keeps nothing; the rows it
handled are counted with an accumulator), with split tasks and headers, as a load job does.
"""

import pytest
from pyspark.sql import functions as F

from .feed import assert_rows, create_topic, load, messages, produce, rows

pytestmark = pytest.mark.timeout(180)


def test_count_then_parquet_write_with_records_produced_in_between(spark, broker, tmp_path):
    topic = "count-then-parquet"
    create_topic(broker.bootstrap, topic, 3)
    first = produce(broker.bootstrap, topic, messages(30, partitions=(0, 1, 2), tag="first"))
    df = load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true", maxRecordsPerPartition="4")
    assert df.count() == 30
    later = produce(broker.bootstrap, topic, messages(12, partitions=(0, 1, 2), tag="later"))
    df.write.parquet(str(tmp_path / "out"))
    produce(broker.bootstrap, topic, messages(6, partitions=(1,), tag="after-write"))
    written = spark.read.parquet(str(tmp_path / "out"))
    assert sorted(written.columns) == sorted(df.columns)
    assert_rows(rows(written), first)
    assert df.count() == 30
    # a new DataFrame sees what was produced since
    assert load(spark, broker.bootstrap, subscribe=topic).count() == 30 + len(later) + 6


def test_count_then_noop_write_handles_the_same_rows(spark, broker):
    topic = "count-then-noop"
    create_topic(broker.bootstrap, topic, 2)
    first = produce(broker.bootstrap, topic, messages(20, partitions=(0, 1), tag="first"))
    df = load(spark, broker.bootstrap, subscribe=topic, minPartitions="5")
    assert df.count() == len(first)
    produce(broker.bootstrap, topic, messages(10, partitions=(0, 1), tag="later"))
    seen = spark.sparkContext.accumulator(0)
    offsets = spark.sparkContext.accumulator(0)

    @F.udf(returnType="long", useArrow=False)
    def tally(offset):
        seen.add(1)
        offsets.add(offset)
        return offset

    df.select(tally(F.col("offset")).alias("offset")).write.format("noop").mode("overwrite").save()
    assert seen.value == len(first)
    assert offsets.value == sum(r.offset for r in first)
