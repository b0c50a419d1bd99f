"""A background thread that runs delayed and periodic log tasks (flushes, deletes, checkpoints).

Tasks run one at a time, in deadline order. A task that raises is logged and, if periodic, keeps
its schedule: a background failure never stops the others. A periodic task that keeps failing (a
retention check or a checkpoint on a full disk) is logged once when it starts failing and once
when it works again; a storage error (``OSError``, ``LogError``) in one line, without a traceback.
"""

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

from .errors import LogError

log = logging.getLogger(__name__)

Task = Callable[[], object]


class Scheduler:
    def __init__(self, name: str = "log-scheduler"):
        self._tasks: list[tuple[float, int, Task, float | None]] = []  # (due, sequence, task, period_ms)
        self._sequence = itertools.count()
        self._condition = threading.Condition()
        self._stopped = False
        self._failing: set[Task] = set()  # the periodic tasks whose last run failed
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def schedule(self, delay_ms: float, task: Task, period_ms: float | None = None) -> None:
        """Run ``task()`` after ``delay_ms``, then every ``period_ms`` if given."""
        with self._condition:
            if self._stopped:
                return
            due = time.monotonic() + delay_ms / 1000
            heapq.heappush(self._tasks, (due, next(self._sequence), task, period_ms))
            self._condition.notify()

    def shutdown(self, timeout: float = 30.0) -> None:
        """Stop running tasks (pending ones are dropped) and wait for the thread to end."""
        with self._condition:
            self._stopped = True
            self._tasks.clear()
            self._condition.notify()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._stopped and (not self._tasks or self._tasks[0][0] > time.monotonic()):
                    wait = self._tasks[0][0] - time.monotonic() if self._tasks else None
                    self._condition.wait(wait)
                if self._stopped:
                    return
                _, _, task, period_ms = heapq.heappop(self._tasks)
            try:
                task()
            except Exception as exc:
                self._failed(task, exc, period_ms)
            else:
                if task in self._failing:
                    self._failing.discard(task)
                    log.info("background task %s works again", _name(task))
            if period_ms is not None:
                self.schedule(period_ms, task, period_ms)

    def _failed(self, task: Task, exc: Exception, period_ms: float | None) -> None:
        if task in self._failing:
            return  # said when it began to fail
        if period_ms is not None:
            self._failing.add(task)
        again = f"; retried every {period_ms:g} ms, said again once it works" if period_ms is not None else ""
        if isinstance(exc, (OSError, LogError)):
            log.error("background task %s failed: %s%s", _name(task), exc, again)
        else:
            log.exception("background task %s failed%s", _name(task), again)


def _name(task: Task) -> str:
    return getattr(task, "__qualname__", None) or repr(task)
