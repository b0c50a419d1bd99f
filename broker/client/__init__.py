"""A synchronous Kafka-protocol client: metadata, list offsets, fetch by offset (the stateless
offset API), produce, and topic admin; reusing ``broker.protocol`` and ``broker.records``. Used by
the Spark data source, the load job, the demo and the CLI."""

from broker.common.offsets import EARLIEST, LATEST

from .client import (AuthorizationError, KafkaClient, KafkaError, NewTopic, OffsetOutOfRangeError,
                     RecordsRefusedError, UnknownTopicOrPartitionError)

__all__ = ["EARLIEST", "LATEST", "AuthorizationError", "KafkaClient", "KafkaError", "NewTopic",
           "OffsetOutOfRangeError", "RecordsRefusedError", "UnknownTopicOrPartitionError"]
