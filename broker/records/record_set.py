"""A buffer of consecutive entries (v2 batches and legacy messages): split, decode, up-convert.

This is what a Fetch response or a ``.log`` segment holds. The magic byte sits at position 16 in
both formats, so each entry is parsed by the decoder of its own magic. A fetch response may end
with a partial entry; iteration stops before it.
"""

from collections.abc import Iterator

from . import batch, legacy
from .batch import Record, TimestampType
from .buffers import Bytes
from .compression import DEFAULT_MAX_DECOMPRESSED, Codec
from .errors import CorruptRecordError

MAGIC_OFFSET = 16
MIN_ENTRY_PREFIX = MAGIC_OFFSET + 1

EntryHeader = batch.BatchHeader | legacy.LegacyHeader


def parse_entry_header(buf: Bytes, pos: int = 0) -> EntryHeader:
    """The header of the entry at ``buf[pos:]``: a ``BatchHeader`` (magic 2) or ``LegacyHeader``."""
    if len(buf) - pos < MIN_ENTRY_PREFIX:
        raise CorruptRecordError(f"entry header needs at least {MIN_ENTRY_PREFIX} bytes, {len(buf) - pos} present")
    if buf[pos + MAGIC_OFFSET] == batch.MAGIC:
        return batch.parse_header(buf, pos)
    return legacy.parse_header(buf, pos)


def validate_entry(entry: Bytes) -> EntryHeader:
    """Check one complete entry of any magic (size and CRC); return its header."""
    if len(entry) > MAGIC_OFFSET and entry[MAGIC_OFFSET] == batch.MAGIC:
        return batch.validate(entry)
    return legacy.validate(entry)


def decode_entry(entry: Bytes, verify_crc: bool = True) -> batch.DecodedBatch:
    """Decode the records of one complete entry of any magic."""
    if len(entry) > MAGIC_OFFSET and entry[MAGIC_OFFSET] == batch.MAGIC:
        return batch.decode(entry, verify_crc)
    return legacy.decode(entry, verify_crc)


def iter_entries(buf: Bytes, allow_partial_tail: bool = True) -> Iterator[tuple[int, EntryHeader]]:
    """Yield ``(position, header)`` for each complete entry in ``buf``.

    A trailing partial entry (normal at the end of a fetch response) ends the iteration when
    ``allow_partial_tail``; otherwise it raises CorruptRecordError, as malformed headers always do.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        try:
            header = parse_entry_header(buf, pos)
        except CorruptRecordError:
            if allow_partial_tail and _header_cut_short(buf, pos):
                return
            raise
        if pos + header.size > end:
            if allow_partial_tail:
                return
            raise CorruptRecordError(f"entry at position {pos} declares {header.size} bytes, {end - pos} present")
        yield pos, header
        pos += header.size


def _header_cut_short(buf: Bytes, pos: int) -> bool:
    """True if the header at ``pos`` is incomplete (rather than malformed)."""
    remaining = len(buf) - pos
    if remaining < MIN_ENTRY_PREFIX:
        return True
    magic = buf[pos + MAGIC_OFFSET]
    if magic == batch.MAGIC:
        return remaining < batch.HEADER_SIZE
    return remaining < legacy.HEADER_SIZE.get(magic, 0)


def iter_batches(buf: Bytes, verify_crc: bool = True) -> Iterator[batch.DecodedBatch]:
    """Decode every complete entry in ``buf`` (control batches included) as ``DecodedBatch``es."""
    view = memoryview(buf)
    for pos, header in iter_entries(view):
        yield decode_entry(view[pos : pos + header.size], verify_crc)


def iter_user_records(buf: Bytes, verify_crc: bool = True) -> Iterator[tuple[TimestampType, Record]]:
    """Yield ``(timestamp_type, Record)`` for every data record, skipping control batches."""
    for decoded in iter_batches(buf, verify_crc):
        if not decoded.is_control:
            for record in decoded.records:
                yield decoded.timestamp_type, record


def upconvert(buf: Bytes, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Turn a produced record set into v2 batches for storage.

    v2 batches pass through unchanged; a legacy message set becomes one v2 batch with offsets
    0..n-1, CreateTime timestamps (-1 for magic 0), and the codec of its first compressed wrapper.
    No compressed wrapper may decompress to more than ``max_decompressed`` bytes.
    """
    view = memoryview(buf)
    entries = list(iter_entries(view, allow_partial_tail=False))
    if not entries:
        raise CorruptRecordError("record set is empty")
    if all(header.magic == batch.MAGIC for _, header in entries):
        return bytes(buf)
    if any(header.magic == batch.MAGIC for _, header in entries):
        raise CorruptRecordError("record set mixes v2 batches and legacy messages")
    records = []
    codec = Codec.NONE
    for pos, header in entries:
        if codec == Codec.NONE:
            codec = header.compression
        records.extend(legacy.decode(view[pos : pos + header.size], max_decompressed=max_decompressed).records)
    if not records:
        raise CorruptRecordError("legacy message set holds no messages")
    renumbered = [Record(i, r.timestamp, r.key, r.value) for i, r in enumerate(records)]
    return batch.build(renumbered, compression=codec, timestamp_type=TimestampType.CREATE_TIME)
