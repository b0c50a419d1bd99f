"""``kafkalog topics create|list|describe|alter|delete``: manage topics (``alter`` adds partitions),
and show their partitions (leader, earliest and latest offsets, size on disk) and their effective
settings, through the admin API. Settings are changed with ``kafkalog configs alter``."""

import argparse
import json
import sys

from broker.arguments import Subcommands, key_value, positive_int
from broker.client import EARLIEST, LATEST, NewTopic
from broker.protocol.errors import ErrorCode

from .common import FAILED, OK, CommandError, add_command, add_format_argument, add_topic_argument, partitions_of, run

PROG = "kafkalog topics"
DEFAULT_FROM_BROKER = -1
CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}


def _report(prog: str, results: dict, done: str, tolerated: int | None) -> int:
    """One line per topic (what was done on stdout, errors on stderr); 1 if any topic failed."""
    failed = False
    for name, error in results.items():
        if error is None:
            print(f"{done} topic {name}")
        elif error.code == tolerated:
            print(f"{error}: nothing to do")
        else:
            print(f"{prog}: {error}", file=sys.stderr)
            failed = True
    return FAILED if failed else OK


def _create(client, args) -> int:
    topics = [NewTopic(name, args.partitions, dict(args.config), args.replication_factor) for name in args.topics]
    results = client.create_topics(topics, validate_only=args.validate_only)
    tolerated = ErrorCode.TOPIC_ALREADY_EXISTS if args.if_not_exists else None
    return _report(f"{PROG} create", results, "validated (not created)" if args.validate_only else "created", tolerated)


def _delete(client, args) -> int:
    tolerated = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if args.if_exists else None
    return _report(f"{PROG} delete", client.delete_topics(args.topics), "deleted", tolerated)


def _alter(client, args) -> int:
    for name in args.topics:
        client.create_partitions(name, args.partitions, validate_only=args.validate_only)
        print(
            f"{'validated (not altered)' if args.validate_only else 'altered'} topic {name}: "
            f"{args.partitions} partitions"
        )
    return OK


def _list(client, args) -> int:
    internal = client.metadata(None).internal
    for name in client.topics(include_internal=not args.exclude_internal):  # as kafka-topics --list
        print(json.dumps({"topic": name, "internal": name in internal}) if args.format == "json" else name)
    return OK


def _description(client, topic: str, bootstrap: str) -> dict:
    """The topic's partitions (a partition without a leader, its broker down, with leader, offsets
    and size None, as kafka-topics shows ``Leader: none``), settings and the controller."""
    partitions = partitions_of(client, topic, bootstrap)
    metadata = client.metadata([topic])
    led = [p for p in partitions if metadata.leaders[(topic, p)] >= 0]
    earliest = client.list_offsets({(topic, p): EARLIEST for p in led})
    latest = client.list_offsets({(topic, p): LATEST for p in led})
    sizes = client.partition_sizes(topic, led)
    return {
        "topic": topic,
        "controller": metadata.controller_id,
        "partitions": [
            {
                "partition": p,
                "leader": metadata.leaders[(topic, p)] if p in led else None,
                "replicas": list(metadata.replicas.get((topic, p), ())),
                "isr": list(metadata.isr.get((topic, p), ())),
                "earliestOffset": earliest[(topic, p)][0] if p in led else None,
                "latestOffset": latest[(topic, p)][0] if p in led else None,
                "sizeBytes": sizes.get(p),
            }
            for p in partitions
        ],
        "configs": {
            c.name: {
                "value": c.value,
                "source": CONFIG_SOURCES.get(c.source, str(c.source)),
                "readOnly": c.read_only,
                "sensitive": c.sensitive,
            }
            for c in client.describe_configs(topic)
        },
    }


def text_table(rows: list[list]) -> str:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _print_plain(description: dict) -> None:
    partitions = description["partitions"]
    print(f"topic: {description['topic']}\npartitions: {len(partitions)}\ncontroller: {description['controller']}")
    print(
        text_table(
            [["partition", "leader", "replicas", "isr", "earliest", "latest", "size"]]
            + [
                [
                    p["partition"],
                    "none" if p["leader"] is None else p["leader"],
                    ",".join(map(str, p["replicas"])),
                    ",".join(map(str, p["isr"])),
                    _or(p["earliestOffset"], "-"),
                    _or(p["latestOffset"], "-"),
                    _or(p["sizeBytes"], "?"),
                ]
                for p in partitions
            ]
        )
    )
    print(
        text_table(
            [["config", "value", "source"]]
            + [
                [name, "" if c["value"] is None else c["value"], c["source"]]
                for name, c in description["configs"].items()
            ]
        )
    )


def _or(value, missing: str):
    return missing if value is None else value


def _describe(client, args) -> int:
    failed = printed = False
    for topic in args.topics or client.topics(include_internal=not args.exclude_internal):  # none named: all
        try:
            description = _description(client, topic, args.bootstrap_server)
        except CommandError as exc:
            print(f"{PROG} describe: {exc}", file=sys.stderr)
            failed = True
            continue
        if args.unavailable_partitions:
            description["partitions"] = [p for p in description["partitions"] if p["leader"] is None]
        if args.format == "json":
            print(json.dumps(description))
        else:
            print("\n" if printed else "", end="")
            _print_plain(description)
        printed = True
    return FAILED if failed else OK


