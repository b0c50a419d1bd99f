"""``kafkalog cluster``: ZooKeeper and 3 brokers from one command, the bootstrap list printed, topics
spread over the brokers (``kafkalog topics describe`` shows each partition's leader and the
controller), and SIGTERM stopping every process cleanly; started again on the same directory it is
the same cluster with the same records."""

import json
import queue
import signal
import subprocess
import threading

import psutil
import pytest

from broker.client import KafkaClient
from spark_kafka_source.java import java_executable
from tests.cli.support import kafkalog
from tests.interop.common import KAFKALOG
from tests.processes import living

START_SECONDS = 120


def start_cluster(data_dir) -> tuple[subprocess.Popen, list[str]]:
    """The running command and its lines up to ``bootstrap.servers=...``."""
    process = subprocess.Popen([KAFKALOG, "cluster", "--brokers", "3", "--data-dir", str(data_dir)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in process.stdout], daemon=True).start()
    read = []
    try:
        while not (read and read[-1].startswith("bootstrap.servers=")):
            read.append(lines.get(timeout=START_SECONDS))
    except queue.Empty:
        process.send_signal(signal.SIGTERM)  # stops whatever it started
        process.wait(120)
        raise AssertionError(f"no bootstrap line within {START_SECONDS}s: {read}; {process.stderr.read()}") from None
    return process, read


def stop_cluster(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(120) == 0
    assert "kafkalog cluster: stopped" in process.stderr.read()


def broker_pids(data_dir) -> list[int]:
    """The broker processes with a log directory in ``data_dir`` still running."""
    pids = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "broker" in cmdline and any(arg.startswith(f"{data_dir}/broker-") for arg in cmdline):
            pids.append(process.pid)
    return [pid for pid in pids if living(pid)]


@pytest.fixture
def data_dir(tmp_path):
    if java_executable() is None:
        pytest.skip("no Java: the ZooKeeper server of PySpark's jars needs Java 17+")
    return tmp_path / "cluster"


def test_one_command_runs_a_cluster_that_spreads_topics_and_stops_cleanly(data_dir):
    process, lines = start_cluster(data_dir)
    try:
        assert lines[0].startswith("zookeeper.connect=127.0.0.1:")
        assert [line.split(":")[0] for line in lines[1:4]] == ["broker 1", "broker 2", "broker 3"]
        bootstrap = lines[-1].split("=", 1)[1]
        assert len(bootstrap.split(",")) == 3
        assert len(broker_pids(data_dir)) == 3
        created = kafkalog("topics", "create", "views", "--partitions", "6", "--bootstrap-server", bootstrap)
        assert created.returncode == 0, created.stderr
        described = kafkalog("topics", "describe", "views", "--format", "json", "--bootstrap-server", bootstrap)
        assert described.returncode == 0, described.stderr
        description = json.loads(described.stdout)
        assert description["controller"] in (1, 2, 3)
        assert {p["leader"] for p in description["partitions"]} == {1, 2, 3}
        plain = kafkalog("topics", "describe", "views", "--bootstrap-server", bootstrap).stdout.splitlines()
        assert plain[2] == f"controller: {description['controller']}"
        with KafkaClient(bootstrap) as client:
            client.produce("views", 4, [(b"k", b"kept")])
    finally:
        stop_cluster(process)
    assert broker_pids(data_dir) == []
    process, lines = start_cluster(data_dir)  # the same cluster again, with its topic and record
    try:
        with KafkaClient(lines[-1].split("=", 1)[1]) as client:
            assert client.list_offsets({("views", 4): -1})[("views", 4)][0] == 1
    finally:
        stop_cluster(process)
