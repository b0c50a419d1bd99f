"""Compression codecs: round trips for every codec, the framings each Kafka client sends (xerial and
raw snappy, zstd frames with and without a content size, LZ4 frames with independent blocks),
interoperability with the reference codec packages, garbage input, and Codec.from_name."""

import gzip
import random
import struct

import cramjam
import lz4.frame
import pytest
import snappy
import zstandard

from broker.records.compression import XERIAL_MAGIC, Codec, compress, decompress
from broker.records.errors import CorruptRecordError, DecompressedTooLargeError, UnsupportedCodecError

_rng = random.Random(20240611)
SAMPLES = {
    "empty": b"",
    "one-byte": b"x",
    "text": b"the quick brown fox jumps over the lazy dog " * 50,
    "random-100k": _rng.randbytes(100 * 1024),
    "repetitive-1m": _rng.randbytes(1024) * 1024,
    "xerial-block-boundary": _rng.randbytes(64) * 512,  # exactly two 32 KiB xerial blocks
}
COMPRESSING = [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
codec_ids = lambda c: c.name.lower()  # noqa: E731


@pytest.mark.parametrize("codec", list(Codec), ids=codec_ids)
@pytest.mark.parametrize("name", list(SAMPLES))
def test_compress_decompress_round_trip(codec, name):
    data = SAMPLES[name]
    compressed = compress(codec, data)
    assert isinstance(compressed, bytes)
    assert decompress(codec, compressed) == data


@pytest.mark.parametrize("codec", COMPRESSING, ids=codec_ids)
def test_a_large_output_is_bounded_exactly(codec):
    """Far more than four times the input (so past the first guess, into a memory-mapped buffer):
    decoded whole at exactly the bound, refused one byte below it."""
    data = _rng.randbytes(256) * (5 * 4096 + 3)
    compressed = compress(codec, data)
    assert decompress(codec, compressed, max_size=len(data)) == data
    with pytest.raises(DecompressedTooLargeError):
        decompress(codec, compressed, max_size=len(data) - 1)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4, Codec.ZSTD], ids=codec_ids)
