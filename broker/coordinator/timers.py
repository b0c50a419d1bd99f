"""Deadlines by key, for a clock the caller drives: session expiry, rebalance and initial-delay timeouts.

Sans-I/O: nothing here sleeps. The owner asks ``next_deadline()`` to arm one timer of its event
loop and, when it fires, calls ``pop_due(now)`` until it gives None. Setting a key again moves its
deadline; a cancelled or moved deadline is skipped lazily, so each change costs O(log n).
"""

import heapq
import itertools
from collections.abc import Hashable
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)


class Deadlines(Generic[Key]):
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Key]] = []
        self._current: dict[Key, tuple[int, int]] = {}  # key -> (deadline, sequence) still valid
        self._sequence = itertools.count()

    def set(self, key: Key, deadline: int) -> None:
        entry = (deadline, next(self._sequence))
        self._current[key] = entry
        heapq.heappush(self._heap, (*entry, key))

    def cancel(self, key: Key) -> None:
        self._current.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._current

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: int) -> Key | None:
        """The key with the earliest deadline if that is ``now`` or earlier (removed), else None.

        One at a time: acting on one deadline may move or cancel the others."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now:
            return None
        _, _, key = heapq.heappop(self._heap)
        del self._current[key]
        return key

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap and self._current.get(heap[0][2]) != heap[0][:2]:
            heapq.heappop(heap)
