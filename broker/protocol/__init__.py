"""The Kafka wire protocol, sans I/O: primitives and schemas (``types``), the advertised APIs
(``apis``), request/response frames (``frames``) and error codes (``errors``)."""
