"""``kafkalog broker``: configuration checks, the ready line, clean shutdown, the directory lock, no
connection accepted before the broker is ready."""

import os
import signal
import socket
import subprocess
import sys
import threading

import pytest
from confluent_kafka.admin import AdminClient

from broker.cluster.local_metadata import LocalMetadata
from broker.embedded import EmbeddedBroker
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.server import broker as broker_module

from ..waiting import wait_for
from .in_process import broker_in_this_process
from .wire import connect


def run_broker(*args, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", "num.partitons=3"], "num.partitons: unknown or unsupported broker setting"),
        (["--set", "num.network.threads=3"], "num.network.threads: unknown or unsupported broker setting"),
        (["--set", "num.partitions=three"], "num.partitions: 'three' is not an integer"),
        (["--set", "num.partitions=0"], "num.partitions: 0 is out of range, it must be between 1 and 10000"),
        (["--set", "num.io.threads=0"], "num.io.threads: 0 is out of range, it must be between 1 and 256"),
        (
            ["--set", "num.recovery.threads.per.data.dir=0"],
            "num.recovery.threads.per.data.dir: 0 is out of range, it must be between 1 and 256",
        ),
        (["--set", "fetch.max.bytes=100"], "fetch.max.bytes: 100 is out of range, it must be between 1024 and"),
        (["--set", "queued.max.request.bytes=-2"], "queued.max.request.bytes: -2 is out of range"),
        (["--set", "log.segment.bytes=10"], "log.segment.bytes: 10 is out of range"),
        (["--set", "auto.create.topics.enable=yes"], "auto.create.topics.enable: 'yes' is not true or false"),
        (["--set", "log.message.timestamp.type=Wallclock"], "log.message.timestamp.type: 'Wallclock' is not one of"),
        (
            ["--set", "log.cleanup.policy=compact,shred"],
            "log.cleanup.policy: 'compact,shred' is not a list of delete and",
        ),
        (["--set", "log.cleaner.threads=0"], "log.cleaner.threads: 0 is out of range, it must be between 1 and 64"),
        (["--set", "log.cleaner.enable=maybe"], "log.cleaner.enable: 'maybe' is not true or false"),
        (
            ["--set", "default.replication.factor=40000"],
            "default.replication.factor: replication factor 40000 is above Kafka's limit of 32767",
        ),
        (
            ["--set", "transaction.state.log.replication.factor=40000"],
            "transaction.state.log.replication.factor: replication factor 40000 is above Kafka's limit of 32767",
        ),
        (
            ["--set", "transaction.max.timeout.ms=0"],
            "transaction.max.timeout.ms: 0 is out of range",
        ),
        (["--set", "advertised.listeners=SSL://h:9093"], "advertised.listeners: 'SSL://h:9093' names no listener"),
        (["--set", "advertised.listeners=h:9093"], "advertised.listeners: 'h:9093' is not NAME://host:port"),
        (["--set", "listeners=EXTERNAL://:0"], "listeners: listener EXTERNAL has no security protocol in listener."),
        (
            ["--set", "listeners=A://:0", "--set", "listener.security.protocol.map=A:TLS"],
            "listener.security.protocol.map: 'A:TLS' is not NAME:PROTOCOL",
        ),
        (
            ["--set", "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0"],
            "listeners: listener name PLAINTEXT appears twice",
        ),
        (["--set", "log.dirs=/a,/b"], "log.dirs: only one log directory is supported"),
        (["--set", "nonsense"], "--set 'nonsense': expected key=value"),
        (["--host", "0.0.0.0"], "advertised.listeners: required for listener PLAINTEXT, which binds to all interfaces"),
        (["--set", "advertised.listeners=PLAINTEXT://h:99999"], "advertised.listeners: port '99999' is not a number"),
        (["--set", "advertised.listeners=PLAINTEXT://h:x9"], "advertised.listeners: port 'x9' is not a number"),
        (["--set", "advertised.listeners=PLAINTEXT://:9092"], "advertised.listeners: 'PLAINTEXT://:9092' has no host"),
        (
            ["--set", "advertised.listeners=PLAINTEXT://0.0.0.0:9092"],
            "advertised.listeners: 'PLAINTEXT://0.0.0.0:9092' has no host",
        ),
        (["--set", "advertised.listeners=PLAINTEXT://h:0"], "advertised.listeners: 'PLAINTEXT://h:0' has port 0"),
        (
            ["--set", "advertised.listeners=PLAINTEXT://[::1:9092"],
            "advertised.listeners: 'PLAINTEXT://[::1:9092' is not",
        ),
        (["--set", "listeners=PLAINTEXT://127.0.0.1:99999"], "listeners: port '99999' is not a number"),
        (["--set", "listeners=PLAINTEXT://127.0.0.1:-1"], "listeners: port '-1' is not a number"),
        (["--set", "listeners=PLAINTEXT://127.0.0.1:http"], "listeners: port 'http' is not a number"),
        (["--port", "70000"], "--port: port '70000' is not a number between 0 and 65535"),
        (["--port", "-1"], "--port: port '-1' is not a number between 0 and 65535"),
        (["--broker-id", "-1"], "--broker-id: -1 is out of range, it must be between 0 and 2147483647"),
        (["--set", "broker.id=-1"], "broker.id: -1 is out of range, it must be between 0 and 2147483647"),
        (["--set", "zookeeper.connect=zk1"], "zookeeper.connect: 'zk1' is not HOST:PORT[,HOST:PORT...][/chroot]"),
    ],
)
def test_bad_settings_are_refused_at_start_naming_the_key(tmp_path, args, message):
    result = run_broker("--log-dir", str(tmp_path / "log"), "--port", "0", *args)
    assert result.returncode == 1
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_a_missing_log_dir_or_config_file_is_a_clear_error(tmp_path):
    result = run_broker("--port", "0")
    assert result.returncode == 1 and "no log directory given (use --log-dir DIR)" in result.stderr
    result = run_broker("--log-dir", str(tmp_path), "--config", str(tmp_path / "missing.properties"))
    assert result.returncode == 1 and "missing.properties: No such file or directory" in result.stderr


