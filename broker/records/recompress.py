"""Broker-side compression (a topic's ``compression.type`` other than ``producer``): a v2 batch
whose records section is recompressed with another codec, as Kafka's LogValidator does when the
producer's codec differs.

The records section does not depend on the codec, so it is decompressed and compressed again
as it is, without decoding a record: offsets, timestamps, keys, values, headers, the producer's
id, epoch and sequence, and every attribute but the codec stay as they were; the batch length
and the CRC are recomputed. Decompression is bounded as in ``record_check``; a batch that cannot
be decompressed raises ``CorruptRecordError``.
"""

import struct

from . import batch
from .buffers import Bytes
from .compression import DEFAULT_MAX_DECOMPRESSED, Codec, compress, decompress

_CODEC_BITS = 0x07


def with_codec(data: Bytes, codec: Codec, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> Bytes:
    """``data`` (one complete v2 batch) compressed with ``codec``; unchanged if it already is."""
    header = batch.validate(data)
    if header.compression == codec:
        return data
    section: Bytes = memoryview(data)[batch.HEADER_SIZE : header.size]
    if header.compression != Codec.NONE:
        section = decompress(header.compression, section, max_decompressed)
    body = compress(codec, section)
    rebuilt = bytearray(
        batch.HEADER.pack(
            *header._replace(
                batch_length=batch.HEADER_SIZE - batch.LOG_OVERHEAD + len(body),
                crc=0,
                attributes=(header.attributes & ~_CODEC_BITS) | int(codec),
            )
        )
    )
    rebuilt += body
    struct.pack_into(">I", rebuilt, batch.MAGIC_OFFSET + 1, batch.compute_crc(rebuilt))
    return bytes(rebuilt)
