"""Automatic registration: Spark 4 imports every top-level ``pyspark_*`` module and registers its
``DefaultSource``, so ``spark.read.format("kafkalog")`` works without calling ``register``."""

from spark_kafka_source.datasource import KafkaLogDataSource as DefaultSource

__all__ = ["DefaultSource"]
