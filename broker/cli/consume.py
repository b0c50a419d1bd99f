"""``kafkalog consume TOPIC``: print records from a start point (the beginning, an offset, or a time
resolved through the broker's time index) up to the end offsets measured when it starts, or on and on
with ``--follow``; one line per record, plain (tab-separated) or JSON. A read that has nothing to
print says why on stderr (and exits 0).

Partitions are read in turns, one fetch each. Plain lines are ``partition, offset, timestamp
(ISO-8601 UTC), key, value``, with keys and values as UTF-8 text (undecodable bytes as ``\\xNN``;
tabs and line ends escaped; ``null`` for null). JSON objects carry the exact bytes: text when they
are UTF-8, else base64 with ``"keyEncoding"``/``"valueEncoding": "base64"``; the same for each
header in ``"headers": [{"key": ..., "value": ...}, ...]``.
"""

import sys
import time

from broker.arguments import USAGE, group_id, non_negative_int, positive_int, timestamp_ms
from broker.client import EARLIEST, LATEST

from .common import OK, add_command, add_topic_argument, check_partition, partitions_of, run
from .consume_group import consume_in_group
from .record_lines import fetch_records, record_line

PROG = "kafkalog consume"
FOLLOW_POLL_SECONDS = 0.5  # with --follow, the wait after a round that found nothing new


def _offsets(client, topic: str, partitions: list[int], timestamp: int) -> dict:
    """``{partition: offset}`` for EARLIEST, LATEST or a time (-1 where no record is that recent)."""
    found = client.list_offsets({(topic, p): timestamp for p in partitions})
    return {p: offset for (_, p), (offset, _) in found.items()}


def _start_offsets(client, topic: str, partitions: list[int], latest: dict, args) -> dict:
    """Where each partition is read from: an explicit offset (capped at the end), the earliest, or
    the first offset at or after --from-time (the end when no record is that recent)."""
    if args.offset is not None:
        return {p: min(args.offset, latest[p]) for p in partitions}
    found = _offsets(client, topic, partitions, EARLIEST if args.from_time is None else args.from_time)
    return {p: latest[p] if found[p] < 0 else found[p] for p in partitions}


def _why_nothing(topic: str, partitions: list[int], latest: dict, args) -> str:
    """Why a read (not --follow) has nothing to print, for the note that says so."""
    what = f"partition {partitions[0]}" if len(partitions) == 1 else "every partition"
    ends = ", ".join(f"{p}: {latest[p]}" for p in partitions)
    if args.offset is not None:
        return f"--offset {args.offset} is at or past the end of {what} of {topic} (end offsets {ends})"
    if args.from_time is not None:
        return f"no record of {what} of {topic} is stamped at or after --from-time"
    return f"{what} of {topic} is empty"


def _consume(client, args) -> int:
    topic = args.topic
    partitions = partitions_of(client, topic, args.bootstrap_server)
    if args.partition is not None:
        check_partition(topic, args.partition, partitions)
        partitions = [args.partition]
    latest = _offsets(client, topic, partitions, LATEST)
    positions = _start_offsets(client, topic, partitions, latest, args)
    if not args.follow and all(positions[p] >= latest[p] for p in partitions):
        print(f"{PROG}: no records to print: {_why_nothing(topic, partitions, latest, args)}", file=sys.stderr)
    ends = None if args.follow else latest
    remaining = args.max_records
    try:
        while remaining is None or remaining > 0:
            active = [p for p in partitions if ends is None or positions[p] < ends[p]]
            if not active:
                break
            printed = 0
            for partition in active:
                end = None if ends is None else ends[partition]
                records, position = fetch_records(client, topic, partition, positions[partition], end,
                                             first=args.offset or 0)  # --follow from past the end: wait
                if end is not None and position == positions[partition]:
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
    return OK


def _run(args) -> int:
    if args.group is None:
        return run(PROG, args, _consume)
    for option, value in (("--partition", args.partition), ("--offset", args.offset), ("--from-time", args.from_time)):
        if value is not None:
            print(f"{PROG}: {option} cannot be used with --group (the group assigns the partitions and keeps their "
                  f"offsets) (see '{PROG} --help')", file=sys.stderr)
            return USAGE
    return run(PROG, args, consume_in_group)


def add_parser(commands) -> None:
    parser = add_command(
        commands, "consume", "print the records of a topic",
        "Print the records of TOPIC (every partition, or --partition), one line each, from the\n"
        "beginning (default), --offset N or --from-time, up to the end offsets measured when it\n"
        "starts (a batch tool), or on and on with --follow (stop it with Ctrl-C, exit status 0).\n"
        "plain lines: partition, offset, timestamp (UTC), key, value, tab-separated (null: null);\n"
        "json: {topic, partition, offset, timestamp (epoch ms), timestampType, key, value, headers\n"
        "[{key, value}, ...]}, bytes that are not UTF-8 in base64 with keyEncoding/valueEncoding\n"
        "\"base64\" (`kafkalog produce --format json` takes these lines back).", [
            "kafkalog consume page-views",
            "kafkalog consume --topic page-views --partition 0 --offset 1000 --max-records 10",
            "kafkalog consume page-views --from-time 2024-05-01T12:00:00Z --format json | jq .value",
            "kafkalog consume page-views --from-time 1714564800000 --follow",
            "kafkalog consume page-views --group dashboards --follow"])
    add_topic_argument(parser)
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at each partition's earliest offset "
                                                                     "(the default)")
    start.add_argument("--offset", type=non_negative_int, metavar="N",
                       help="start at offset N in every partition read (nothing below N is printed, even when a "
                            "partition is shorter and --follow waits for it)")
    start.add_argument("--from-time", type=timestamp_ms, metavar="TIME",
                       help="start at the first record stamped at or after TIME: ISO-8601 (UTC unless it "
                            "gives an offset, e.g. 2024-05-01T12:00:00+02:00) or epoch milliseconds")
    parser.add_argument("--partition", type=non_negative_int, metavar="N", help="read only partition N")
    parser.add_argument("--max-records", "--max-messages", type=positive_int, metavar="N",
                        help="stop after N records (--max-messages: Kafka's console consumer's name)")
    parser.add_argument("--format", choices=("plain", "json"), default="plain", help="output lines (default plain)")
    parser.add_argument("--follow", action="store_true", help="keep waiting for new records instead of stopping "
                                                              "at the end")
    parser.add_argument("--group", type=group_id, metavar="GROUP",
                        help="consume as a member of consumer group GROUP: the group's members share the partitions, "
                             "each starts at the group's committed offset and commits after printing (at least "
                             "once); Ctrl-C or SIGTERM leaves the group")
    parser.add_argument("--session-timeout-ms", type=positive_int, default=10_000, metavar="MS",
                        help="with --group, how long the group waits for this member's heartbeat before giving its "
                             "partitions to the others (default 10000; Kafka accepts 6000 to 1800000 by default)")
    parser.add_argument("--auto-offset-reset", choices=("earliest", "latest", "none"), default="earliest",
                        help="with --group, where a partition without a committed offset, or with one outside the "
                             "log, starts (default earliest; none: fail)")
    parser.set_defaults(func=_run)
