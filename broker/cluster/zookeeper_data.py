"""Kafka's ZooKeeper layout (``ZkData.scala``): the paths and the exact JSON a broker writes and
reads, and the ``zookeeper.connect`` string (``HOST:PORT[,HOST:PORT...][/chroot]``). Pure: no I/O."""

import json
import re

CLUSTER_ID_PATH = "/cluster/id"
BROKER_IDS_PATH = "/brokers/ids"
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
BROKER_REGISTRATION_VERSION = 5
_HOST_PORT = re.compile(r"[^,/:\s]+:\d{1,5}")


class ZooKeeperConnect:
    """``zookeeper.connect`` split into the servers kazoo connects to and the chroot ("" for none)."""

    def __init__(self, text: str):
        hosts, slash, chroot = text.strip().partition("/")
        servers = [h.strip() for h in hosts.split(",")]
        chroot = (slash + chroot).rstrip("/")
        if not all(_HOST_PORT.fullmatch(s) for s in servers) or "//" in chroot or any(c.isspace() for c in chroot):
            raise ValueError(f"{text!r} is not HOST:PORT[,HOST:PORT...][/chroot] "
                             f"(for example zk1:2181,zk2:2181/kafkalog)")
        self.hosts = ",".join(servers)
        self.chroot = chroot

    def path(self, path: str) -> str:
        """``path`` inside the chroot."""
        return self.chroot + path

    def __str__(self) -> str:
        return self.hosts + self.chroot


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def cluster_id_json(cluster_id: str) -> bytes:
    return json.dumps({"version": "1", "id": cluster_id}, separators=(",", ":")).encode()


def parse_cluster_id(data: bytes) -> str:
    try:
        return json.loads(data)["id"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{CLUSTER_ID_PATH} holds {data[:100]!r}, not Kafka's cluster id JSON") from None


def broker_registration_json(host: str | None, port: int, timestamp_ms: int, rack: str | None = None,
                             endpoints=None) -> bytes:
    """What Kafka 2.x writes to ``/brokers/ids/<id>``: ``endpoints`` (``NAME://host:port`` per listener)
    with ``listener_security_protocol_map``, and the legacy ``host``/``port`` of the PLAINTEXT listener
    (null and -1 without one). ``endpoints`` are ``(listener, security protocol, url)``; without
    them the broker has one PLAINTEXT listener at ``host:port``."""
    if endpoints is None:
        endpoints = [("PLAINTEXT", "PLAINTEXT", f"PLAINTEXT://{host}:{port}")]
    return json.dumps({
        "listener_security_protocol_map": {listener: protocol for listener, protocol, _ in endpoints},
        "endpoints": [url for _, _, url in endpoints],
        "rack": rack, "jmx_port": -1, "host": host, "timestamp": str(timestamp_ms), "port": port,
        "version": BROKER_REGISTRATION_VERSION,
    }, separators=(",", ":")).encode()


def controller_json(broker_id: int, timestamp_ms: int) -> bytes:
    return json.dumps({"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)},
                      separators=(",", ":")).encode()
