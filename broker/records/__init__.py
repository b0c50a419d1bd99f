"""Kafka record formats, pure and without I/O: v2 record batches, legacy message sets, codecs, CRCs.

Modules: ``batch`` (magic 2), ``legacy`` (magic 0/1), ``record_set`` (a buffer of entries of any
magic), ``compression``, ``crc``, ``varint``, ``errors``.
"""
