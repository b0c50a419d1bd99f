"""A real Spark standalone cluster for the tests, from PySpark's own classes: one master and two
workers, each a separate JVM started with ``<pyspark>/bin/spark-class`` on 127.0.0.1 and free ports.

    with SparkStandalone(directory, workers=2) as spark_cluster:   # waits until every worker registered
        ... spark_cluster.master_url ...                            # "spark://127.0.0.1:<port>"
        ... spark_cluster.environment() ...                         # for a driver in a subprocess

Each worker offers one core and 1 GB, works in ``worker-<n>/`` under ``directory`` (an
executor's working directory is ``worker-<n>/<app id>/<executor id>``) and runs the executors'
Python workers with this process's Python (``PYSPARK_PYTHON``), which has the project installed:
the machines of a real cluster need it installed too (docs/loads.md, "Running on a Spark cluster").
Logs: ``master.log``, ``worker-<n>.log``. ``stop()`` SIGKILLs each daemon's process tree (the
workers' executors and their Python workers with it) and waits until every process is gone.
"""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pyspark

from broker.embedded import free_port
from tests.processes import kill_tree
from tests.waiting import wait_for

START_TIMEOUT = 120
DAEMON_MEMORY = "256m"  # the master's and the workers' own heaps


class SparkStandalone:
    def __init__(self, directory, workers: int = 2):
        self.directory = Path(directory)
        self.workers = workers
        self.port, self.webui_port = free_port(), free_port()
        self.processes: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def worker_dir(self, number: int) -> Path:
        return self.directory / f"worker-{number}"

    def environment(self) -> dict:
        """The daemons' environment (and the base of a driver's): everything on 127.0.0.1, executors'
        Python workers running this Python."""
        return {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1",
        }

    def state(self) -> dict:
        """The master's JSON status: its workers, its running and completed applications."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json", timeout=10) as response:
            return json.load(response)

    def alive_workers(self) -> list[dict]:
        try:
            return [w for w in self.state()["workers"] if w["state"] == "ALIVE"]
        except (OSError, urllib.error.URLError, ValueError):
            return []

    def _spawn(self, name: str, *arguments: str) -> None:
        spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
        with open(self.directory / f"{name}.log", "ab") as log:
            self.processes.append(
                subprocess.Popen(
                    [spark_class, *arguments],
                    env=self.environment(),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def start(self) -> "SparkStandalone":
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            self._spawn(
                "master",
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--webui-port",
                str(self.webui_port),
            )
            for number in range(1, self.workers + 1):
                self.worker_dir(number).mkdir(exist_ok=True)
                self._spawn(
                    f"worker-{number}",
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--host",
                    "127.0.0.1",
                    "--webui-port",
                    "0",
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--work-dir",
                    str(self.worker_dir(number)),
                )
            wait_for(
                lambda: len(self.alive_workers()) == self.workers or self._exited(),
                START_TIMEOUT,
                interval=0.5,
                what=f"{self.workers} workers registered with the master (see {self.directory})",
            )
            if self._exited():
                raise RuntimeError(f"a Spark daemon exited while starting: see the logs in {self.directory}")
        except BaseException:
            self.stop()
            raise
        return self

    def _exited(self) -> bool:
        return any(process.poll() is not None for process in self.processes)

    def stop(self) -> None:
        """Kill the workers (with their executors), then the master; wait until all are gone."""
        while self.processes:
            kill_tree(self.processes.pop())

    def __enter__(self) -> "SparkStandalone":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
