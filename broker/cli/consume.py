"""``kafkalog consume TOPIC``: print records from a start point (the beginning, an offset, or a time
resolved through the broker's time index) up to the end offsets measured when it starts, or on and on
with ``--follow``; one line per record, plain (tab-separated) or JSON. A read that has nothing to
print says why on stderr (and exits 0).

Partitions are read in turns, one fetch each. Plain lines are ``partition, offset, timestamp
(ISO-8601 UTC), key, value`` (Kafka's ``--property print.key=false`` ... leave columns out), with
keys and values as escaped UTF-8 text (``record_text``). JSON objects carry the exact bytes: text
when they are UTF-8, else base64 with ``"keyEncoding"``/``"valueEncoding": "base64"``; the same for
each header in ``"headers": [{"key": ..., "value": ...}, ...]``.

A partition whose broker is down (no leader) is left out of a read, said in one line on stderr, and
the others are read (exit status 1, as not everything was printed). With ``--follow``, as Kafka's
consumer does, a partition that cannot be read (its broker down, every broker unreachable, also
when it starts) is tried again every few seconds until it can, or until ``--retry-for`` runs out;
one line on stderr says when it stops being read and one when it is read again.

``--isolation-level read_committed`` (Kafka's console consumer's option; read_uncommitted by
default, as there) reads up to the last stable offset and leaves out the records of aborted
transactions; transaction markers are never printed, under either level.
"""

import argparse
import sys
import time

from broker.arguments import (
    USAGE,
    Subcommands,
    add_isolation_level_argument,
    group_id,
    key_value,
    non_negative_int,
    positive_float,
    positive_int,
    timestamp_ms,
)
from broker.client import EARLIEST, ISOLATION_LEVELS, LATEST, KafkaError

from .common import FAILED, OK, CommandError, add_command, add_topic_argument, check_partition, partitions_of, run
from .consume_group import consume_in_group
from .outages import Outages, is_outage, wait_out
from .record_lines import PLAIN_COLUMNS, fetch_records, record_line

PROG = "kafkalog consume"
FOLLOW_POLL_SECONDS = 0.5  # with --follow, the wait after a round that found nothing new
# Kafka's console consumer's --property print.X=true|false: the plain line's columns
_PRINT_PROPERTIES = {f"print.{column}": column for column in PLAIN_COLUMNS}


def _offsets(client, topic: str, partitions: list[int], timestamp: int) -> dict:
    """``{partition: offset}`` for EARLIEST, LATEST or a time (-1 where no record is that recent)."""
    found = client.list_offsets({(topic, p): timestamp for p in partitions})
    return {p: offset for (_, p), (offset, _) in found.items()}


def _start_offsets(client, topic: str, partitions: list[int], latest: dict, args) -> dict:
    """Where each partition is read from: an explicit offset (capped at the end), the earliest, or
    the first offset at or after --from-time (the end when no record is that recent)."""
    if args.offset == "latest":
        return {p: latest[p] for p in partitions}
    if args.offset is not None:
        return {p: min(args.offset, latest[p]) for p in partitions}
    found = _offsets(client, topic, partitions, EARLIEST if args.from_time is None else args.from_time)
    return {p: latest[p] if found[p] < 0 else found[p] for p in partitions}


def _why_nothing(topic: str, partitions: list[int], latest: dict, args) -> str:
    """Why a read (not --follow) has nothing to print, for the note that says so."""
    what = f"partition {partitions[0]}" if len(partitions) == 1 else "every partition"
    ends = ", ".join(f"{p}: {latest[p]}" for p in partitions)
    if args.offset == "latest":
        return f"--offset latest starts at the end of {what} of {topic} (--follow prints the records that come)"
    if args.offset is not None:
        return f"--offset {args.offset} is at or past the end of {what} of {topic} (end offsets {ends})"
    if args.from_time is not None:
        return f"no record of {what} of {topic} is stamped at or after --from-time"
    return f"{what} of {topic} is empty"


def _with_leaders(client, topic: str, partitions: list[int], follow: bool) -> list[int]:
    """The partitions that have a leader; the others named in one line on stderr (an error when
    none has one and there is nothing to wait for)."""
    metadata = client.metadata([topic])
    leaderless = [p for p in partitions if metadata.leaders.get((topic, p), -1) < 0]
    if not leaderless:
        return partitions
    down = sorted({r for p in leaderless for r in metadata.replicas.get((topic, p), ()) if r not in metadata.brokers})
    names = ", ".join(f"{topic}-{p}" for p in leaderless)
    why = f"{'has' if len(leaderless) == 1 else 'have'} no leader (LEADER_NOT_AVAILABLE" + (
        f": broker {', '.join(map(str, down))} is down)" if down else ")"
    )
    if len(leaderless) == len(partitions) and not follow:
        raise CommandError(f"{names} {why}: nothing can be read")
    later = (
        (
            "they are read once they have a leader again"
            if len(leaderless) > 1
            else "it is read once it has a leader again"
        )
        if follow
        else "not read (exit status 1)"
    )
    print(f"{PROG}: {names} {why}: reading the other partitions; {later}", file=sys.stderr)
    return [p for p in partitions if p not in leaderless]


