"""A synchronous Kafka-protocol client for the stateless offset API (metadata, list offsets, fetch),
reusing ``broker.protocol`` and ``broker.records``; used by the Spark data source and the CLI."""

from .client import EARLIEST, LATEST, KafkaClient, KafkaError, OffsetOutOfRangeError, UnknownTopicOrPartitionError

__all__ = ["EARLIEST", "LATEST", "KafkaClient", "KafkaError", "OffsetOutOfRangeError", "UnknownTopicOrPartitionError"]