def test_ready_line_then_sigterm_is_a_clean_shutdown(tmp_path):
    broker = EmbeddedBroker(tmp_path / "log").start()
    assert broker.port > 0
    broker.process.send_signal(signal.SIGTERM)
    assert broker.process.wait(60) == 0
    assert broker.process.stdout.read() == b""  # the ready line was the only thing on stdout
    broker.process.stdout.close()
    files = os.listdir(tmp_path / "log")
    assert {
        ".kafka_cleanshutdown",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "meta.properties",
    } <= set(files)
    assert "stopped cleanly" in broker.stderr_tail()


def test_a_second_broker_on_the_same_directory_is_refused(tmp_path, start_broker):
    first = start_broker(log_dir=tmp_path / "shared")
    result = run_broker("--log-dir", str(tmp_path / "shared"), "--port", "0")
    assert result.returncode == 1
    assert f"is in use by another process (pid {first.pid()})" in result.stderr
    assert first.running


def test_a_properties_file_and_set_overrides(tmp_path, start_broker):
    properties = tmp_path / "server.properties"
    properties.write_text(
        "# a Kafka-style file\nnum.partitions = 2\nlog.retention.hours: 48\n"
        "auto.create.topics.enable=true\nlog.segment.bytes=\\\n  1048576\n"
    )
    broker = start_broker({"num.partitions": "3"}, extra_args=["--config", str(properties)])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    metadata = admin.list_topics(topic="auto-created", timeout=20)
    assert len(metadata.topics["auto-created"].partitions) == 3  # --set wins over the file


