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

import datetime
import json
import sys
import time

from broker.arguments import EPOCH, non_negative_int, positive_int, timestamp_ms
from broker.client import EARLIEST, LATEST
from broker.records import record_set
from broker.records.errors import CorruptRecordError

from .common import OK, CommandError, add_command, add_topic_argument, check_partition, partitions_of, run
from .record_text import json_field, json_headers, text

PROG = "kafkalog consume"
FETCH_BYTES = 1024 * 1024
FOLLOW_POLL_SECONDS = 0.5  # with --follow, the wait after a round that found nothing new
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


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


def _records(client, topic: str, partition: int, position: int, end: int | None, first: int = 0):
    """The data records of one fetch from ``position`` (none below ``first``, nor at or above ``end``
    if given), and the next position."""
    fetched = client.fetch(topic, partition, position, FETCH_BYTES)
    records, next_position = [], position
    lowest = max(position, first)
    try:
        for entry in record_set.iter_batches(fetched.records):
            next_position = max(next_position, entry.last_offset + 1)
            if not entry.is_control:
                records += [(entry, r) for r in entry.records
                            if lowest <= r.offset and (end is None or r.offset < end)]
    except CorruptRecordError as exc:
        raise CommandError(f"{topic}-{partition}: the batch at offset {next_position} is unreadable: {exc}") from None
    return records, next_position


def _iso(timestamp: int) -> str:
    """ISO-8601 UTC with milliseconds; "none" for a record without a timestamp (-1)."""
    if timestamp < 0:
        return "none"
    try:
        moment = EPOCH + datetime.timedelta(milliseconds=timestamp)
    except OverflowError:  # past the year 9999: only the number can show it
        return str(timestamp)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _line(topic: str, partition: int, entry, record, form: str) -> str:
    if form == "plain":
        return f"{partition}\t{record.offset}\t{_iso(record.timestamp)}\t{text(record.key)}\t{text(record.value)}"
    out = {"topic": topic, "partition": partition, "offset": record.offset, "timestamp": record.timestamp,
           "timestampType": TIMESTAMP_TYPES.get(int(entry.timestamp_type), "NoTimestampType")}
    json_field(out, "key", record.key)
    json_field(out, "value", record.value)
    out["headers"] = json_headers(record.headers)
    return json.dumps(out, ensure_ascii=False)


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
                records, position = _records(client, topic, partition, positions[partition], end,
                                             first=args.offset or 0)  # --follow from past the end: wait
                if end is not None and position == positions[partition]:
                    ends[partition] = position  # nothing left below the end: the log was cut meanwhile
                positions[partition] = position
                shown = records if remaining is None else records[:remaining]
                for entry, record in shown:
                    print(_line(topic, partition, entry, record, args.format))
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
    return run(PROG, args, _consume)


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
            "kafkalog consume page-views --from-time 1714564800000 --follow"])
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
    parser.set_defaults(func=_run)
