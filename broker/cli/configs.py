"""``kafkalog configs describe|alter``: show and change the settings of a topic, of a broker, or the
cluster-wide broker defaults, through DescribeConfigs and IncrementalAlterConfigs, as
``kafka-configs`` does (its ``--entity-type/--entity-name/--entity-default`` spellings work too).

``--add-config`` takes Kafka's syntax: ``k1=v1,k2=[a,b]`` (brackets around a list value), and may
be repeated; ``--delete-config k1,k2`` returns settings to their defaults.
"""

import argparse
import json

from broker.arguments import USAGE, Subcommands
from broker.client import BROKER_RESOURCE, TOPIC_RESOURCE

from .common import OK, CommandError, add_command, run
from .topics import CONFIG_SOURCES, text_table

PROG = "kafkalog configs"
DYNAMIC_SOURCES = {"DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG"}
CLUSTER_DEFAULT = ""


def _resource(args) -> tuple[int, str]:
    """(resource type, name) from --topic/--broker/--broker-defaults or Kafka's --entity-* options."""
    chosen = []
    if args.topic is not None:
        chosen.append((TOPIC_RESOURCE, args.topic))
    if args.broker is not None:
        chosen.append((BROKER_RESOURCE, args.broker))
    if args.broker_defaults:
        chosen.append((BROKER_RESOURCE, CLUSTER_DEFAULT))
    if args.entity_type is not None:
        kind = TOPIC_RESOURCE if args.entity_type == "topics" else BROKER_RESOURCE
        if args.entity_default == (args.entity_name is not None) or (kind == TOPIC_RESOURCE and args.entity_default):
            raise CommandError("--entity-type needs --entity-name NAME (or, for brokers, --entity-default)", USAGE)
        chosen.append((kind, CLUSTER_DEFAULT if args.entity_default else args.entity_name))
    elif args.entity_name is not None or args.entity_default:
        raise CommandError("--entity-name and --entity-default need --entity-type topics|brokers", USAGE)
    if len(chosen) != 1:
        raise CommandError("name exactly one of --topic NAME, --broker ID or --broker-defaults", USAGE)
    return chosen[0]


def _subject(resource_type: int, name: str) -> str:
    if resource_type == TOPIC_RESOURCE:
        return f"topic {name}"
    return f"broker {name}" if name else "the cluster-wide broker defaults"


def _describe(client, args) -> int:
    resource_type, name = _resource(args)
    entries = client.describe_configs(name, resource_type, documentation=args.documentation)
    rows = [
        {
            "name": e.name,
            "value": e.value,
            "source": CONFIG_SOURCES.get(e.source, str(e.source)),
            "readOnly": e.read_only,
            "sensitive": e.sensitive,
        }
        for e in entries
    ]
    if args.documentation:
        for row, entry in zip(rows, entries, strict=True):
            row["documentation"] = entry.documentation
    if not args.all:
        rows = [row for row in rows if row["source"] in DYNAMIC_SOURCES]
    if args.format == "json":
        print(json.dumps({"resource": _subject(resource_type, name), "configs": rows}))
    elif not rows:
        print(f"{_subject(resource_type, name)}: no dynamic settings (--all shows every setting)")
    else:
        columns = ["name", "value", "source"] + (["documentation"] if args.documentation else [])
        print(
            text_table(
                [["config", *columns[1:]]]
                + [["" if row[column] is None else row[column] for column in columns] for row in rows]
            )
        )
    return OK


def kafka_config_list(text: str) -> list[tuple[str, str]]:
    """Kafka's ``k1=v1,k2=[a,b]`` -> ``[("k1", "v1"), ("k2", "a,b")]``."""
    items, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"{item!r} is not KEY=VALUE (for example retention.ms=86400000)")
        value = value.strip()
        pairs.append((key.strip(), value[1:-1] if value.startswith("[") and value.endswith("]") else value))
    return pairs


def key_list(text: str) -> list[str]:
    keys = [key.strip() for key in text.split(",")]
    if not all(keys):
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of setting names (for example retention.ms)")
    return keys


