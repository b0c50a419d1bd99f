"""``kafkalog users add|delete|list``: the SCRAM credentials of a broker's log directory (Kafka:
``kafka-configs --alter --entity-type users --add-config 'SCRAM-SHA-512=[password=...]'``).

Only the salted keys are stored (``scram-credentials.json`` in the log directory, readable by its
owner only), never the password; a running broker sees a change at its next authentication. The password comes from
``--password`` or, better (it stays out of the shell's history and the process list),
``--password-file`` (``-`` reads standard input).
"""

import argparse
import os
import sys

from broker.arguments import USAGE, Parser, Subcommands
from broker.security.credentials import CredentialsError, ScramCredentials
from broker.security.sasl import SCRAM_ITERATIONS, SCRAM_MECHANISMS

from .common import FAILED, OK

PROG = "kafkalog users"
ALL_MECHANISMS = "all"


def _password(args) -> str:
    if (args.password is None) == (args.password_file is None):
        raise ValueError("give exactly one of --password and --password-file")
    if args.password is not None:
        password = args.password
    else:
        try:
            password = (
                sys.stdin.read() if args.password_file == "-" else open(args.password_file, encoding="utf-8").read()
            )
        except OSError as exc:
            raise ValueError(f"--password-file {args.password_file}: {exc.strerror or exc}") from None
        password = password.rstrip("\r\n")
    if not password:
        raise ValueError("the password is empty")
    return password


def _mechanisms(text: str) -> list[str]:
    return list(SCRAM_MECHANISMS) if text == ALL_MECHANISMS else [text]


def _add(args) -> int:
    try:
        password = _password(args)
    except ValueError as exc:
        return _fail(str(exc), USAGE)
    store = ScramCredentials(args.log_dir)
    for mechanism in _mechanisms(args.mechanism):
        store.add(args.user, mechanism, password, args.iterations)
        print(f"user {args.user}: {mechanism} credentials stored ({args.iterations} iterations)")
    return OK


def _delete(args) -> int:
    _existing(args.log_dir)
    store = ScramCredentials(args.log_dir)
    mechanism = None if args.mechanism == ALL_MECHANISMS else args.mechanism
    if not store.delete(args.user, mechanism):
        return _fail(
            f"user {args.user} has no {'SCRAM' if mechanism is None else mechanism} credentials in {store.path}", FAILED
        )
    print(f"user {args.user}: {'all SCRAM' if mechanism is None else mechanism} credentials deleted")
    return OK


def _list(args) -> int:
    _existing(args.log_dir)
    store = ScramCredentials(args.log_dir)
    users = store.users()
    for user, mechanisms in users.items():
        print(f"{user}\t{','.join(mechanisms)}")
    if not users:
        print(f"{PROG}: note: no SCRAM users in {store.path}", file=sys.stderr)
    return OK


def _existing(log_dir: str) -> None:
    """A log directory to read must exist (``add`` creates it, as before a broker's first start)."""
    if not os.path.isdir(log_dir):
        reason = "not a directory" if os.path.exists(log_dir) else "no such directory"
        raise CredentialsError(f"--log-dir {log_dir}: {reason}")


def _run(args) -> int:
    try:
        return args.action(args)
    except CredentialsError as exc:
        return _fail(str(exc), FAILED)


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return code


def add_parser(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "users",
        help="add, delete or list the SCRAM users of a broker's log directory",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n", 1)[1],
        epilog="examples:\n"
        "  kafkalog users add alice --mechanism SCRAM-SHA-512 --password-file alice.txt "
        "--log-dir /var/lib/kafkalog\n"
        "  kafkalog users add bob --password s3cret --log-dir data          # both SCRAM mechanisms\n"
        "  kafkalog users delete bob --log-dir data\n"
        "  kafkalog users list --log-dir data\n\n"
        "exit status: 0 success, 1 failed (no such user, unreadable file), 2 usage error",
    )
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="add|delete|list", parser_class=Parser)
    for verb, action, summary in (
        ("add", _add, "store a user's SCRAM credentials (replacing any)"),
        ("delete", _delete, "delete a user's SCRAM credentials"),
        ("list", _list, "list the users and their mechanisms"),
    ):
        sub = verbs.add_parser(verb, help=summary, description=summary)
        if verb != "list":
            sub.add_argument("user", metavar="USER")
            sub.add_argument(
                "--mechanism",
                choices=[*SCRAM_MECHANISMS, ALL_MECHANISMS],
                default=ALL_MECHANISMS,
                help="SCRAM-SHA-256, SCRAM-SHA-512 or all (default all)",
            )
        if verb == "add":
            sub.add_argument("--password", help="the password (visible to other users of the machine)")
            sub.add_argument("--password-file", metavar="FILE", help="a file holding the password; - for stdin")
            sub.add_argument(
                "--iterations",
                type=int,
                default=SCRAM_ITERATIONS,
                help=f"SCRAM iterations (default {SCRAM_ITERATIONS}, at least 4096)",
            )
        sub.add_argument("--log-dir", required=True, help="the broker's log directory")
        sub.set_defaults(func=_run, action=action)
