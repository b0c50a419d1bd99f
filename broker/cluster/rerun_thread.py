"""A thread that runs one piece of work again whenever it is woken: how the controller and each
broker's metadata reader follow ZooKeeper. Wakes that come while the work runs make one more run,
not one each; a run that fails with one of the ``retried`` errors (the session is in trouble, a
node changed under a transaction) is logged and tried again after ``RETRY_SECONDS``."""

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

RETRY_SECONDS = 1.0


class RerunThread:
    def __init__(self, name: str, work: Callable[[], None], retried: tuple[type[Exception], ...]):
        self._work = work
        self._retried = retried
        self._woken = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self, event: object = None) -> None:
        """Run the work again (also a kazoo watch callback: ``event`` is the watched event)."""
        self._woken.set()

    def stop(self) -> None:
        self._stopped = True
        self._woken.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def _run(self) -> None:
        while True:
            self._woken.wait()
            if self._stopped:
                return
            self._woken.clear()
            try:
                self._work()
            except self._retried as exc:
                log.warning("%s: cannot go on with ZooKeeper now, trying again: %r", self._thread.name, exc)
                self._woken.wait(RETRY_SECONDS)
                self._woken.set()