def _start(client, args) -> tuple[list[int], list[int], dict, dict]:
    """The partitions to read, those of them that have a leader, their latest offsets and where
    each is read from."""
    partitions = partitions_of(client, args.topic, args.bootstrap_server)
    if args.partition is not None:
        check_partition(args.topic, args.partition, partitions)
        partitions = [args.partition]
    readable = partitions if args.partition is not None else _with_leaders(client, args.topic, partitions, args.follow)
    latest = _offsets(client, args.topic, readable, LATEST)
    return partitions, readable, latest, _start_offsets(client, args.topic, readable, latest, args)


def _consume(client, args) -> int:
    topic = args.topic
    outages = Outages(PROG, args.retry_for)
    # with --follow, an outage when it starts is waited out too
    partitions, readable, latest, positions = wait_out(
        outages if args.follow else None, topic, lambda: _start(client, args)
    )
    if not args.follow and all(positions[p] >= latest[p] for p in readable):
        print(f"{PROG}: no records to print: {_why_nothing(topic, readable, latest, args)}", file=sys.stderr)
    first = args.offset if isinstance(args.offset, int) else 0  # --follow from past the end: wait for it
    skipped = not args.follow and len(readable) < len(partitions)
    if not args.follow:
        partitions = readable
    ends = None if args.follow else latest
    remaining = args.max_records
    try:
        while remaining is None or remaining > 0:
            active = [p for p in partitions if ends is None or positions[p] < ends[p]]
            if not active:
                break
            printed = 0
            for partition in active:
                if not outages.ready(f"{topic}-{partition}"):
                    continue
                end = None if ends is None else ends[partition]
                try:
                    if partition not in positions:  # --follow: a partition without a leader at the start
                        start = _offsets(client, topic, [partition], LATEST)
                        positions[partition] = _start_offsets(client, topic, [partition], start, args)[partition]
                    records, position = fetch_records(client, topic, partition, positions[partition], end, first=first)
                except KafkaError as exc:
                    if not args.follow or not is_outage(exc):
                        raise
                    outages.failed(f"{topic}-{partition}", exc)
                    continue
                outages.read(f"{topic}-{partition}")
                if ends is not None and position == positions[partition]:
                    ends[partition] = position  # nothing left below the end: the log was cut meanwhile
                positions[partition] = position
                shown = records if remaining is None else records[:remaining]
                for entry, record in shown:
                    print(record_line(topic, partition, entry, record, args.format))
                printed += len(shown)
                if remaining is not None:
                    remaining -= len(shown)
                    if remaining == 0:
                        break
            sys.stdout.flush()
            if args.follow and not printed:
                time.sleep(FOLLOW_POLL_SECONDS)
    except KeyboardInterrupt:
        if not args.follow:
            raise
    return FAILED if skipped else OK


def _offset(text: str) -> int | str | None:
    """``--offset``: a whole number, ``earliest`` (None: the default start) or ``latest``."""
    if text in ("earliest", "latest"):
        return None if text == "earliest" else text
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0, earliest or latest (for example 3)")
    return int(text)


def _plain_columns(properties: list[tuple[str, str]]) -> tuple[str, ...]:
    """The plain line's columns after Kafka's ``--property print.X=true|false`` options (every
    column by default); ValueError naming a property or value it does not take."""
    shown = dict.fromkeys(PLAIN_COLUMNS, True)
    for key, value in properties:
        if key not in _PRINT_PROPERTIES:
            raise ValueError(
                f"--property {key}: not a property of this consumer (it takes "
                f"{', '.join(f'{name}=true|false' for name in _PRINT_PROPERTIES)})"
            )
        if value.lower() not in ("true", "false"):
            raise ValueError(f"--property {key}={value}: the value is true or false")
        shown[_PRINT_PROPERTIES[key]] = value.lower() == "true"
    columns = tuple(column for column, show in shown.items() if show)
    if not columns:
        raise ValueError("--property: every column is left out (print.value=true shows the values)")
    return columns


def _run(args) -> int:
    if args.property:
        if args.format == "json":
            print(
                f"{PROG}: --property print.* chooses the columns of plain lines; --format json prints every "
                f"field (see '{PROG} --help')",
                file=sys.stderr,
            )
            return USAGE
        try:
            args.format = _plain_columns(args.property)
        except ValueError as exc:
            print(f"{PROG}: {exc} (see '{PROG} --help')", file=sys.stderr)
            return USAGE
    if args.retry_for is not None and not args.follow:
        print(f"{PROG}: --retry-for bounds the retries of --follow (see '{PROG} --help')", file=sys.stderr)
        return USAGE
    isolation_level = ISOLATION_LEVELS[args.isolation_level or "read_uncommitted"]
    if args.group is None:
        return run(PROG, args, _consume, isolation_level)
    for option, value in (("--partition", args.partition), ("--offset", args.offset), ("--from-time", args.from_time)):
        if value is not None:
            print(
                f"{PROG}: {option} cannot be used with --group (the group assigns the partitions and keeps their "
                f"offsets) (see '{PROG} --help')",
                file=sys.stderr,
            )
            return USAGE
    return run(PROG, args, consume_in_group, isolation_level)


