"""Broker-side compression (a topic's ``compression.type`` other than ``producer``): a v2 batch
rebuilt with another codec, as Kafka's LogValidator does when the producer's codec differs.

Everything but the records section's compression is kept: offsets (as deltas), timestamps and
their type, keys, values, headers, producer id, epoch and sequence, and the transactional flag.
Decompression is bounded as in ``record_check``; a batch that cannot be decoded raises
``CorruptRecordError``.
"""

from . import batch
from .compression import Codec


def with_codec(data, codec: Codec) -> bytes | memoryview:
    """``data`` (one complete v2 batch) compressed with ``codec``; unchanged if it already is."""
    header = batch.validate(data)
    if header.compression == codec:
        return data
    decoded = batch.decode(data, verify_crc=False)
    return batch.build(decoded.records, base_offset=header.base_offset, compression=codec,
                       timestamp_type=header.timestamp_type, producer_id=header.producer_id,
                       producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
                       partition_leader_epoch=header.partition_leader_epoch,
                       is_transactional=header.is_transactional, max_timestamp=header.max_timestamp)
