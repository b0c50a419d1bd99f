"""Cluster mode's registry against a real ZooKeeper server and real broker processes: the cluster
id and the broker's ephemeral registration with Kafka's JSON, read back with kazoo; a duplicate
broker id and a log directory of another cluster refused at start in one line; a running broker
whose session expired registering, standing for controller and leading its partitions again with
their records; ZooKeeper unreachable."""

import json
import signal
import socket
import subprocess
import sys

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.exceptions import NoNodeError
from kazoo.security import make_acl

from broker.client import KafkaClient
from broker.embedded import EmbeddedBroker
from tests.cli.support import consume_records, produce_records
from tests.waiting import wait_for

REGISTRATION_KEYS = {
    "listener_security_protocol_map",
    "endpoints",
    "rack",
    "jmx_port",
    "host",
    "timestamp",
    "port",
    "version",
}


def chroot(zookeeper: str) -> str:
    return zookeeper[zookeeper.index("/") :]


def registration(kazoo, zookeeper: str, broker_id: int):
    """(JSON, session id of the owner) of ``/brokers/ids/<id>``, or None when it is not registered."""
    path = f"{chroot(zookeeper)}/brokers/ids/{broker_id}"
    try:
        data, stat = kazoo.get(path)
    except NoNodeError:  # one read: the ephemeral node can expire between an exists() and a get()
        return None
    return json.loads(data), stat.ephemeralOwner


def run_broker(*args, timeout=90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "broker", "--port", "0", *args], capture_output=True, text=True, timeout=timeout
    )


def last_line(result: subprocess.CompletedProcess) -> str:
    return result.stderr.strip().splitlines()[-1]


def test_a_broker_registers_with_kafkas_json_and_its_cluster_id_and_leaves_on_stop(tmp_path, zookeeper, kazoo):
    with EmbeddedBroker(tmp_path / "log", {"zookeeper.connect": zookeeper, "broker.id": "3"}) as broker:
        cluster = json.loads(kazoo.get(f"{chroot(zookeeper)}/cluster/id")[0])
        assert cluster["version"] == "1" and len(cluster["id"]) == 22
        assert f"cluster.id={cluster['id']}\n" in (tmp_path / "log" / "meta.properties").read_text()
        found, owner = registration(kazoo, zookeeper, 3)
        assert set(found) == REGISTRATION_KEYS and owner != 0  # ephemeral: owned by the broker's session
        assert (found["host"], found["port"], found["endpoints"]) == (
            "127.0.0.1",
            broker.port,
            [f"PLAINTEXT://127.0.0.1:{broker.port}"],
        )
        assert (found["listener_security_protocol_map"], found["version"], found["jmx_port"], found["rack"]) == (
            {"PLAINTEXT": "PLAINTEXT"},
            5,
            -1,
            None,
        )
        assert found["timestamp"].isdigit()
        assert broker.stop() == 0
        assert registration(kazoo, zookeeper, 3) is None  # gone with the session, not after its timeout


def test_a_broker_registers_one_endpoint_per_listener_and_metadata_answers_the_listeners_own(
    tmp_path, zookeeper, kazoo
):
    settings = {
        "zookeeper.connect": zookeeper,
        "broker.id": "4",
        "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0,REPLICATION://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,REPLICATION:PLAINTEXT",
        "advertised.listeners": "REPLICATION://replica.example:19094",
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": (
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="secret";'
        ),
    }
    with EmbeddedBroker(tmp_path / "log", settings) as broker:
        plaintext, internal, _ = broker.ports
        found, _ = registration(kazoo, zookeeper, 4)
        assert found["endpoints"] == [
            f"PLAINTEXT://127.0.0.1:{plaintext}",
            f"INTERNAL://127.0.0.1:{internal}",
            "REPLICATION://replica.example:19094",
        ]
        assert found["listener_security_protocol_map"] == {
            "PLAINTEXT": "PLAINTEXT",
            "INTERNAL": "SASL_PLAINTEXT",
            "REPLICATION": "PLAINTEXT",
        }
        assert (found["host"], found["port"]) == ("127.0.0.1", plaintext)  # the first PLAINTEXT listener's
        with KafkaClient(broker.bootstrap_of(0)) as client:
            assert [(b.host, b.port) for b in client.metadata().brokers.values()] == [("127.0.0.1", plaintext)]
        with KafkaClient(broker.bootstrap_of(2)) as client:
            assert [(b.host, b.port) for b in client.metadata().brokers.values()] == [("replica.example", 19094)]


