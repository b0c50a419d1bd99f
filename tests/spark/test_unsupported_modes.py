"""What the source does not do yet, refused through Spark with one line saying what it does.

A streaming query is refused by its first step: Spark starts the query's thread before it asks a
Python source anything, so ``start()`` returns and the query ends at once with the refusal, instead
of PySpark's ``UnboundLocalError`` that hid ``NOT_IMPLEMENTED``.
"""

import pytest
from pyspark.errors import StreamingQueryException

from .feed import create_topic, messages, produce

pytestmark = pytest.mark.timeout(120)

TOPIC = "unsupported-modes"
SUPPORTED = 'the kafkalog source supports batch reads only: spark.read.format("kafkalog")...load()'


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


def test_a_streaming_read_ends_its_query_at_once_with_one_line(spark, broker, topic, tmp_path):
    stream = (spark.readStream.format("kafkalog").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", TOPIC).load())
    query = stream.writeStream.format("memory").queryName("unsupported_modes_read") \
        .option("checkpointLocation", str(tmp_path / "read")).start()
    try:
        with pytest.raises(StreamingQueryException) as raised:
            query.awaitTermination(60)
    finally:
        query.stop()
    assert "streaming reads (spark.readStream) are not supported yet" in refusal_line(str(raised.value))
    assert spark.table("unsupported_modes_read").count() == 0

