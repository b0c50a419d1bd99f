"""Compression codecs of Kafka record batches: gzip, snappy, lz4 and zstd.

The codecs themselves come from the standard library (gzip compression), python-snappy (snappy
compression) and cramjam (lz4 and zstd frames, and every decompression). This module only knows how
Kafka clients frame them:

* snappy arrives raw (librdkafka) or in snappy-java's "xerial" framing (the Java and Python
  clients): an 8-byte magic, two INT32 version fields, then ``[INT32 length][raw block]`` chunks.
  Google's own "framed snappy" format is a different thing and is never used by Kafka.
* lz4 is the LZ4 *frame* format with independent blocks (Kafka's Java reader refuses linked blocks).
* zstd frames from librdkafka carry no content size, so they are decoded by streaming.

Decompression is bounded (``max_size``) and leaves the GIL to other threads: a batch is decoded
into a buffer of a first guess, then once more into one of ``max_size`` if that was too small, and
decoding stops at the end of the buffer, so a bomb never takes more than the bound. Large buffers
are anonymous memory maps, whose pages the kernel zeroes as the codec (which releases the GIL)
first writes them: a ``bytearray`` of 200 MiB would be zeroed holding the GIL, stalling every
other connection of the broker for half a second.
"""

import enum
import gzip
import mmap
import struct
from types import ModuleType

import cramjam
import snappy

from .buffers import Bytes
from .errors import CorruptRecordError, DecompressedTooLargeError, UnsupportedCodecError


class Codec(enum.IntEnum):
    """Compression codec ids, as stored in the low three attribute bits."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def from_name(cls, name: str) -> "Codec":
        try:
            return cls[name.upper()]
        except KeyError:
            choices = ", ".join(c.name.lower() for c in cls)
            raise ValueError(f"unknown compression codec {name!r}; choose one of {choices}") from None


def codec_of(attributes: int) -> Codec:
    """The codec named by the low three attribute bits; UnsupportedCodecError for ids 5-7."""
    codec_id = attributes & 0x07
    try:
        return Codec(codec_id)
    except ValueError:
        raise UnsupportedCodecError(f"unknown compression codec id {codec_id}") from None


DEFAULT_MAX_DECOMPRESSED = 256 * 1024 * 1024
_BUFFER_FULL = "failed to write whole buffer"  # cramjam's error when decompress_into runs out of room
_LARGEST_ZEROED_BUFFER = 1024 * 1024  # larger output buffers are memory maps, zeroed by the kernel
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_VERSION = 1
_XERIAL_COMPATIBLE_VERSION = 1
_XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's default block size
_BLOCK_LENGTH = struct.Struct(">i")
_BOUNDED_CODECS: dict[int, ModuleType] = {Codec.GZIP: cramjam.gzip, Codec.LZ4: cramjam.lz4, Codec.ZSTD: cramjam.zstd}


def compress(codec: int, data: Bytes) -> bytes:
    """Compress ``data`` the way Kafka's Java producer does for ``codec``."""
    if codec == Codec.NONE:
        return bytes(data)
    if codec == Codec.GZIP:
        return gzip.compress(data, compresslevel=6)
    if codec == Codec.SNAPPY:
        return _xerial_snappy_compress(data)
    if codec == Codec.LZ4:
        compressor = cramjam.lz4.Compressor(block_linked=False)
        compressor.compress(bytes(data))
        return bytes(compressor.finish())
    if codec == Codec.ZSTD:
        return bytes(cramjam.zstd.compress(bytes(data)))
    raise UnsupportedCodecError(f"unknown compression codec id {codec}")


def decompress(codec: int, data: Bytes, max_size: int = DEFAULT_MAX_DECOMPRESSED) -> Bytes:
    """Decompress ``data`` written by any Kafka client with ``codec`` (a bytes-like result).

    Raises CorruptRecordError on bad input, and DecompressedTooLargeError rather than produce
    more than ``max_size`` bytes: a small compressed batch cannot make the process allocate gigabytes.
    """
    try:
        if codec == Codec.NONE:
            return bytes(data)
        if codec == Codec.SNAPPY:
            if bytes(data[:8]) == XERIAL_MAGIC:
                return _xerial_snappy_decompress(data, max_size)
            return _raw_snappy_decompress(bytes(data), max_size)
        module = _BOUNDED_CODECS.get(codec)
        if module is not None:
            return _bounded_decompress(module, bytes(data), max_size)
    except CorruptRecordError:
        raise
    except Exception as exc:  # every codec library has its own error types
        raise CorruptRecordError(f"cannot decompress {Codec(codec).name.lower()} data: {exc}") from exc
    raise UnsupportedCodecError(f"unknown compression codec id {codec}")


def _output_buffer(size: int) -> bytearray | mmap.mmap:
    """A writable buffer of ``size`` bytes, allocated without holding the GIL for long."""
    if size <= _LARGEST_ZEROED_BUFFER:
        return bytearray(size)
    return mmap.mmap(-1, size)


def _bounded_decompress(module: ModuleType, data: bytes, max_size: int) -> memoryview:
    """cramjam's ``decompress_into`` a buffer of four times the input, or of ``max_size`` when that
    was too small; a view of the bytes written (shrinking the buffer instead would copy them)."""
    for size in sorted({min(max(4 * len(data), 64 * 1024), max_size), max_size}):
        out = _output_buffer(size)
        try:
            written = module.decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if _BUFFER_FULL not in str(exc):
                raise
            continue
        return memoryview(out)[:written]
    raise DecompressedTooLargeError(f"data decompresses to more than {max_size} bytes")


def _raw_snappy_length(block: bytes, max_size: int) -> int:
    """The decompressed size a raw snappy block declares, at most ``max_size``."""
    declared = cramjam.snappy.decompress_raw_len(block)
    if declared > max_size:
        raise DecompressedTooLargeError(f"snappy data declares {declared} bytes, more than {max_size}")
    return declared


def _raw_snappy_decompress(block: bytes, max_size: int) -> memoryview:
    out = memoryview(_output_buffer(_raw_snappy_length(block, max_size)))
    cramjam.snappy.decompress_raw_into(block, out)
    return out


def _xerial_snappy_compress(data: Bytes) -> bytes:
    view = memoryview(data)
    out = [_XERIAL_HEADER.pack(XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_COMPATIBLE_VERSION)]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = snappy.compress(bytes(view[start : start + _XERIAL_BLOCK_SIZE]))
        out.append(_BLOCK_LENGTH.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _xerial_snappy_decompress(data: Bytes, max_size: int) -> memoryview:
    """The blocks' declared sizes first (bounded), then each block into its place in one buffer."""
    view = memoryview(data)
    if len(view) < _XERIAL_HEADER.size:
        raise CorruptRecordError("truncated xerial snappy header")
    blocks = []
    total = 0
    pos = _XERIAL_HEADER.size
    while pos < len(view):
        if pos + 4 > len(view):
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = _BLOCK_LENGTH.unpack_from(view, pos)
        pos += 4
        if length < 0 or pos + length > len(view):
            raise CorruptRecordError(f"xerial snappy block of {length} bytes overruns the data")
        block = bytes(view[pos : pos + length])
        declared = _raw_snappy_length(block, max_size - total)
        blocks.append((block, total, declared))
        total += declared
        pos += length
    out = memoryview(_output_buffer(total))
    for block, start, declared in blocks:
        cramjam.snappy.decompress_raw_into(block, out[start : start + declared])
    return out