def test_a_second_broker_with_the_same_id_is_refused_and_the_first_stays(tmp_path, zookeeper, kazoo):
    with EmbeddedBroker(tmp_path / "first", {"zookeeper.connect": zookeeper, "broker.id": "1"}) as first:
        before = registration(kazoo, zookeeper, 1)
        result = run_broker(
            "--log-dir", str(tmp_path / "second"), "--broker-id", "1", "--set", f"zookeeper.connect={zookeeper}"
        )
        assert result.returncode == 1 and result.stdout == ""
        assert last_line(result) == (
            f"kafkalog broker: broker id 1 is already registered in ZooKeeper at {zookeeper} "
            f"({chroot(zookeeper)}/brokers/ids/1, by 127.0.0.1:{first.port}): another broker runs with this id; "
            f"give this one another --broker-id"
        )
        assert registration(kazoo, zookeeper, 1) == before


def test_a_log_directory_of_another_cluster_is_refused(tmp_path, zookeeper, kazoo):
    with EmbeddedBroker(tmp_path / "log", {"zookeeper.connect": zookeeper}):
        first_cluster = json.loads(kazoo.get(f"{chroot(zookeeper)}/cluster/id")[0])["id"]
    other = zookeeper + "-other"  # another chroot: another cluster
    result = run_broker("--log-dir", str(tmp_path / "log"), "--set", f"zookeeper.connect={other}")
    assert result.returncode == 1
    other_cluster = json.loads(kazoo.get(f"{chroot(other)}/cluster/id")[0])["id"]
    assert f"belongs to cluster {first_cluster}, not to cluster {other_cluster}" in last_line(result)
    assert "zookeeper.connect" in last_line(result)
    assert registration(kazoo, other, 0) is None


def partition_state(kazoo, zookeeper: str, topic: str, partition: int) -> dict:
    return json.loads(kazoo.get(f"{chroot(zookeeper)}/brokers/topics/{topic}/partitions/{partition}/state")[0])


def test_a_running_broker_whose_session_expired_registers_stands_and_leads_its_partitions_again(
    tmp_path, zookeeper, kazoo
):
    """Broker 1 is frozen (SIGSTOP: no heartbeats) until ZooKeeper expires its session for real, then
    thawed: it registers again with a new session; the controller (broker 2, or broker 1's successor)
    took its partitions' leadership away meanwhile and gives it back at a higher leader epoch; broker
    1 serves the same records; and it stands in elections again (it becomes controller when broker
    2 dies)."""
    settings = {"zookeeper.connect": zookeeper, "zookeeper.session.timeout.ms": "2000"}
    frozen = EmbeddedBroker(tmp_path / "log1", {**settings, "broker.id": "1"})
    other = EmbeddedBroker(tmp_path / "log2", {**settings, "broker.id": "2"})
    try:
        frozen.start()
        other.start()
        admin = AdminClient({"bootstrap.servers": frozen.bootstrap})
        admin.create_topics([NewTopic("kept", 2, replica_assignment=[[1], [1]])])["kept"].result(timeout=60)
        records = [(p, f"k{i}".encode(), f"v{p}-{i}".encode(), 1_700_000_000_000 + i) for p in (0, 1) for i in range(3)]
        produce_records(frozen.bootstrap, "kept", records)
        _, first_session = registration(kazoo, zookeeper, 1)
        frozen.process.send_signal(signal.SIGSTOP)
        try:
            wait_for(lambda: registration(kazoo, zookeeper, 1) is None, timeout=60, what="the session to expire")
            away = wait_for(
                lambda: (
                    (s := [partition_state(kazoo, zookeeper, "kept", p) for p in (0, 1)])
                    and all(state["leader"] == -1 for state in s)
                    and s
                ),
                timeout=60,
                interval=0.2,
                what="the controller to take the frozen broker's leadership away",
            )
            assert controller(kazoo, zookeeper)[0] == 2
        finally:
            frozen.process.send_signal(signal.SIGCONT)
        again = wait_for(lambda: registration(kazoo, zookeeper, 1), timeout=60, what="the broker to register again")
        assert again[1] != first_session and again[0]["port"] == frozen.port
        wait_for(
            lambda: "registered broker 1 again after a new ZooKeeper session" in frozen.stderr_tail(100),
            timeout=30,
            what="the broker's log line",
        )  # written just after the node
        states = wait_for(
            lambda: (
                (s := [partition_state(kazoo, zookeeper, "kept", p) for p in (0, 1)])
                and all(state["leader"] == 1 for state in s)
                and s
            ),
            timeout=60,
            interval=0.2,
            what="the broker to lead its partitions again",
        )
        assert all(back["leader_epoch"] > gone["leader_epoch"] > 0 for back, gone in zip(states, away, strict=True))
        found = consume_records(frozen.bootstrap, "kept", [0, 1], len(records))
        assert [(r.partition, r.key, r.value, r.timestamp) for r in found] == records
        epoch = controller(kazoo, zookeeper)[1]
        other.kill()
        wait_for(
            lambda: controller(kazoo, zookeeper) == (1, epoch + 1),
            timeout=60,
            what="the broker to stand for controller again, and win once broker 2 is gone",
        )
    finally:
        frozen.kill()
        other.kill()


