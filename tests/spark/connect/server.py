"""A real Spark Connect server for the tests, from PySpark's own jars: ``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`` (what ``sbin/start-connect-server.sh``
runs, here in the foreground) on 127.0.0.1 and a free port.

    server = SparkConnectServer(directory).start()   # waits until its gRPC port accepts connections
    ... server.url ...                                # "sc://127.0.0.1:<port>"
    server.stop()

Its Python workers (the data source's planner workers on the driver, the tasks' workers) run this
Python, which has the project installed: the server registers the ``kafkalog`` format by itself
(the ``pyspark_kafkalog`` module), as a deployed server with the package installed does. It works
in ``directory`` (its warehouse) and logs to ``directory/server.log``; ``stop()`` SIGKILLs its
process tree and waits until every process is gone.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pyspark

from broker.embedded import free_port
from tests.processes import kill_tree
from tests.waiting import wait_for

START_TIMEOUT = 180  # a JVM and a SparkSession on a loaded machine
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class SparkConnectServer:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.port = free_port()
        self.log = self.directory / "server.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.pyspark.python": sys.executable,
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC",
            "spark.log.level": "WARN",
        }
        spark_submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")
        return [
            spark_submit,
            "--class",
            SERVER_CLASS,
            "--master",
            "local[2]",
            *(argument for key, value in settings.items() for argument in ("--conf", f"{key}={value}")),
        ]

    def start(self) -> "SparkConnectServer":
        self.directory.mkdir(parents=True, exist_ok=True)
        environment = {
            **os.environ,
            "PYSPARK_PYTHON": sys.executable,  # the Python that finds the server's data sources
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_CONNECT_MODE": "0",  # as sbin/start-connect-server.sh sets it
        }
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self.command(),
                cwd=self.directory,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_for(
                lambda: self.exited() or self.accepts_connections(),
                START_TIMEOUT,
                interval=0.5,
                what=f"the Spark Connect server listening on port {self.port}",
            )
            if self.exited():
                raise RuntimeError(f"the Spark Connect server exited while starting:\n{self.log_tail()}")
        except BaseException:
            self.stop()
            raise
        return self

    def accepts_connections(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop(self) -> None:
        if self.process is not None:
            kill_tree(self.process)
            self.process = None
