"""``kafkalog cluster describe``: a cluster as any of its brokers' Metadata shows it: the cluster id,
the controller, each live broker with the number of partitions it leads, the under-replicated
partitions (led, with fewer in-sync replicas than replicas) and the partitions without a leader
(offline: their in-sync replicas are down, or no controller has elected a leader yet), with the
brokers holding them. ``--topic`` narrows the
counts to some topics and lists the partitions each broker leads."""

import json

from broker.arguments import Subcommands
from broker.client import UnknownTopicOrPartitionError
from broker.cluster.metadata_cache import NO_LEADER

from .common import OK, CommandError, add_command, run

PROG = "kafkalog cluster describe"


def _description(client, args) -> dict:
    metadata = client.metadata(args.topics)
    unknown = [topic for topic in args.topics or () if topic in metadata.topic_errors]
    if unknown:
        error = client.topic_error(unknown[0], metadata.topic_errors[unknown[0]])
        if not isinstance(error, UnknownTopicOrPartitionError):
            raise error  # access denied
        raise CommandError(f"topic {unknown[0]!r} does not exist on {args.bootstrap_server}")
    led: dict[int, list[dict[str, object]]] = {node_id: [] for node_id in sorted(metadata.brokers)}
    offline = []
    under_replicated = []
    for (topic, partition), leader in sorted(metadata.leaders.items()):
        replicas = list(metadata.replicas.get((topic, partition), ()))
        isr = list(metadata.isr.get((topic, partition), ()))
        if leader == NO_LEADER or leader not in led:
            offline.append(
                {
                    "topic": topic,
                    "partition": partition,
                    "replicas": replicas,
                    "replicasLive": any(r in metadata.brokers for r in replicas),
                }
            )
        else:
            led[leader].append({"topic": topic, "partition": partition})
            if len(isr) < len(replicas):
                under_replicated.append({"topic": topic, "partition": partition, "replicas": replicas, "isr": isr})
    return {
        "clusterId": metadata.cluster_id,
        "controller": metadata.controller_id,
        "brokers": [
            {
                "id": node_id,
                "host": metadata.brokers[node_id].host,
                "port": metadata.brokers[node_id].port,
                "leaderCount": len(partitions),
                "partitions": partitions,
            }
            for node_id, partitions in led.items()
        ],
        "underReplicatedPartitions": under_replicated,
        "offlinePartitions": offline,
    }


def _print_plain(description: dict, list_partitions: bool) -> None:
    controller = description["controller"]
    print(f"cluster id: {description['clusterId'] or '(not given by this broker)'}")
    print(f"controller: {'none' if controller == NO_LEADER else controller}")
    for broker in description["brokers"]:
        line = f"broker {broker['id']}: {broker['host']}:{broker['port']}, leads {broker['leaderCount']} partition(s)"
        if list_partitions and broker["partitions"]:
            line += ": " + ", ".join(f"{p['topic']}-{p['partition']}" for p in broker["partitions"])
        print(line)
    under_replicated = description["underReplicatedPartitions"]
    print(f"under-replicated partitions: {len(under_replicated)}")
    for p in under_replicated:
        replicas, isr = (", ".join(map(str, p[key])) for key in ("replicas", "isr"))
        print(f"  {p['topic']}-{p['partition']} (replicas {replicas}, in sync {isr})")
    offline = description["offlinePartitions"]
    print(f"offline partitions: {len(offline)}")
    for p in offline:
        holders = ", ".join(map(str, p["replicas"])) or "?"
        why = "live, no leader elected yet" if p["replicasLive"] else "not live"
        print(f"  {p['topic']}-{p['partition']} (on broker {holders}, {why})")


def _describe(client, args) -> int:
    description = _description(client, args)
    if args.format == "json":
        print(json.dumps(description))
    else:
        _print_plain(description, list_partitions=bool(args.topics))
    return OK


def add_parser(actions: Subcommands) -> None:
    describe = add_command(
        actions,
        "describe",
        "show the brokers, the controller, the under-replicated and the offline partitions",
        "Ask any broker of the cluster for its Metadata and print the cluster id, the controller,\n"
        "one line per live broker (id, host:port, how many partitions it leads) and the partitions\n"
        "without a leader (offline: the broker holding them is down), with the broker they live on.\n"
        "With --topic, only those topics count, and each broker's line lists the partitions it leads.",
        [
            "kafkalog cluster describe --bootstrap-server 127.0.0.1:38555",
            "kafkalog cluster describe --topic page-views --bootstrap-server broker1:9092",
            "kafkalog cluster describe --format json --command-config client.properties | jq .offlinePartitions",
        ],
    )
    describe.add_argument(
        "--topic",
        dest="topics",
        action="append",
        metavar="TOPIC",
        help="count and list only this topic's partitions (repeatable)",
    )
    describe.add_argument(
        "--format", choices=("plain", "json"), default="plain", help="plain lines (default) or one JSON object"
    )
    describe.set_defaults(func=lambda args: run(PROG, args, _describe))
