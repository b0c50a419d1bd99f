"""The ``kafkalog`` command line: one entry point, one module per subcommand.

Each module (``load`` and ``mirror`` are Spark jobs, in ``jobs``) has ``add_parser(commands)``, which adds its subcommand to the ``commands``
subparsers and sets ``func`` (``args -> exit code``). Exit codes: 0 success, 1 the operation
failed (or, for dump-log, found corruption), 2 usage errors.
"""

from importlib import metadata

from broker.arguments import Parser
from jobs import load, mirror

from . import (acls, broker_command, cluster_command, configs, consume, delete_records, dump_log, groups, produce,
               topics, users)

COMMANDS = (broker_command, cluster_command, topics, configs, groups, produce, consume, delete_records, load, mirror,
            dump_log, users, acls)


def build_parser() -> Parser:
    parser = Parser(prog="kafkalog", description="A Kafka-design log broker and its tools.")
    parser.add_argument("--version", action="version", version=f"kafkalog {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def _version() -> str:
    try:
        return metadata.version("spark-kafka-source")
    except metadata.PackageNotFoundError:
        return "(version unknown: the spark-kafka-source distribution is not installed)"


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
