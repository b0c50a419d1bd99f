"""A real ZooKeeper server as a child process, for ``kafkalog cluster`` and the tests: the one inside
PySpark's jars, on a free port (or the one given), in a directory of its own
(``ZooKeeperServerMain PORT DIR TICK``, its admin web server off), its output in ``server.log``.

    server = ZooKeeperServer(directory).start()    # waits until it answers
    ... server.connect ...                          # "127.0.0.1:<port>"
    server.stop()

Its own kazoo clients log through a silent logger: kazoo's lines while it retries a server still
starting ("Connection dropped", "Failed connecting to Zookeeper") are expected, not news; a server
that does not start is one error.
"""

import logging
import os
import subprocess
import threading
import time
from os import PathLike

import pyspark
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

from broker.common.java import java_executable

from .embedded import free_port

START_TIMEOUT = 60
TICK_MS = 500  # sessions may then be as short as 2 ticks (1 s) and as long as 20 (10 s)
QUIET = logging.getLogger(f"{__name__}.kazoo")
QUIET.setLevel(logging.CRITICAL + 1)


class ZooKeeperServer:
    def __init__(self, directory: str | PathLike[str], port: int = 0) -> None:
        self.directory = str(directory)
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "ZooKeeperServer":
        java = java_executable()
        if java is None:
            raise RuntimeError(
                "ZooKeeper (from PySpark's jars) needs Java 17+, and no java was found on JAVA_HOME or PATH"
            )
        jars = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
        data = os.path.join(self.directory, "data")
        os.makedirs(self.directory, exist_ok=True)
        with open(os.path.join(self.directory, "server.log"), "ab") as output:
            self.process = process = subprocess.Popen(
                [
                    java,
                    "-Xmx128m",
                    "-Dzookeeper.admin.enableServer=false",
                    "-cp",
                    jars,
                    "org.apache.zookeeper.server.ZooKeeperServerMain",
                    str(self.port),
                    data,
                    str(TICK_MS),
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            client = KazooClient(hosts=self.connect, logger=QUIET)
            try:
                client.start(timeout=2)
                client.stop()
                return self
            except KazooTimeoutError:
                exited = process.poll()
                if exited is not None or time.monotonic() > deadline:
                    self.stop()
                    why = f"did not start within {START_TIMEOUT}s" if exited is None else f"exited with code {exited}"
                    raise RuntimeError(
                        f"ZooKeeper on port {self.port} {why}; see {self.directory}/server.log"
                    ) from None
            finally:
                client.close()

    def wait_until_gone(self, path: str, timeout: float) -> bool:
        """Whether the node ``path`` is gone (or was never there) within ``timeout`` seconds; watched.
        RuntimeError if the server does not answer."""
        client = KazooClient(hosts=self.connect, logger=QUIET)
        try:
            client.start(timeout=10)
        except KazooTimeoutError:
            client.close()
            raise RuntimeError(
                f"ZooKeeper at {self.connect} does not answer; see {self.directory}/server.log"
            ) from None
        try:
            deadline = time.monotonic() + timeout
            while True:
                changed = threading.Event()
                if client.exists(path, watch=lambda _event, changed=changed: changed.set()) is None:
                    return True
                if not changed.wait(max(0.0, deadline - time.monotonic())):
                    return False
        finally:
            client.stop()
            client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
