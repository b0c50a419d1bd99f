"""The ``kafkalog`` command line: one entry point, one module per subcommand.

Each module has ``add_parser(commands)``, which adds its subcommand to the ``commands`` subparsers and
sets ``func`` (``args -> exit code``). ``load`` and ``mirror`` are Spark jobs, in ``jobs``, above the
broker: they are found through the ``kafkalog.commands`` entry points the distribution declares.
Exit codes: 0 success, 1 the operation failed (or, for dump-log, found corruption), 2 usage errors.
The actions of ``topics``, ``configs`` and ``groups`` may also be given as Kafka's tools give them,
as an option anywhere (``kafkalog topics --describe --topic T`` is ``kafkalog topics describe --topic T``).
"""

import sys
from importlib import metadata
from types import ModuleType

from broker.arguments import USAGE, Parser

from . import (
    acls,
    broker_command,
    cluster_command,
    configs,
    consume,
    delete_records,
    dump_log,
    groups,
    produce,
    topics,
    transactions,
    users,
)

# Kafka's tools name the action with an option (kafka-topics.sh --describe): command -> {option: action}
KAFKA_ACTION_OPTIONS = {
    "topics": {f"--{action}": action for action in ("create", "list", "describe", "alter", "delete")},
    "configs": {f"--{action}": action for action in ("describe", "alter")},
    "groups": {f"--{action}": action for action in ("list", "describe", "delete", "delete-offsets", "reset-offsets")},
}
COMMANDS = (
    broker_command,
    cluster_command,
    topics,
    configs,
    groups,
    transactions,
    produce,
    consume,
    delete_records,
    dump_log,
    users,
    acls,
)
JOB_COMMANDS = "kafkalog.commands"  # the entry-point group of the subcommands above the broker


def commands() -> list[ModuleType]:
    """The subcommands' modules in the order ``--help`` lists them: the jobs after ``delete-records``."""
    jobs = [entry.load() for entry in sorted(metadata.entry_points(group=JOB_COMMANDS), key=lambda e: e.name)]
    after = COMMANDS.index(delete_records) + 1
    return [*COMMANDS[:after], *jobs, *COMMANDS[after:]]


def build_parser() -> Parser:
    parser = Parser(prog="kafkalog", description="A Kafka-design log broker and its tools.")
    parser.add_argument("--version", action="version", version=f"kafkalog {_version()}")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands():
        command.add_parser(subcommands)
    return parser


def _version() -> str:
    try:
        return metadata.version("spark-kafka-source")
    except metadata.PackageNotFoundError:
        return "(version unknown: the spark-kafka-source distribution is not installed)"


def with_action_first(argv: list[str]) -> list[str]:
    """``topics --describe --topic T`` -> ``topics describe --topic T``: a Kafka tool's action option
    (when no action word is given) moved to where the action word goes; ValueError for two of them."""
    options = KAFKA_ACTION_OPTIONS.get(argv[0]) if argv else None
    if not options or (len(argv) > 1 and argv[1] in options.values()):
        return argv
    given = [i for i, arg in enumerate(argv[1:], 1) if arg in options]
    if len(given) > 1:
        raise ValueError(f"{' and '.join(argv[i] for i in given)} are two actions: give one")
    if not given:
        return argv
    return [argv[0], options[argv[given[0]]], *argv[1 : given[0]], *argv[given[0] + 1 :]]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = with_action_first(argv)
    except ValueError as exc:
        print(f"kafkalog {argv[0]}: {exc} (see 'kafkalog {argv[0]} --help')", file=sys.stderr)
        return USAGE
    args = build_parser().parse_args(argv)
    return args.func(args)
