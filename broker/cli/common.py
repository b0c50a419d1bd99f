"""What the commands that talk to a broker (topics, produce, consume, ...) share: the arguments
spelled as Kafka's tools spell them (a topic as ``TOPIC`` or ``--topic TOPIC``), ``--command-config
FILE`` (security settings), ``--timeout``, help with examples and the exit codes, and ``run``, which
turns every failure into one line on stderr and an exit code. The argument types they share with the
load job (``--bootstrap-server``, ``--command-config``, ...) are in ``broker.arguments``."""

import argparse
import os
import sys
from collections.abc import Callable

from broker.arguments import (
    USAGE,
    Subcommands,
    add_bootstrap_argument,
    add_command_config_argument,
    command_config,
    positive_float,
)
from broker.client import (
    READ_UNCOMMITTED,
    AuthenticationError,
    AuthorizationError,
    KafkaClient,
    KafkaError,
    SecuritySettingError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    from_settings,
)
from broker.common.settings import ConfigError
from broker.protocol.errors import ErrorCode, error_name

OK, FAILED = 0, 1
INTERRUPTED = 130  # Ctrl-C, as shells report it
DEFAULT_TIMEOUT = 30.0
RETRIES, RETRY_BACKOFF_MS = 4, 200  # an unreachable broker fails after about 3 s of retries
EXIT_STATUS = (
    "exit status: 0 success, 1 the operation failed (broker unreachable, unknown topic,\n"
    "broker error, for produce a line not stored), 2 usage error, 130 interrupted (Ctrl-C)"
)


class CommandError(Exception):
    """A failure to report on one line of stderr, with the exit code to return."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


def add_command(
    commands: Subcommands, name: str, summary: str, description: str, examples: list[str]
) -> argparse.ArgumentParser:
    """A subcommand with ``--bootstrap-server`` and ``--timeout``, and examples and exit codes in its help."""
    parser = commands.add_parser(
        name,
        help=summary,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + "".join(f"  {example}\n" for example in examples) + "\n" + EXIT_STATUS,
    )
    add_bootstrap_argument(parser)
    add_command_config_argument(parser)
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for each answer of the broker (default {DEFAULT_TIMEOUT:g})",
    )
    return parser


def add_verb(
    verbs: Subcommands,
    prog: str,
    name: str,
    summary: str,
    description: str,
    examples: list[str],
    action: Callable[[KafkaClient, argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """A verb of the command ``prog`` (``kafkalog groups``...) with the common options, run as
    ``action(client, args)``."""
    parser = add_command(verbs, name, summary, description, examples)
    parser.set_defaults(func=lambda args: run(f"{prog} {name}", args, action))
    return parser


def add_format_argument(parser: argparse.ArgumentParser, json_help: str) -> None:
    """``--format plain|json``: plain text (the default) or, as ``json_help`` says, JSON."""
    parser.add_argument(
        "--format", choices=("plain", "json"), default="plain", help=f"plain text (default) or {json_help}"
    )


def add_topic_argument(
    parser: argparse.ArgumentParser, many: bool = False, required: bool = True
) -> "argparse._MutuallyExclusiveGroup":
    """The topic of a command (with ``many``, its topics) as arguments, ``produce T``, or as Kafka's
    tools take them, ``--topic T`` (repeatable with ``many``); ``args.topic`` (``args.topics``, None
    when not ``required`` and not given)."""
    return add_name_argument(parser, "topic", many, required)


def add_name_argument(
    parser: argparse.ArgumentParser, name: str, many: bool = False, required: bool = True
) -> "argparse._MutuallyExclusiveGroup":
    """What a command acts on (``name``: topic, group) as arguments or as ``--<name> X`` (repeatable
    with ``many``); ``args.<name>`` (``args.<name>s``). The group of the two: a caller may add
    another choice to it (``--all-groups``)."""
    choice = parser.add_mutually_exclusive_group(required=required)
    upper = name.upper()
    if many:
        choice.add_argument(f"{name}s", nargs="*", default=argparse.SUPPRESS, metavar=upper, help=f"the {name}s")
        choice.add_argument(
            f"--{name}",
            dest=f"{name}s",
            action="append",
            metavar=upper,
            help=f"a {name} (repeatable; the same as {upper} ...)",
        )
    else:
        choice.add_argument(name, nargs="?", default=argparse.SUPPRESS, metavar=upper, help=f"the {name}")
        choice.add_argument(f"--{name}", dest=name, metavar=upper, help=f"the {name} (the same as {upper})")
    return choice


def run(
    prog: str,
    args: argparse.Namespace,
    action: Callable[[KafkaClient, argparse.Namespace], int],
    isolation_level: int = READ_UNCOMMITTED,
) -> int:
    """``action(client, args)`` with a client of ``--bootstrap-server`` (reading at ``isolation_level``):
    its exit code, or one line on stderr and 1 (or the CommandError's code) when it fails."""
    try:
        security = from_settings(command_config(args.command_config))
    except (ConfigError, SecuritySettingError) as exc:
        return _fail(
            prog,
            f"--command-config {args.command_config}: {exc}" if isinstance(exc, SecuritySettingError) else str(exc),
            USAGE,
        )
    try:
        client = KafkaClient(
            args.bootstrap_server,
            timeout=args.timeout,
            client_id="kafkalog-cli",
            retries=RETRIES,
            retry_backoff_ms=RETRY_BACKOFF_MS,
            isolation_level=isolation_level,
            security=security,
        )
    except ValueError as exc:  # a malformed --bootstrap-server
        return _fail(prog, f"--bootstrap-server: {exc}", USAGE)
    try:
        with client:
            return action(client, args)
    except BrokenPipeError:  # stdout's reader went away (`| head`): not an error
        _silence_stdout()
        return OK
    except CommandError as exc:
        return _fail(prog, str(exc), exc.code)
    except (KafkaError, UnsupportedVersionError, AuthenticationError, OSError) as exc:  # OSError: connections, stdout
        return _fail(prog, str(exc), FAILED)
    except KeyboardInterrupt:
        return INTERRUPTED


def _fail(prog: str, message: str, code: int) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def partitions_of(client: KafkaClient, topic: str, bootstrap: str, create: bool = False) -> list[int]:
    """The topic's partitions; with ``create``, a missing topic is created where the broker creates
    topics on first use (``auto.create.topics.enable``), as Kafka's producers ask it to."""
    try:
        return client.partitions_of(topic, create)
    except UnknownTopicOrPartitionError as exc:
        if exc.code == ErrorCode.INVALID_TOPIC_EXCEPTION:
            raise CommandError(
                f"{topic!r} is not a valid topic name: at most 249 ASCII letters, digits, '.', '_' "
                f"and '-' (INVALID_TOPIC_EXCEPTION)"
            ) from None
        if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise CommandError(f"topic {topic!r}: {error_name(exc.code)} on {bootstrap}") from None
        unless = (
            " (and the broker does not create topics on first use: auto.create.topics.enable=false; "
            "create it with `kafkalog topics create`)"
            if create
            else ""
        )
        raise CommandError(f"topic {topic!r} does not exist on {bootstrap}{unless}") from None
    except AuthorizationError as exc:  # denied, existing or not: Kafka does not tell
        raise CommandError(str(exc)) from None


def check_partition(topic: str, partition: int, partitions: list[int]) -> None:
    if partition not in partitions:
        raise CommandError(
            f"topic {topic!r} has no partition {partition} (its partitions are {partitions[0]}-{partitions[-1]})"
        )