def add_parser(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "topics",
        help="create, list, describe and delete topics",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Manage the topics of a broker (this one or any Kafka broker).",
        epilog="examples:\n"
        "  kafkalog topics create page-views --partitions 3 --config retention.ms=86400000\n"
        "  kafkalog topics list\n"
        "  kafkalog topics describe page-views\n"
        "  kafkalog topics alter page-views --partitions 6\n"
        "  kafkalog topics delete page-views\n\n"
        "Each action has its own --help.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    create = add_command(
        actions,
        "create",
        "create topics",
        "Create topics with a partition count and topic settings (Kafka's names).",
        [
            "kafkalog topics create page-views --partitions 3",
            "kafkalog topics create --topic page-views --partitions 3 --bootstrap-servers b1:9092",
            "kafkalog topics create audit --config retention.ms=-1 --config segment.bytes=104857600",
            "kafkalog topics create page-views --if-not-exists --bootstrap-server broker1:9092",
        ],
    )
    add_topic_argument(create, many=True)
    create.add_argument(
        "--partitions",
        type=positive_int,
        default=DEFAULT_FROM_BROKER,
        metavar="N",
        help="number of partitions (default: the broker's num.partitions)",
    )
    create.add_argument(
        "--replication-factor",
        type=positive_int,
        default=DEFAULT_FROM_BROKER,
        metavar="N",
        help="replicas per partition, at most the live brokers (default: the broker's default.replication.factor)",
    )
    create.add_argument(
        "--config",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic setting, for example retention.ms=86400000 (repeatable)",
    )
    create.add_argument("--if-not-exists", action="store_true", help="a topic that already exists is not an error")
    create.add_argument("--validate-only", action="store_true", help="check the request, create nothing")
    create.set_defaults(func=lambda args: run(f"{PROG} create", args, _create))

    listing = add_command(
        actions,
        "list",
        "list the names of all topics",
        "Print every topic name, one per line.",
        [
            "kafkalog topics list",
            "kafkalog topics list --bootstrap-server broker1:9092 | grep ^app-",
            "kafkalog topics --list --format json | jq -r 'select(.internal | not).topic'",
        ],
    )
    add_format_argument(listing, 'one JSON object per topic: {"topic", "internal"}')
    listing.add_argument(
        "--exclude-internal", action="store_true", help="leave out internal topics (__consumer_offsets)"
    )
    listing.set_defaults(func=lambda args: run(f"{PROG} list", args, _list))

    describe = add_command(
        actions,
        "describe",
        "show partitions, offsets, sizes and settings",
        "For each topic (every topic when none is named): the cluster's controller, every partition "
        "with its leader (the broker it lives\n"
        "on), earliest and latest offsets (latest is the offset the next record gets) and size on disk\n"
        "in bytes (a partition whose broker is down: leader none, offsets '-'; JSON null), then every\n"
        "setting with its value and\n"
        "source (DYNAMIC_TOPIC_CONFIG: set on the topic; STATIC_BROKER_CONFIG: the broker's setting;\n"
        "DEFAULT_CONFIG: Kafka's default).",
        [
            "kafkalog topics describe page-views",
            "kafkalog topics --describe --topic page-views",
            "kafkalog topics describe --format json   # every topic",
            "kafkalog topics describe page-views clicks --format json | jq '.partitions[].sizeBytes'",
        ],
    )
    add_topic_argument(describe, many=True, required=False)
    describe.add_argument(
        "--exclude-internal",
        action="store_true",
        help="with no topic named, leave out internal topics (__consumer_offsets)",
    )
    describe.add_argument(
        "--unavailable-partitions",
        action="store_true",
        help="show only the partitions without a leader (their broker is down)",
    )
    describe.add_argument(
        "--format",
        choices=("plain", "json"),
        default="plain",
        help="plain tables (default) or one JSON object per topic",
    )
    describe.set_defaults(func=lambda args: run(f"{PROG} describe", args, _describe))

    alter = add_command(
        actions,
        "alter",
        "add partitions to topics",
        "Raise the partition count of topics (CreatePartitions). A topic never shrinks. Records\n"
        "already stored stay in their partitions; keyed records produced afterwards may hash to\n"
        "other partitions than before, as in Kafka. Settings: see `kafkalog configs alter`.",
        [
            "kafkalog topics alter page-views --partitions 6",
            "kafkalog topics alter page-views --partitions 6 --validate-only",
        ],
    )
    add_topic_argument(alter, many=True)
    alter.add_argument(
        "--partitions",
        type=positive_int,
        required=True,
        metavar="N",
        help="the new number of partitions (higher than the current one)",
    )
    alter.add_argument("--validate-only", action="store_true", help="check the request, change nothing")
    alter.set_defaults(func=lambda args: run(f"{PROG} alter", args, _alter))

    delete = add_command(
        actions,
        "delete",
        "delete topics and their data",
        "Delete topics; their partitions' files are removed by the broker.",
        ["kafkalog topics delete page-views", "kafkalog topics delete old-a old-b --if-exists"],
    )
    add_topic_argument(delete, many=True)
    delete.add_argument("--if-exists", action="store_true", help="a topic that does not exist is not an error")
    delete.set_defaults(func=lambda args: run(f"{PROG} delete", args, _delete))
