"""Kafka's ZooKeeper layout (``ZkData.scala``): the paths and the exact JSON a broker writes and
reads, and the ``zookeeper.connect`` string (``HOST:PORT[,HOST:PORT...][/chroot]``). Pure: no I/O."""

import enum
import json
import re
from collections.abc import Iterable
from typing import Any, TypeVar

from broker.security.acls import Acl, Operation, PatternType, Permission, ResourceType

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
            raise ValueError(
                f"{text!r} is not HOST:PORT[,HOST:PORT...][/chroot] (for example zk1:2181,zk2:2181/kafkalog)"
            )
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


def broker_registration_json(
    host: str | None,
    port: int,
    timestamp_ms: int,
    rack: str | None = None,
    endpoints: list[tuple[str, str, str]] | None = None,
) -> bytes:
    """What Kafka 2.x writes to ``/brokers/ids/<id>``: ``endpoints`` (``NAME://host:port`` per listener)
    with ``listener_security_protocol_map``, and the legacy ``host``/``port`` of the PLAINTEXT listener
    (null and -1 without one). ``endpoints`` are ``(listener, security protocol, url)``; without
    them the broker has one PLAINTEXT listener at ``host:port``."""
    if endpoints is None:
        endpoints = [("PLAINTEXT", "PLAINTEXT", f"PLAINTEXT://{host}:{port}")]
    return json.dumps(
        {
            "listener_security_protocol_map": {listener: protocol for listener, protocol, _ in endpoints},
            "endpoints": [url for _, _, url in endpoints],
            "rack": rack,
            "jmx_port": -1,
            "host": host,
            "timestamp": str(timestamp_ms),
            "port": port,
            "version": BROKER_REGISTRATION_VERSION,
        },
        separators=(",", ":"),
    ).encode()


def controller_json(broker_id: int, timestamp_ms: int) -> bytes:
    return json.dumps(
        {"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)}, separators=(",", ":")
    ).encode()


TOPICS_PATH = "/brokers/topics"
DELETE_TOPICS_PATH = "/admin/delete_topics"
TOPIC_CONFIGS_PATH = "/config/topics"
BROKER_CONFIGS_PATH = "/config/brokers"
DEFAULT_BROKER_CONFIG = "<default>"  # Kafka's node name for the cluster-wide default broker settings


PERSISTENT_PATHS = (BROKER_IDS_PATH, TOPICS_PATH, DELETE_TOPICS_PATH, TOPIC_CONFIGS_PATH, BROKER_CONFIGS_PATH)
"""Made by every broker as it registers (Kafka's top-level paths), so watches on their children can be set."""


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions/{partition}/state"


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def topic_assignment_json(replicas: list[list[int]]) -> bytes:
    """``/brokers/topics/<topic>``: each partition's replica list, by partition index."""
    return _json(
        {
            "version": 2,
            "partitions": {str(p): list(r) for p, r in enumerate(replicas)},
            "adding_replicas": {},
            "removing_replicas": {},
        }
    )


def parse_topic_assignment(data: bytes) -> list[tuple[int, ...]]:
    """The replica lists of ``/brokers/topics/<topic>``, by partition index."""
    try:
        partitions = json.loads(data)["partitions"]
        return [tuple(int(b) for b in partitions[str(p)]) for p in range(len(partitions))]
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"not Kafka's topic assignment JSON: {data[:100]!r}") from None


def partition_state_json(leader: int, leader_epoch: int, isr: Iterable[int], controller_epoch: int) -> bytes:
    """``/brokers/topics/<topic>/partitions/<n>/state``, Kafka's ``LeaderAndIsr`` with its controller epoch."""
    return _json(
        {
            "controller_epoch": controller_epoch,
            "leader": leader,
            "version": 1,
            "leader_epoch": leader_epoch,
            "isr": list(isr),
        }
    )


PartitionStateNode = tuple[int, int, tuple[int, ...], int]  # (leader, leader epoch, isr, controller epoch)


def parse_partition_state(data: bytes) -> PartitionStateNode:
    """(leader, leader epoch, isr, controller epoch) of a partition state node."""
    try:
        state = json.loads(data)
        return (
            int(state["leader"]),
            int(state["leader_epoch"]),
            tuple(int(b) for b in state["isr"]),
            int(state["controller_epoch"]),
        )
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"not Kafka's partition state JSON: {data[:100]!r}") from None