def _alter(client, args) -> int:
    resource_type, name = _resource(args)
    changes = {key: value for pairs in args.add_config for key, value in pairs}
    deleted = [key for keys in args.delete_config for key in keys]
    both = sorted(set(changes) & set(deleted))
    if both:
        raise CommandError(f"{both[0]} is both added and deleted", USAGE)
    if not changes and not deleted:
        raise CommandError("nothing to change: give --add-config KEY=VALUE or --delete-config KEY", USAGE)
    client.alter_configs(name, changes | dict.fromkeys(deleted), resource_type, validate_only=args.validate_only)
    done = "validated (not changed)" if args.validate_only else "changed"
    print(
        f"{done} {_subject(resource_type, name)}: "
        + ", ".join([f"{k}={v}" for k, v in changes.items()] + [f"{k} back to its default" for k in deleted])
    )
    return OK


def _add_resource_options(parser) -> None:
    parser.add_argument("--topic", metavar="NAME", help="a topic's settings")
    parser.add_argument("--broker", metavar="ID", help="a broker's settings (its broker.id)")
    parser.add_argument(
        "--broker-defaults", action="store_true", help="the cluster-wide defaults of the broker settings"
    )
    parser.add_argument("--entity-type", choices=("topics", "brokers"), help="kafka-configs' spelling")
    parser.add_argument("--entity-name", metavar="NAME", help="kafka-configs' spelling")
    parser.add_argument("--entity-default", action="store_true", help="kafka-configs' spelling")


def add_parser(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "configs",
        help="show and change topic and broker settings",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Show and change the settings of a topic, a broker, or the cluster-wide broker defaults,\n"
        "under Kafka's names. Changes are persisted by the broker and applied to the running logs\n"
        "at once (retention, segment size, flush policy, ...).",
        epilog="examples:\n"
        "  kafkalog configs describe --topic page-views --all\n"
        "  kafkalog configs alter --topic page-views --add-config retention.ms=86400000\n"
        "  kafkalog configs alter --broker-defaults --add-config log.retention.ms=3600000\n"
        "  kafkalog configs describe --entity-type brokers --entity-name 0\n\n"
        "Each action has its own --help.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    describe = add_command(
        actions,
        "describe",
        "show settings",
        "Show the settings set dynamically on a topic or broker (--all: every setting), each with\n"
        "its source: DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG (this broker),\n"
        "DYNAMIC_DEFAULT_BROKER_CONFIG (cluster-wide), STATIC_BROKER_CONFIG (`kafkalog broker --set`)\n"
        "or DEFAULT_CONFIG (Kafka's default).",
        ["kafkalog configs describe --topic page-views", "kafkalog configs describe --broker 0 --all --format json"],
    )
    _add_resource_options(describe)
    describe.add_argument("--all", action="store_true", help="every setting, not only the dynamic ones")
    describe.add_argument(
        "--documentation",
        action="store_true",
        help="add each setting's documentation: from this broker, why a setting has no effect",
    )
    describe.add_argument("--format", choices=("plain", "json"), default="plain", help="a table (default) or JSON")
    describe.set_defaults(func=lambda args: run(f"{PROG} describe", args, _describe))

    alter = add_command(
        actions,
        "alter",
        "change settings",
        "Set settings (--add-config) or return them to their defaults (--delete-config) on a topic,\n"
        "a broker, or the cluster-wide broker defaults. Every value is checked by the broker first;\n"
        "a refused change changes nothing.",
        [
            "kafkalog configs alter --topic page-views --add-config retention.ms=86400000,segment.bytes=104857600",
            "kafkalog configs alter --topic page-views --delete-config retention.ms",
            "kafkalog configs alter --broker 0 --add-config log.flush.interval.messages=1",
        ],
    )
    _add_resource_options(alter)
    alter.add_argument(
        "--add-config",
        type=kafka_config_list,
        action="append",
        default=[],
        metavar="K=V[,K=V]",
        help="settings to set; a list value in brackets: cleanup.policy=[delete] (repeatable)",
    )
    alter.add_argument(
        "--delete-config",
        type=key_list,
        action="append",
        default=[],
        metavar="K[,K]",
        help="settings to return to their defaults (repeatable)",
    )
    alter.add_argument("--validate-only", action="store_true", help="check the change, apply nothing")
    alter.set_defaults(func=lambda args: run(f"{PROG} alter", args, _alter))
