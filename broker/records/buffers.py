"""The bytes-like values the record codecs read: bytes, and buffers read without a copy."""

Bytes = bytes | bytearray | memoryview
