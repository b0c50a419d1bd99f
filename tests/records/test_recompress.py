"""Broker-side recompression: every codec to every other keeps each record and every header field
but the codec, the batch length and the CRC; a batch already in the codec comes back unchanged;
a batch whose compressed section is damaged is refused."""

import itertools
import struct

import pytest

from broker.records import batch, recompress
from broker.records.batch import Record
from broker.records.compression import Codec
from broker.records.errors import CorruptRecordError

RECORDS = [
    Record(
        100 + i,
        1_700_000_000_000 + 7 * i,
        None if i % 4 == 0 else b"key%d" % i,
        b"value %d " % i * 20,
        (("h", b"%d" % i), ("n", None)) if i % 2 else (),
    )
    for i in range(50)
]


def built(codec: Codec) -> bytes:
    return batch.build(
        RECORDS,
        base_offset=100,
        compression=codec,
        producer_id=42,
        producer_epoch=3,
        base_sequence=17,
        partition_leader_epoch=5,
    )


@pytest.mark.parametrize("sent, wanted", list(itertools.permutations(Codec, 2)), ids=str)
def test_every_codec_to_every_other_keeps_the_records_and_the_header(sent, wanted):
    original = built(sent)
    rebuilt = recompress.with_codec(original, wanted)
    before, after = batch.validate(original), batch.validate(rebuilt)
    assert after.compression == wanted
    assert after._replace(batch_length=0, crc=0, attributes=0) == before._replace(batch_length=0, crc=0, attributes=0)
    assert after.attributes & ~0x07 == before.attributes & ~0x07
    assert batch.decode(rebuilt).records == batch.decode(original).records == RECORDS


def test_a_batch_already_in_the_codec_is_returned_as_it_is():
    original = built(Codec.ZSTD)
    assert recompress.with_codec(original, Codec.ZSTD) is original


@pytest.mark.parametrize("fix_crc", [False, True], ids=["bad-crc", "undecompressable"])
def test_a_damaged_compressed_section_is_refused(fix_crc):
    damaged = bytearray(built(Codec.GZIP))
    damaged[batch.HEADER_SIZE + 10 : batch.HEADER_SIZE + 20] = bytes(10)
    if fix_crc:
        struct.pack_into(">I", damaged, batch.MAGIC_OFFSET + 1, batch.compute_crc(damaged))
    with pytest.raises(CorruptRecordError):
        recompress.with_codec(bytes(damaged), Codec.ZSTD)
