"""A real broker process for tests: started on a free port, stopped (or killed) at the end.

    broker = BrokerProcess(tmp_path / "log", {"num.partitions": "3"}).start()
    ... broker.bootstrap ...
    broker.kill(); broker.start()   # restarts on the same port
"""

import os
import selectors
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT = 60


class BrokerProcess:
    def __init__(self, log_dir, settings: dict | None = None, port: int = 0, extra_args=()):
        self.log_dir = str(log_dir)
        self.settings = dict(settings or {})
        self.port = port
        self.extra_args = list(extra_args)
        self.process = None
        self.stderr_path = self.log_dir.rstrip("/") + ".broker.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list:
        args = [sys.executable, "-m", "broker", "--log-dir", self.log_dir, "--port", str(self.port)]
        for key, value in self.settings.items():
            args += ["--set", f"{key}={value}"]
        return args + self.extra_args

    def start(self) -> "BrokerProcess":
        stderr = open(self.stderr_path, "ab")
        self.process = subprocess.Popen(self.command(), cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr)
        stderr.close()
        line = self._read_line(START_TIMEOUT)
        prefix = "kafkalog broker "
        if not line.startswith(prefix) or " listening on " not in line:
            raise RuntimeError(f"unexpected broker output {line!r}; stderr:\n{self.stderr_tail()}")
        self.port = int(line.rsplit(":", 1)[1])
        return self

    def _read_line(self, timeout: float) -> str:
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                self.kill()
                raise RuntimeError(f"broker did not start within {timeout}s; stderr:\n{self.stderr_tail()}")
        line = self.process.stdout.readline().decode().strip()
        if not line:
            code = self.process.wait(10)
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
        if not self.running:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self._close_pipes()

    def kill(self) -> None:
        if self.running:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self.process and self.process.stdout:
            self.process.stdout.close()

    def pid(self) -> int:
        return self.process.pid


def wait_for(condition, timeout: float = 30.0, interval: float = 0.05, what: str = "condition"):
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout}s")
        time.sleep(interval)
