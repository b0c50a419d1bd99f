"""A broker run as a child process on a free port: for the demo, notebooks, benchmarks and tests.

    with EmbeddedBroker(settings={"num.partitions": "4"}) as broker:   # in a temporary directory
        ... broker.bootstrap ...                                      # "127.0.0.1:<port>"

    broker = EmbeddedBroker(log_dir, port=0).start()
    broker.kill(); broker.start()   # SIGKILL, then restart on the same port and log directory
    broker.stop()                   # SIGTERM: a clean shutdown; returns the exit code

It runs ``python -m broker`` with this interpreter, learns the ports from the one "listening on"
line (``ports``, in the order of ``listeners``; ``--port`` is the first one's), and keeps the
broker's stderr in ``<log_dir>.broker.log``.
"""

import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from os import PathLike
from pathlib import Path

START_TIMEOUT = 60


def free_port() -> int:
    """A TCP port of 127.0.0.1 free now, for a child process that cannot be told to take port 0."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedBroker:
    def __init__(
        self,
        log_dir: str | PathLike[str] | None = None,
        settings: dict[str, str] | None = None,
        port: int = 0,
        extra_args: Iterable[str] = (),
    ) -> None:
        self.temporary_dir: str | None = None
        if log_dir is None:
            self.temporary_dir = tempfile.mkdtemp(prefix="kafkalog-broker-")
            self.log_dir = str(Path(self.temporary_dir) / "log")
        else:
            self.log_dir = str(log_dir)
        self.settings = dict(settings or {})
        self.port = port
        self.ports: list[int]  # learnt by start()
        self.extra_args = list(extra_args)
        self.process: subprocess.Popen[bytes] | None = None
        self.stderr_path = self.log_dir.rstrip("/") + ".broker.log"

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self.temporary_dir:
            shutil.rmtree(self.temporary_dir, ignore_errors=True)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def bootstrap_of(self, listener_index: int) -> str:
        """The address of the broker's listener number ``listener_index`` (in ``listeners`` order)."""
        return f"127.0.0.1:{self.ports[listener_index]}"

    def command(self) -> list[str]:
        args = [sys.executable, "-m", "broker", "--log-dir", self.log_dir, "--port", str(self.port)]
        for key, value in self.settings.items():
            args += ["--set", f"{key}={value}"]
        return args + self.extra_args

    def start(self) -> "EmbeddedBroker":
        stderr = open(self.stderr_path, "ab")
        self.process = subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=stderr)
        stderr.close()
        line = self._read_line(self.process, START_TIMEOUT)
        prefix = "kafkalog broker "
        if not line.startswith(prefix) or " listening on " not in line:
            raise RuntimeError(f"unexpected broker output {line!r}; stderr:\n{self.stderr_tail()}")
        addresses = line.split(" listening on ", 1)[1].split(", ")
        self.ports = [int(address.split(" (")[0].rsplit(":", 1)[1]) for address in addresses]
        self.port = self.ports[0]
        return self

    def _read_line(self, process: "subprocess.Popen[bytes]", timeout: float) -> str:
        assert process.stdout is not None  # started with stdout=PIPE
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                self.kill()
                raise RuntimeError(f"broker did not start within {timeout}s; stderr:\n{self.stderr_tail()}")
        line = process.stdout.readline().decode().strip()
        if not line:
            code = process.wait(10)
            raise RuntimeError(f"broker exited with {code}; stderr:\n{self.stderr_tail()}")
        return line

    def stderr_tail(self, lines: int = 30) -> str:
        try:
            with open(self.stderr_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except FileNotFoundError:
            return ""

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, then wait for the exit code."""
        process = self.process
        if process is None or process.poll() is not None:
            return process.returncode if process else 0
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        finally:
            self._close_pipes()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self.process and self.process.stdout:
            self.process.stdout.close()

    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the broker was never started")
        return self.process.pid
