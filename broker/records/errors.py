"""Errors raised while parsing or validating record bytes."""


class CorruptRecordError(ValueError):
    """The bytes are not a well-formed record batch or message: bad size, bad CRC, truncated fields."""


class UnsupportedCodecError(CorruptRecordError):
    """The attributes name a compression codec this implementation does not know."""


class DecompressedTooLargeError(CorruptRecordError):
    """Compressed data that would decompress to more than the allowed size (a decompression bomb)."""
