"""``kafkalog cluster``: ZooKeeper and 3 brokers from one command, the bootstrap list printed, topics
spread over the brokers (``kafkalog topics describe`` shows each partition's leader and the
controller), and SIGTERM stopping every process cleanly; started again on the same directory it is
the same cluster with the same records. It prints none of kazoo's retry lines while ZooKeeper
starts; a broker that dies is reaped and named with the command that starts it again, which does."""

import json
import os
import queue
import signal
import socket
import subprocess
import threading

import psutil
import pytest

from broker.client import KafkaClient
from broker.common.java import java_executable
from tests.cli.support import kafkalog
from tests.interop.common import KAFKALOG
from tests.processes import living
from tests.waiting import wait_for

START_SECONDS = 120


def start_cluster(data_dir) -> tuple[subprocess.Popen, list[str]]:
    """The running command and its lines up to ``bootstrap.servers=...``."""
    process = subprocess.Popen(
        [KAFKALOG, "cluster", "--brokers", "3", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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


def broker_pid(data_dir, broker_id: int) -> int:
    [pid] = [pid for pid in broker_pids(data_dir) if f"{data_dir}/broker-{broker_id}" in psutil.Process(pid).cmdline()]
    return pid


def test_a_dead_broker_is_named_reaped_and_restarted_by_restart_broker(data_dir):
    process, lines = start_cluster(data_dir)
    errors = []
    threading.Thread(target=lambda: [errors.append(line.rstrip("\n")) for line in process.stderr], daemon=True).start()
    try:
        bootstrap = lines[-1].split("=", 1)[1]
        address = lines[2].split()[2]  # "broker 2: 127.0.0.1:<port> (log dir ...)"
        again = kafkalog("cluster", "--data-dir", data_dir)
        assert (again.returncode, again.stderr) == (
            1,
            f"kafkalog cluster: a kafkalog cluster already runs on {data_dir} (pid {process.pid})\n",
        )
        running = kafkalog("cluster", "restart-broker", "2", "--data-dir", data_dir)
        assert running.returncode == 1 and running.stderr.startswith(
            "kafkalog cluster restart-broker: broker 2 not restarted: it is running (pid "
        ), running.stderr
        victim = broker_pid(data_dir, 2)
        os.kill(victim, signal.SIGKILL)
        notice = wait_for(
            lambda: [line for line in errors if "broker 2 died" in line],
            timeout=30,
            what="the notice of the dead broker",
        )
        assert notice == [
            f"kafkalog cluster: broker 2 died (killed by signal 9; its log: "
            f"{data_dir}/broker-2.broker.log); start it again with: kafkalog cluster restart-broker 2 "
            f"--data-dir {data_dir}"
        ]
        assert not psutil.pid_exists(victim)  # reaped: no zombie
        restarted = kafkalog("cluster", "restart-broker", "2", "--data-dir", data_dir)
        assert (restarted.returncode, restarted.stdout) == (0, f"broker 2 restarted on {address}\n"), restarted.stderr
        with KafkaClient(bootstrap) as client:
            wait_for(lambda: 2 in client.metadata([]).brokers, timeout=30, what="broker 2 back in the metadata")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(120) == 0
    assert broker_pids(data_dir) == []
    assert not any("Connection dropped" in line or "Failed connecting" in line for line in errors), errors
    assert errors[-2:] == ["kafkalog cluster: broker 2 restarted on " + address, "kafkalog cluster: stopped"], errors
    gone = kafkalog("cluster", "restart-broker", "2", "--data-dir", data_dir)
    assert gone.returncode == 1 and gone.stderr == (
        f"kafkalog cluster restart-broker: no kafkalog cluster runs on "
        f"{data_dir} (start one: kafkalog cluster --data-dir {data_dir})\n"
    )


def test_a_cluster_that_cannot_start_says_why_in_one_line(data_dir):
    with socket.socket() as taken:  # ZooKeeper's port is someone else's
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = kafkalog("cluster", "--data-dir", data_dir, "--zookeeper-port", port)
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr.startswith(f"kafkalog cluster: ZooKeeper on port {port} exited with code ")
    assert done.stderr.endswith(f"; see {data_dir}/zookeeper/server.log\n") and done.stderr.count("\n") == 1