def config_json(configs: dict[str, str]) -> bytes:
    """``/config/topics/<topic>`` and ``/config/brokers/<id|<default>>``: the overrides."""
    return _json({"version": 1, "config": dict(configs)})


def parse_config(data: bytes) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in json.loads(data)["config"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ValueError(f"not Kafka's config JSON: {data[:100]!r}") from None


def parse_broker_registration(data: bytes) -> tuple[list[tuple[str, str, str, int]], str | None]:
    """The endpoints ``(listener, security protocol, host, port)`` and rack of ``/brokers/ids/<id>``."""
    try:
        registration = json.loads(data)
        protocols = registration.get("listener_security_protocol_map") or {}
        endpoints = []
        for url in registration["endpoints"]:
            listener, _, address = url.partition("://")
            host, _, port = address.rpartition(":")
            endpoints.append((listener, protocols.get(listener, listener), host.strip("[]"), int(port)))
        return endpoints, registration.get("rack")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ValueError(f"not Kafka's broker registration JSON: {data[:100]!r}") from None


def parse_controller(data: bytes) -> int:
    try:
        return int(json.loads(data)["brokerid"])
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"not Kafka's controller JSON: {data[:100]!r}") from None


ACL_PATH = "/kafka-acl"  # literal ACLs: /kafka-acl/<ResourceType>/<name>
PREFIXED_ACL_PATH = "/kafka-acl-extended/prefixed"  # prefixed ACLs: .../<ResourceType>/<prefix>
ACL_CHANGES_PATH = "/kafka-acl-changes"  # a sequential node per change of a literal ACL node
EXTENDED_ACL_CHANGES_PATH = "/kafka-acl-extended-changes"  # the same for prefixed ACL nodes
ACL_CHANGE_PREFIX = "acl_changes_"


def kafka_name(member: enum.Enum) -> str:
    """An enum member as Kafka spells it in ZooKeeper: ``DESCRIBE_CONFIGS`` as ``DescribeConfigs``."""
    return "".join(word.capitalize() for word in member.name.split("_"))


def acl_resource_path(acl: Acl) -> str:
    """The node holding the ACLs of ``acl``'s resource pattern."""
    root = PREFIXED_ACL_PATH if acl.pattern_type == PatternType.PREFIXED else ACL_PATH
    return f"{root}/{kafka_name(acl.resource_type)}/{acl.name}"


def acls_json(acls: Iterable[Acl]) -> bytes:
    """A resource pattern's node: its ACLs as Kafka's access control entries."""
    return _json(
        {
            "version": 1,
            "acls": [
                {
                    "principal": acl.principal,
                    "permissionType": kafka_name(acl.permission),
                    "operation": kafka_name(acl.operation),
                    "host": acl.host,
                }
                for acl in acls
            ],
        }
    )


def parse_acls(resource_type: str, name: str, pattern_type: PatternType, data: bytes) -> list[Acl]:
    """The ACLs of the node of ``resource_type`` (Kafka's spelling) and ``name``."""
    try:
        kind = _by_kafka_name(ResourceType, resource_type)
        return [
            Acl.checked(
                kind,
                name,
                pattern_type,
                entry["principal"],
                entry["host"],
                _by_kafka_name(Operation, entry["operation"]),
                _by_kafka_name(Permission, entry["permissionType"]),
            )
            for entry in json.loads(data)["acls"]
        ]
    except (ValueError, KeyError, TypeError):  # AclError is a ValueError
        raise ValueError(f"not Kafka's ACL JSON for {resource_type}/{name}: {data[:100]!r}") from None


def acl_change_json(acl: Acl) -> bytes:
    """What a change notification names: ``Topic:orders`` for a literal pattern, Kafka's JSON for another."""
    if acl.pattern_type == PatternType.PREFIXED:
        return _json(
            {
                "version": 1,
                "resourceType": kafka_name(acl.resource_type),
                "name": acl.name,
                "patternType": acl.pattern_type.name,
            }
        )
    return f"{kafka_name(acl.resource_type)}:{acl.name}".encode()


_Member = TypeVar("_Member", bound=enum.Enum)


def _by_kafka_name(kind: type[_Member], text: str) -> _Member:
    for member in kind:
        if kafka_name(member) == text:
            return member
    raise ValueError(f"{text!r} is not a {kind.__name__}")
