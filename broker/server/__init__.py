"""The Kafka wire-protocol server: config, topics, request handlers, connections, the broker process."""
