"""The ``kafkalog`` Spark data source: ``spark.read.format("kafkalog")`` and
``spark.readStream.format("kafkalog")`` with the options of Spark's Kafka source, reading any
Kafka-protocol broker through the stateless offset API, and the sink (``df.write`` /
``df.writeStream``) with the columns and options of Spark's Kafka sink.

Modules: ``options`` (parsing and checks), ``planning`` (offsets and splitting, on the driver),
``input_partitions`` (the tasks of a read or a micro-batch), ``reading`` (one range per task),
``arrow_records`` (records to Arrow), ``streaming`` (the micro-batch stream reader), ``progress``
(offsets behind latest), ``explained`` (errors without tracebacks), ``sink_options`` and
``writing`` (the sink), ``datasource`` (the PySpark classes), ``java`` (the Java check).

Installing the package registers the format by itself (through the ``pyspark_kafkalog`` module);
``register(spark)`` does it explicitly.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing the package does not import PySpark
    from pyspark.sql import SparkSession


def register(spark: "SparkSession") -> None:
    """Register the ``kafkalog`` format with a SparkSession."""
    from .datasource import KafkaLogDataSource

    spark.dataSource.register(KafkaLogDataSource)
