"""Types of the C extension ``_recordwalk`` (the C record walker of ``recordwalk.h``)."""

from .buffers import Bytes

def walk(records: Bytes, count: int, base_timestamp: int, /) -> int | tuple[int, str]: ...
def spans(records: Bytes, count: int, /) -> list[tuple[int, int, int, int, bytes | None, bool]] | tuple[int, str]:
    """Per record (start, end, offset delta, timestamp delta, key, value is null), or (index, reason)."""
