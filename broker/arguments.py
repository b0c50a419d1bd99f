"""The command-line argument types that ``kafkalog``'s commands (``broker/cli``) and the load job
(``jobs``) share: the parser whose usage errors are one line, ``--bootstrap-server``, ``--command-config``
(a properties file of client security settings), and value types
whose errors name the value and show a valid one. It sits below both, so neither imports the other's
internals."""

import argparse
import datetime
import re
from collections.abc import Sequence
from typing import NoReturn, TypeAlias

from broker.properties import read_properties

USAGE = 2  # the exit code of a usage error
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # what add_subparsers() returns


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line: ``kafkalog consume: <problem> (see ...)``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: {message} (see '{self.prog} --help')\n")

    def parse_known_args(  # type: ignore[override]  # typeshed overloads on the namespace's type; one here
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """An unknown option is an error of the (sub)command that met it, so its message points to
        that command's help (``kafkalog topics describe --help``), not to the top-level one."""
        parsed, extras = super().parse_known_args(args, argparse.Namespace() if namespace is None else namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def add_bootstrap_argument(parser: argparse.ArgumentParser, dest: str = "bootstrap_server") -> None:
    """``--bootstrap-server`` (Kafka's console tools) and ``--bootstrap-servers`` (Kafka's clients' and
    Spark's ``kafka.bootstrap.servers``): the same option."""
    parser.add_argument(
        "--bootstrap-server",
        "--bootstrap-servers",
        dest=dest,
        default=DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT[,HOST:PORT...]",
        help=f"the broker(s) to contact first (default {DEFAULT_BOOTSTRAP})",
    )


def add_command_config_argument(parser: argparse.ArgumentParser) -> None:
    """``--command-config FILE``: Kafka client settings (security.protocol, sasl.*, ssl.*), as Kafka's
    tools take them."""
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="a properties file of Kafka client settings: security.protocol, sasl.mechanism, "
        "sasl.jaas.config, ssl.truststore.location, ...",
    )


def add_isolation_level_argument(parser: argparse.ArgumentParser, default: str) -> None:
    """``--isolation-level`` (Kafka's consumer setting ``isolation.level``), default ``default``;
    the value is None when not given, so a setting in a client config file can stand instead."""
    parser.add_argument(
        "--isolation-level",
        choices=("read_committed", "read_uncommitted"),
        help=f"read_committed skips the records of aborted transactions and reads only up to the last "
        f"stable offset (no open transaction's records); read_uncommitted reads everything (default {default})",
    )


def command_config(path: str | None) -> dict[str, str]:
    """The settings of a ``--command-config`` file ({} without one); ConfigError names the file."""
    return read_properties(path, "--command-config") if path else {}


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds (for example 10)")
    return value


def non_negative_int(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0 (for example 3)")
    return int(text)


def positive_int(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1 (for example 100)")
    return int(text)


def group_id(text: str) -> str:
    """A consumer group id: any text but the empty one (Kafka refuses it: INVALID_GROUP_ID)."""
    if not text:
        raise argparse.ArgumentTypeError("a consumer group id cannot be empty (for example dashboards)")
    return text


def topic_pattern(text: str) -> str:
    """A regular expression naming topics (``--topic-pattern``)."""
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a regular expression ({exc}); for example 'events-.*'"
        ) from None
    return text


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (a setting given on the command line) -> ``(key, value)``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (a setting's name, '=', its value)")
    return key.strip(), value.strip()


def timestamp_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC when it names no offset)."""
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither ISO-8601 nor epoch milliseconds (for example 2024-05-01T12:00:00Z or 1714564800000)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return (moment - EPOCH) // datetime.timedelta(milliseconds=1)
