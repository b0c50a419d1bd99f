"""Kafka record formats, pure and without I/O: v2 record batches, legacy message sets, codecs, CRCs.

Modules: ``batch`` (magic 2), ``record_walk`` (the records of a v2 batch, walked: the Python twin of
the C walker ``recordwalk.h``), ``legacy`` (magic 0/1), ``record_set`` (a buffer of entries of any
magic), ``compression``, ``crc``, ``varint``, ``buffers``, ``errors``.
"""