def test_advertised_listeners_are_what_clients_are_told(tmp_path, start_broker):
    broker = start_broker({"advertised.listeners": "PLAINTEXT://localhost:1234"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    metadata = admin.list_topics(timeout=20)
    assert [(b.id, b.host, b.port) for b in metadata.brokers.values()] == [(0, "localhost", 1234)]
    assert metadata.controller_id == 0


def test_python_dash_m_and_the_console_script_are_the_same_command(tmp_path):
    kafkalog = os.path.join(os.path.dirname(sys.executable), "kafkalog")
    help_text = subprocess.run([kafkalog, "broker", "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "kafkalog broker <id> listening on <host>:<port>" in help_text and "log.retention.ms" in help_text
    assert run_broker("--help").stdout == help_text


def test_topics_and_their_configs_survive_a_restart(tmp_path, start_broker):
    from confluent_kafka.admin import NewTopic

    broker = start_broker(log_dir=tmp_path / "log")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic("kept", 5, 1, config={"retention.ms": "3600000"})])
    futures["kept"].result(20)
    assert broker.stop() == 0
    restarted = start_broker(log_dir=tmp_path / "log")
    admin = AdminClient({"bootstrap.servers": restarted.bootstrap})
    assert len(admin.list_topics(timeout=20).topics["kept"].partitions) == 5
    import json

    stored = json.loads((tmp_path / "log" / "topics.json").read_text())
    assert stored["topics"]["kept"] == {"partitions": 5, "configs": {"retention.ms": "3600000"}}


def test_sigterm_answers_the_requests_in_flight_before_exiting(tmp_path):
    from broker.protocol.apis import ApiKey

    from .wire import connect_to, fetch_body

    broker = EmbeddedBroker(tmp_path / "log", {"num.partitions": "1"}).start()
    with connect_to(broker, timeout=30) as client:
        client.call(ApiKey.METADATA, 1, {"topics": [{"name": "waiting"}]})
        # A fetch parked for ten minutes: only the shutdown can answer it within recv's 15 s bound.
        correlation_id = client.send_request(ApiKey.FETCH, 11, fetch_body([("waiting", 0, 0)], max_wait_ms=600_000))
        wait_for(client.sent_and_read_by_peer, what="the broker reading the fetch")  # parked, long-polling
        broker.process.send_signal(signal.SIGTERM)
        response = client.recv_response(ApiKey.FETCH, 11, correlation_id, timeout=15)
        assert response["responses"][0]["partitions"][0]["error_code"] == 0
        assert client.closed_by_peer(timeout=15)
    assert broker.process.wait(30) == 0
    broker.process.stdout.close()
    assert (tmp_path / "log" / ".kafka_cleanshutdown").exists()


def test_a_client_connecting_before_the_broker_is_ready_is_refused_then_served(tmp_path, monkeypatch):
    """The listeners are bound early (their ports are registered), but accept only once the broker
    is ready: the start-up is held at its last step (publishing the cluster) while a client connects."""
    bound, entered, release, ready, done = (
        [],
        threading.Event(),
        threading.Event(),
        threading.Event(),
        threading.Event(),
    )
    real_bind, real_start = broker_module._bind, LocalMetadata.start

    async def bind(listener, on_connection):
        bound.append(await real_bind(listener, on_connection))
        return bound[-1]

    def held_start(metadata):
        entered.set()
        release.wait(30)
        real_start(metadata)

    monkeypatch.setattr(broker_module, "_bind", bind)
    monkeypatch.setattr(LocalMetadata, "start", held_start)

    def serve():
        with broker_in_this_process(tmp_path / "log"):
            ready.set()
            done.wait(30)

    server = threading.Thread(target=serve)
    server.start()
    try:
        assert entered.wait(30), "the broker never reached its last start-up step"
        port = bound[0].sockets[0].getsockname()[1]
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=10)
        release.set()
        assert ready.wait(30), "the broker did not finish starting"
        with connect("127.0.0.1", port) as client:
            assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
    finally:
        release.set()
        done.set()
        server.join(30)