def test_a_chroot_the_broker_may_not_write_to_is_one_line(tmp_path, zookeeper, kazoo):
    kazoo.create(chroot(zookeeper), acl=[make_acl("world", "anyone", read=True)])  # read-only for everyone
    result = run_broker("--log-dir", str(tmp_path / "log"), "--set", f"zookeeper.connect={zookeeper}")
    assert result.returncode == 1
    assert last_line(result) == (
        f"kafkalog broker: cannot read or create the cluster id in ZooKeeper at {zookeeper}: NoAuthError()"
    )
    assert not (tmp_path / "log").exists()


def test_an_unreachable_zookeeper_is_one_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens there once the socket is closed
    result = run_broker(
        "--log-dir",
        str(tmp_path / "log"),
        "--set",
        f"zookeeper.connect=127.0.0.1:{closed}",
        "--set",
        "zookeeper.connection.timeout.ms=1000",
    )
    assert result.returncode == 1
    assert last_line(result) == (
        f"kafkalog broker: cannot reach ZooKeeper at 127.0.0.1:{closed} within 1 s "
        f"(zookeeper.connect; zookeeper.connection.timeout.ms)"
    )
    assert not (tmp_path / "log").exists()  # nothing made before the cluster is known


def controller(kazoo, zookeeper: str):
    """(broker id in /controller, /controller_epoch), or None while there is no controller."""
    path = f"{chroot(zookeeper)}/controller"
    try:
        data, _ = kazoo.get(path)
    except NoNodeError:  # ephemeral: it can go between an exists() and a get()
        return None
    return json.loads(data)["brokerid"], int(kazoo.get(f"{chroot(zookeeper)}/controller_epoch")[0])


def test_one_broker_is_elected_controller_and_another_takes_over_when_it_dies(tmp_path, zookeeper, kazoo):
    settings = {"zookeeper.connect": zookeeper, "zookeeper.session.timeout.ms": "2000"}
    brokers = {}
    try:
        for broker_id in (1, 2, 3):
            brokers[broker_id] = EmbeddedBroker(tmp_path / f"log{broker_id}", {**settings, "broker.id": broker_id})
            brokers[broker_id].start()
        first, epoch = wait_for(lambda: controller(kazoo, zookeeper), timeout=30, what="a controller")
        assert first in brokers and epoch == 1
        assert sorted(kazoo.get_children(f"{chroot(zookeeper)}/brokers/ids")) == ["1", "2", "3"]
        brokers[first].kill()  # no clean stop: the node goes when the session times out
        second, epoch = wait_for(
            lambda: (c := controller(kazoo, zookeeper)) and c[0] != first and c[1] > 1 and c,
            timeout=60,
            what="another controller with a new epoch",
        )
        assert second in brokers and epoch == 2
        wait_for(
            lambda: f"broker {second} is the controller (controller epoch 2)" in brokers[second].stderr_tail(100),
            timeout=30,
            what="the new controller's log line",
        )
    finally:
        for broker in brokers.values():
            broker.kill()
