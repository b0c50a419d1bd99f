"""The real Broker serving from an event loop in a thread of the test process, on a free port.

For tests that must watch or hold what happens inside the broker (a spy on ``os.sendfile``, an
fsync held until the test lets it go); everything else starts a broker process.
"""

import asyncio
import contextlib
import threading
from collections.abc import Iterator

from broker.server import config as broker_config
from broker.server.broker import Broker

TIMEOUT = 30


@contextlib.contextmanager
def broker_in_this_process(log_dir, settings: dict | None = None) -> Iterator[int]:
    """Yields the port of a Broker on ``log_dir``, stopped cleanly at the end."""
    with running_in_this_process(log_dir, settings) as (_, port):
        yield port


@contextlib.contextmanager
def running_in_this_process(log_dir, settings: dict | None = None) -> Iterator[tuple[Broker, int]]:
    """Yields a started Broker on ``log_dir`` and its port, stopped cleanly at the end."""
    config = broker_config.build(settings or {}, log_dir=str(log_dir), port=0)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="broker-loop", daemon=True)
    thread.start()
    broker = Broker(config)

    def run(coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(TIMEOUT)

    try:
        [(_, port)] = run(broker.start())
        try:
            yield broker, port
        finally:
            run(broker.stop())
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(TIMEOUT)
        loop.close()
