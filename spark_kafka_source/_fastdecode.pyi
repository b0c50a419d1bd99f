"""Types of the C extension ``_fastdecode`` (v2 records into Arrow column buffers)."""

from typing import Any

from broker.records.buffers import Bytes

class DecodeError(ValueError): ...

class Buffer:
    def __len__(self) -> int: ...

class Columns:
    def __init__(self, include_headers: bool = False) -> None: ...
    @property
    def count(self) -> int: ...
    def add_v2(self, batch: Bytes, payload: Bytes, start: int, end: int, /) -> int: ...
    def append(
        self, offset: int, timestamp_ms: int, timestamp_type: int, key: Bytes | None, value: Bytes | None, /
    ) -> None: ...
    def finish(self) -> tuple[Any, ...]:
        """(n, offsets, timestamps, ...): counts, Buffers and None validity bitmaps in a fixed layout."""
