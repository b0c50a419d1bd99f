"""What the source does not do yet (writes), refused through Spark with one line saying what it does.

A batch write is refused when Spark asks for its writer (with ``.mode("append")``; without it, Spark's
own save-mode check speaks first). A streaming write is refused by its query's first step: Spark
starts the query's thread first, so ``start()`` returns and the query ends at once with the refusal.
"""

import pytest
from pyspark.errors import AnalysisException, StreamingQueryException

from .feed import create_topic, messages, produce

pytestmark = pytest.mark.timeout(120)

TOPIC = "unsupported-modes"
SUPPORTED = 'the kafkalog source reads: spark.read.format("kafkalog")...load()'


@pytest.fixture(scope="module")
def topic(broker):
    create_topic(broker.bootstrap, TOPIC, 1)
    produce(broker.bootstrap, TOPIC, messages(3, partitions=(0,), tag="modes"))
    return TOPIC


def refusal_line(message: str) -> str:
    """The one line of ``message`` that carries the refusal; fails if there is a traceback."""
    assert "Traceback" not in message and "UnboundLocalError" not in message, message[:1500]
    lines = [line for line in message.splitlines() if SUPPORTED in line]
    assert lines, message[:1500]
    return lines[0]


def test_a_batch_write_is_refused_in_one_line(spark, broker, topic):
    with pytest.raises(AnalysisException) as raised:
        (spark.range(3).selectExpr("CAST(id AS STRING) AS value").write.format("kafkalog").mode("append")
         .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", TOPIC).save())
    assert "writing to Kafka (df.write, df.writeStream) is not supported yet" in refusal_line(str(raised.value))


def test_a_streaming_write_ends_its_query_at_once_with_one_line(spark, broker, topic, tmp_path):
    rows = spark.readStream.format("rate").option("rowsPerSecond", "1").load()
    query = rows.selectExpr("CAST(value AS STRING) AS value").writeStream.format("kafkalog") \
        .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", TOPIC) \
        .option("checkpointLocation", str(tmp_path / "write")).start()
    try:
        with pytest.raises(StreamingQueryException) as raised:
            query.awaitTermination(60)
    finally:
        query.stop()
    assert "writing to Kafka (df.write, df.writeStream) is not supported yet" in refusal_line(str(raised.value))
