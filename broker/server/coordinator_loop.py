"""A sans-I/O coordinator on the event loop: calls into it, and the one loop timer for its next deadline.

The group and the transaction coordinators each have a runtime built on this. Handlers make a
direct call with ``call`` or start a waiting one with ``wait`` (an asyncio future the coordinator's
``respond``, the call's last argument, fills); after either the timer is armed for the
coordinator's ``next_deadline()``, and when it fires the coordinator's ``tick()`` runs.
"""

import asyncio
from typing import Any, Protocol

from broker.common.clock import wall_clock_ms


class Ticking(Protocol):
    def next_deadline(self) -> int | None: ...

    def tick(self) -> None: ...


class CoordinatorLoop:
    coordinator: Any  # a Ticking coordinator, set by the runtime

    def __init__(self) -> None:
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for: int | None = None  # the deadline the timer is set for

    def call(self, function, *args):
        """A coordinator call that answers at once."""
        try:
            return function(*args)
        finally:
            self.arm()

    async def wait(self, function, *args):
        """A coordinator call that answers through its last argument, ``respond``, maybe later."""
        future = asyncio.get_running_loop().create_future()

        def respond(*value) -> None:
            if not future.done():
                future.set_result(value[0] if len(value) == 1 else value)

        self.call(function, *args, respond)
        return await future

    def arm(self) -> None:
        """One loop timer, for the coordinator's next deadline."""
        deadline = self.coordinator.next_deadline()
        if self._timer is not None:
            if deadline == self._armed_for:
                return
            self._timer.cancel()
            self._timer = None
        self._armed_for = deadline
        if deadline is not None:
            delay = max(0, deadline - wall_clock_ms() + 1) / 1000  # +1: a loop timer may fire up to 1 ms early
            self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self.call(self.coordinator.tick)

    def stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