def test_a_bomb_is_decoded_at_most_twice(codec, monkeypatch):
    """Whatever its ratio: once into a first guess, once into a buffer of the bound. (Growing the
    buffer x4 at a time decoded a 200 MiB bomb up to five times, each pass into a fresh buffer.)"""
    module = {Codec.GZIP: cramjam.gzip, Codec.LZ4: cramjam.lz4, Codec.ZSTD: cramjam.zstd}[codec]
    passes = []
    real = module.decompress_into
    monkeypatch.setattr(module, "decompress_into", lambda data, out: (passes.append(len(out)), real(data, out))[1])
    data = bytes(8 * 1024 * 1024)
    assert len(decompress(codec, compress(codec, data))) == len(data)
    assert len(passes) <= 2
    passes.clear()
    with pytest.raises(DecompressedTooLargeError):
        decompress(codec, compress(codec, data), max_size=len(data) // 2)
    assert len(passes) <= 2


@pytest.mark.parametrize("codec", list(Codec), ids=codec_ids)
def test_decompress_accepts_memoryview_and_bytearray(codec):
    data = SAMPLES["text"]
    compressed = compress(codec, data)
    assert decompress(codec, memoryview(compressed)) == data
    assert decompress(codec, bytearray(compressed)) == data
    assert decompress(codec, memoryview(b"xx" + compressed)[2:]) == data


def test_none_codec_passes_bytes_through():
    assert compress(Codec.NONE, bytearray(b"abc")) == b"abc"
    assert decompress(Codec.NONE, memoryview(b"abc")) == b"abc"


@pytest.mark.parametrize(
    "codec, magic",
    [
        (Codec.GZIP, b"\x1f\x8b"),
        (Codec.SNAPPY, XERIAL_MAGIC),
        (Codec.LZ4, b"\x04\x22\x4d\x18"),
        (Codec.ZSTD, b"\x28\xb5\x2f\xfd"),
    ],
    ids=["gzip", "snappy", "lz4", "zstd"],
)
def test_compressed_output_starts_with_the_codec_magic(codec, magic):
    assert compress(codec, SAMPLES["text"]).startswith(magic)


def test_compressing_codecs_shrink_repetitive_data():
    for codec in COMPRESSING:
        assert len(compress(codec, SAMPLES["repetitive-1m"])) < len(SAMPLES["repetitive-1m"]) // 4


# --- codec ids and names -------------------------------------------------------------------


def test_codec_ids_match_the_attribute_bits():
    assert [(c.name, int(c)) for c in Codec] == [("NONE", 0), ("GZIP", 1), ("SNAPPY", 2), ("LZ4", 3), ("ZSTD", 4)]


@pytest.mark.parametrize(
    "name, codec",
    [
        ("none", Codec.NONE),
        ("gzip", Codec.GZIP),
        ("GZIP", Codec.GZIP),
        ("Snappy", Codec.SNAPPY),
        ("lz4", Codec.LZ4),
        ("zstd", Codec.ZSTD),
    ],
)
def test_codec_from_name(name, codec):
    assert Codec.from_name(name) is codec


@pytest.mark.parametrize("bad", ["brotli", "", "gzip2", "uncompressed"])
def test_codec_from_name_error_lists_valid_names(bad):
    with pytest.raises(ValueError) as excinfo:
        Codec.from_name(bad)
    message = str(excinfo.value)
    assert repr(bad) in message
    for valid in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert valid in message


@pytest.mark.parametrize("codec_id", [5, 6, 7, -1, 99])
def test_unknown_codec_ids_raise_unsupported_codec_error(codec_id):
    with pytest.raises(UnsupportedCodecError):
        compress(codec_id, b"data")
    with pytest.raises(UnsupportedCodecError):
        decompress(codec_id, b"data")


# --- gzip ----------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0, 1, 9])
def test_gzip_from_other_encoders_decompresses(level):
    data = SAMPLES["text"]
    assert decompress(Codec.GZIP, gzip.compress(data, compresslevel=level)) == data


def test_gzip_multi_member_stream_decompresses():
    assert decompress(Codec.GZIP, gzip.compress(b"first ") + gzip.compress(b"second")) == b"first second"


# --- snappy --------------------------------------------------------------------------------


def _xerial_blocks(compressed: bytes) -> list:
    magic, version, compatible = struct.unpack_from(">8sii", compressed)
    assert (magic, version, compatible) == (XERIAL_MAGIC, 1, 1)
    pos, blocks = 16, []
    while pos < len(compressed):
        (length,) = struct.unpack_from(">i", compressed, pos)
        blocks.append(compressed[pos + 4 : pos + 4 + length])
        pos += 4 + length
    assert pos == len(compressed)
    return blocks


def test_snappy_compress_produces_xerial_framing_with_32k_blocks():
    data = SAMPLES["random-100k"]
    compressed = compress(Codec.SNAPPY, data)
    assert compressed.startswith(b"\x82SNAPPY\x00")
    blocks = [snappy.decompress(b) for b in _xerial_blocks(compressed)]
    assert [len(b) for b in blocks] == [32768, 32768, 32768, 4096]
    assert b"".join(blocks) == data


@pytest.mark.parametrize("name", list(SAMPLES))
def test_snappy_decompress_accepts_raw_snappy(name):
    data = SAMPLES[name]
    raw = snappy.compress(data)
    assert not raw.startswith(XERIAL_MAGIC)
    assert decompress(Codec.SNAPPY, raw) == data


def test_snappy_decompress_accepts_hand_made_xerial_stream_with_uneven_blocks():
    chunks = [b"a" * 10, b"b" * 70000, b"", b"c" * 5]
    stream = struct.pack(">8sii", XERIAL_MAGIC, 1, 1) + b"".join(
        struct.pack(">i", len(c)) + c for c in map(snappy.compress, chunks)
    )
    assert decompress(Codec.SNAPPY, stream) == b"".join(chunks)


def test_snappy_interoperates_with_kafka_python_xerial_codec():
    from kafka.codec import snappy_decode, snappy_encode

    data = SAMPLES["random-100k"]
    assert snappy_decode(compress(Codec.SNAPPY, data)) == data
    assert decompress(Codec.SNAPPY, snappy_encode(data, xerial_compatible=True)) == data
    assert decompress(Codec.SNAPPY, snappy_encode(data, xerial_compatible=False)) == data


@pytest.mark.parametrize(
    "stream",
    [
        XERIAL_MAGIC,
        XERIAL_MAGIC + b"\x00\x00\x00\x01",
        XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00",
    ],
    ids=["magic-only", "magic-and-version", "magic-version-and-3-bytes"],
)
def test_snappy_xerial_header_cut_short_is_corrupt(stream):
    with pytest.raises(CorruptRecordError):
        decompress(Codec.SNAPPY, stream)


@pytest.mark.parametrize(
    "tail",
    [b"\x00\x00", b"\x00\x00\x00\x10abc", b"\xff\xff\xff\xff"],
    ids=["partial-length", "block-overruns", "negative-length"],
)
def test_snappy_xerial_bad_block_framing_is_corrupt(tail):
    with pytest.raises(CorruptRecordError):
        decompress(Codec.SNAPPY, compress(Codec.SNAPPY, b"payload" * 10) + tail)


# --- zstd ----------------------------------------------------------------------------------


def test_zstd_frame_without_content_size_decompresses():
    data = SAMPLES["text"]
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.frame_content_size(frame) == -1  # really no content size in the header
    assert decompress(Codec.ZSTD, frame) == data


@pytest.mark.parametrize("name", ["text", "random-100k", "repetitive-1m"])
def test_zstd_streaming_compressobj_frame_decompresses(name):
    data = SAMPLES[name]
    compressor = zstandard.ZstdCompressor().compressobj()
    frame = b"".join(compressor.compress(data[i : i + 10000]) for i in range(0, len(data), 10000))
    frame += compressor.flush()
    assert zstandard.frame_content_size(frame) == -1
    assert decompress(Codec.ZSTD, frame) == data


def test_zstd_frame_with_content_size_decompresses():
    data = SAMPLES["random-100k"]
    frame = zstandard.ZstdCompressor(level=3).compress(data)
    assert zstandard.frame_content_size(frame) == len(data)
    assert decompress(Codec.ZSTD, frame) == data


def test_zstd_output_decodes_with_zstandard_streaming_reader():
    data = SAMPLES["repetitive-1m"]
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    assert decompressor.decompress(compress(Codec.ZSTD, data)) == data


# --- lz4 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SAMPLES))
def test_lz4_frames_have_block_independence_flag(name):
    frame = compress(Codec.LZ4, SAMPLES[name])
    assert frame[:4] == b"\x04\x22\x4d\x18"
    flg = frame[4]
    assert flg >> 6 == 0b01  # frame format version 01
    assert flg & 0x20, f"FLG {flg:#04x} lacks the block-independence bit"


@pytest.mark.parametrize("name", list(SAMPLES))
def test_lz4_frames_decode_with_lz4_frame_package(name):
    data = SAMPLES[name]
    assert lz4.frame.decompress(compress(Codec.LZ4, data)) == data


@pytest.mark.parametrize("block_linked", [False, True])
@pytest.mark.parametrize("content_checksum", [False, True])
@pytest.mark.parametrize("store_size", [False, True])
def test_lz4_frames_from_lz4_frame_package_decompress(block_linked, content_checksum, store_size):
    data = SAMPLES["random-100k"] + SAMPLES["text"]
    frame = lz4.frame.compress(
        data,
        block_linked=block_linked,
        content_checksum=content_checksum,
        store_size=store_size,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
    )
    assert decompress(Codec.LZ4, frame) == data


# --- garbage -------------------------------------------------------------------------------

GARBAGE = {
    "ascii": b"this is not compressed data at all",
    "zeros": b"\x00" * 64,
    "ones": b"\xff" * 64,
    "random": random.Random(7).randbytes(300),
}


@pytest.mark.parametrize("codec", COMPRESSING, ids=codec_ids)
@pytest.mark.parametrize("name", list(GARBAGE))
def test_garbage_input_raises_corrupt_record_error(codec, name):
    with pytest.raises(CorruptRecordError):
        decompress(codec, GARBAGE[name])


@pytest.mark.parametrize("codec", COMPRESSING, ids=codec_ids)
@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.9])
def test_truncated_compressed_data_raises_corrupt_record_error(codec, fraction):
    compressed = compress(codec, SAMPLES["random-100k"])
    with pytest.raises(CorruptRecordError):
        decompress(codec, compressed[: int(len(compressed) * fraction)])


@pytest.mark.parametrize("codec", COMPRESSING, ids=codec_ids)
def test_other_codecs_output_is_rejected(codec):
    others = [c for c in COMPRESSING if c != codec]
    for other in others:
        foreign = compress(other, SAMPLES["text"])
        with pytest.raises(CorruptRecordError):
            decompress(codec, foreign)


@pytest.mark.parametrize("codec", COMPRESSING, ids=codec_ids)
def test_corrupt_record_error_chains_the_codec_error(codec):
    with pytest.raises(CorruptRecordError, match=codec.name.lower()):
        decompress(codec, GARBAGE["random"][:50] + b"\x01" * 50)