def add_parser(commands: Subcommands) -> None:
    parser = add_command(
        commands,
        "consume",
        "print the records of a topic",
        "Print the records of TOPIC (every partition, or --partition), one line each, from the\n"
        "beginning (default), --offset N or --from-time, up to the end offsets measured when it\n"
        "starts (a batch tool), or on and on with --follow (stop it with Ctrl-C, exit status 0;\n"
        "a partition whose broker is down is retried until it returns, or for --retry-for).\n"
        "A partition without a leader is left out (named on stderr, exit status 1).\n"
        "plain lines: partition, offset, timestamp (UTC), key, value, tab-separated (null: null;\n"
        "a backslash as \\\\, tab, line feed, CR as \\t \\n \\r, other control bytes and bytes that are\n"
        "not UTF-8 as \\xNN, other characters that do not print as \\uNNNN);\n"
        "json: {topic, partition, offset, timestamp (epoch ms), timestampType, key, value, headers\n"
        "[{key, value}, ...]}, bytes that are not UTF-8 in base64 with keyEncoding/valueEncoding\n"
        '"base64" (`kafkalog produce --format json` takes these lines back).',
        [
            "kafkalog consume page-views",
            "kafkalog consume --topic page-views --partition 0 --offset 1000 --max-records 10",
            "kafkalog consume page-views --from-time 2024-05-01T12:00:00Z --format json | jq .value",
            "kafkalog consume page-views --from-time 1714564800000 --follow",
            "kafkalog consume --topic page-views --from-beginning --max-messages 10 --property print.key=true "
            "--property print.partition=false",
            "kafkalog consume page-views --group dashboards --follow",
        ],
    )
    add_topic_argument(parser)
    start = parser.add_mutually_exclusive_group()
    start.add_argument(
        "--from-beginning", action="store_true", help="start at each partition's earliest offset (the default)"
    )
    start.add_argument(
        "--offset",
        type=_offset,
        metavar="N",
        help="start at offset N in every partition read (nothing below N is printed, even when a "
        "partition is shorter and --follow waits for it); as Kafka's console consumer, "
        "earliest (the default) or latest (the end: with --follow, only new records)",
    )
    start.add_argument(
        "--from-time",
        type=timestamp_ms,
        metavar="TIME",
        help="start at the first record stamped at or after TIME: ISO-8601 (UTC unless it "
        "gives an offset, e.g. 2024-05-01T12:00:00+02:00) or epoch milliseconds",
    )
    parser.add_argument("--partition", type=non_negative_int, metavar="N", help="read only partition N")
    parser.add_argument(
        "--max-records",
        "--max-messages",
        type=positive_int,
        metavar="N",
        help="stop after N records (--max-messages: Kafka's console consumer's name)",
    )
    parser.add_argument("--format", choices=("plain", "json"), default="plain", help="output lines (default plain)")
    parser.add_argument(
        "--follow", action="store_true", help="keep waiting for new records instead of stopping at the end"
    )
    add_isolation_level_argument(parser, "read_uncommitted")
    parser.add_argument(
        "--retry-for",
        type=positive_float,
        metavar="SECONDS",
        help="with --follow, give up (exit status 1) on a partition that could not be read for "
        "SECONDS (its broker down or unreachable); by default it is retried until it can be",
    )
    parser.add_argument(
        "--property",
        type=key_value,
        action="append",
        default=[],
        metavar="print.X=true|false",
        help="Kafka's console consumer's print.partition, print.offset, print.timestamp, print.key, "
        "print.value: show or leave out that column of plain lines (all shown by default; "
        "repeatable)",
    )
    parser.add_argument(
        "--group",
        type=group_id,
        metavar="GROUP",
        help="consume as a member of consumer group GROUP: the group's members share the partitions, "
        "each starts at the group's committed offset and commits after printing (at least "
        "once); Ctrl-C or SIGTERM leaves the group",
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=positive_int,
        default=10_000,
        metavar="MS",
        help="with --group, how long the group waits for this member's heartbeat before giving its "
        "partitions to the others (default 10000; Kafka accepts 6000 to 1800000 by default)",
    )
    parser.add_argument(
        "--auto-offset-reset",
        choices=("earliest", "latest", "none"),
        default="earliest",
        help="with --group, where a partition without a committed offset, or with one outside the "
        "log, starts (default earliest; none: fail)",
    )
    parser.set_defaults(func=_run)
