"""The bundled broker: record formats, the on-disk log, and (later) the Kafka wire-protocol server."""
