"""``kafkalog produce TOPIC``: send the lines of stdin or a file as records (the whole line, or
``key<SEP>value``, or JSON with key, value, headers and timestamp), batched per partition, with the
compression and acks asked for.

Records go to ``--partition``, or by key as Kafka's producers place them (murmur2), or, without a
key, to one partition with a leader at a time, moving on every 16 KiB. What has been read is sent as
soon as the input pauses, so lines typed or piped slowly are not held back.

No line is lost without being named: a line that cannot be a record, or that the broker refuses
(too large, invalid), is reported by its number and either skipped or ends the run
(``--on-error skip|stop``); the good lines batched with it are stored all the same
(``batches``), and a run that does not store every line ends with one line naming them
(``produce_report``).
"""

import os
import sys

from broker.arguments import USAGE, Subcommands, key_value, non_negative_int, timestamp_ms
from broker.client import Batcher
from broker.records.compression import Codec

from . import record_input
from .common import INTERRUPTED, OK, CommandError, add_command, add_topic_argument, check_partition, partitions_of, run
from .line_reader import LineReader
from .produce_report import PROG, LineReport
from .progress import Progress

ACKS = {"0": 0, "1": 1, "all": -1, "-1": -1}


def _produce(client, args, source, total_bytes: int | None) -> int:
    partitions = partitions_of(client, args.topic, args.bootstrap_server, create=True)
    if args.partition is not None:
        check_partition(args.topic, args.partition, partitions)
    show_progress = args.progress or (args.file is not None and sys.stderr.isatty())
    progress = Progress(total_bytes) if show_progress else None
    report = LineReport(args.on_error, ACKS[args.acks], progress)
    batcher = Batcher(
        client,
        args.topic,
        partitions,
        args.partition,
        Codec.from_name(args.compression),
        ACKS[args.acks],
        report.refused,
    )
    separator = os.fsencode(args.key_separator) if args.key_separator is not None else None
    parse = record_input.parser_for(args.format, separator, tuple(args.header), args.timestamp)

    def stopping() -> bool:
        return batcher.failure is not None or (bool(batcher.not_stored) and args.on_error == "stop")

    def when_idle() -> bool:
        batcher.flush()
        return stopping()

    reader = LineReader(source.fileno(), when_idle)
    number = 0
    try:
        for number, line in enumerate(reader, 1):
            try:
                batcher.add(number, parse(line))
            except record_input.BadLine as exc:
                batcher.refuse(number, str(exc))
            if batcher.not_stored and stopping():  # (a failure leaves lines not stored)
                break
            if progress:
                progress.update(reader.bytes_read, number)
        batcher.flush()
    except KeyboardInterrupt:  # how typed input often ends: quiet, unless lines were left unsent
        batcher.abandon()
        final = report.final_line(batcher, number, reader.finished, interrupted=True)
        if final:
            raise CommandError(final, INTERRUPTED) from None
        return INTERRUPTED
    if progress:
        progress.finish(reader.bytes_read, number)
    final = report.final_line(batcher, number, reader.finished)
    if final:
        raise CommandError(final)
    return OK


def _kafka_properties(args) -> str | None:
    """Kafka's console producer's ``--property parse.key=true`` (and ``key.separator=SEP``, a tab by
    default) as ``--key-separator``; ValueError for a property or value it does not take."""
    properties = dict(args.property)
    unknown = sorted(set(properties) - {"parse.key", "key.separator"})
    if unknown:
        raise ValueError(
            f"--property {unknown[0]}: not a property of this producer (it takes parse.key=true|false "
            f"and key.separator=SEP)"
        )
    parse_key = properties.get("parse.key", "false").lower()
    if parse_key not in ("true", "false"):
        raise ValueError(f"--property parse.key={properties['parse.key']}: the value is true or false")
    if parse_key == "false":
        if "key.separator" in properties:
            raise ValueError("--property key.separator needs --property parse.key=true (or give --key-separator)")
        return args.key_separator
    if args.key_separator is not None:
        raise ValueError("--property parse.key=true and --key-separator both say how to split the key: give one")
    return properties.get("key.separator", "\t")


def _run(args) -> int:
    try:
        args.key_separator = _kafka_properties(args)
    except ValueError as exc:
        print(f"{PROG}: {exc} (see '{PROG} --help')", file=sys.stderr)
        return USAGE
    if args.key_separator == "":
        print(f"{PROG}: --key-separator cannot be empty (for example --key-separator :)", file=sys.stderr)
        return USAGE
    if args.format == "json" and args.key_separator is not None:
        print(
            f'{PROG}: --key-separator splits plain lines; with --format json the key is the line\'s "key"',
            file=sys.stderr,
        )
        return USAGE
    if args.file is None:
        if sys.stdin is None:
            print(f"{PROG}: stdin is closed: give the lines on stdin or with --file PATH", file=sys.stderr)
            return USAGE
        return run(PROG, args, lambda client, args: _produce(client, args, sys.stdin, None))
    try:
        source = open(args.file, "rb")
    except OSError as exc:
        print(f"{PROG}: --file {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return USAGE
    with source:
        size = os.fstat(source.fileno()).st_size
        return run(PROG, args, lambda client, args: _produce(client, args, source, size or None))


def add_parser(commands: Subcommands) -> None:
    parser = add_command(
        commands,
        "produce",
        "send lines of stdin or a file as records",
        "Send each line of stdin (or of --file) as one record of TOPIC (created if missing where the\n"
        "broker creates topics on first use, auto.create.topics.enable, as for Kafka's producers), its value\n"
        "the line without its line end. With --key-separator, the text before the first separator is\n"
        "the key; with --format json each line is an object with key, value, headers and timestamp\n"
        "(the lines `kafkalog consume --format json` prints; bytes as base64 with keyEncoding or\n"
        'valueEncoding "base64"). Lines go out in batches (one per partition at a time), sent when\n'
        "full or when the input pauses. Records go to --partition, else by key (murmur2, as Kafka's\n"
        "producers), else to one partition at a time. A line that cannot be sent (no separator, bad\n"
        "JSON, refused by the broker as too large) is named by its number and, as --on-error says,\n"
        "skipped or the end of the run; the lines batched with it are stored all the same, and a\n"
        "run that did not store every line ends with one line naming those it did not. A progress\n"
        "line is shown on stderr for a file when stderr is a terminal (or with --progress).",
        [
            "kafkalog produce page-views < views.txt",
            "kafkalog produce --topic page-views --file views.txt --compression zstd --acks all",
            "printf 'user1:clicked\\nuser2:left\\n' | kafkalog produce events --key-separator :",
            "kafkalog produce --topic events --property parse.key=true --property key.separator=: < events.txt",
            "kafkalog produce events --header source=web --timestamp 2026-11-20T13:00:00Z < events.txt",
            'echo \'{"key": "u1", "value": "hi", "headers": {"trace": "7"}}\' | kafkalog produce events --format json',
            "kafkalog consume events --format json | kafkalog produce events-copy --format json",
            "kafkalog produce events --partition 2 --acks 0 --file events.log --progress --on-error skip",
        ],
    )
    add_topic_argument(parser)
    parser.add_argument("--file", metavar="PATH", help="read lines from this file instead of stdin")
    parser.add_argument(
        "--format",
        choices=("plain", "json"),
        default="plain",
        help="plain: each line is a value (or key SEP value); json: each line is a JSON object "
        "with key, value, headers, timestamp (default plain)",
    )
    parser.add_argument(
        "--key-separator",
        metavar="SEP",
        help="split each plain line at the first SEP into key and value (a line without it cannot be sent)",
    )
    parser.add_argument(
        "--property",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Kafka's console producer's parse.key=true (split each line at key.separator, a tab "
        "unless --property key.separator=SEP says) (repeatable)",
    )
    parser.add_argument(
        "--header",
        type=record_input.header,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="add this header to every record (repeatable; after a JSON line's own headers)",
    )
    parser.add_argument(
        "--timestamp",
        type=timestamp_ms,
        metavar="TIME",
        help="the timestamp of every record (unless a JSON line has its own): ISO-8601 or "
        "epoch milliseconds (default: when it is sent)",
    )
    parser.add_argument("--partition", type=non_negative_int, metavar="N", help="send every record to partition N")
    parser.add_argument(
        "--compression",
        "--compression-codec",
        choices=[c.name.lower() for c in Codec],
        default="none",
        help="compression codec of the batches (default none; --compression-codec: Kafka's console producer's name)",
    )
    parser.add_argument(
        "--acks",
        "--request-required-acks",
        choices=("0", "1", "all", "-1"),
        default="1",
        help="0: do not wait for the broker (refused records go unnoticed); 1: for the leader "
        "(default); all (-1): for every replica (--request-required-acks: Kafka's console "
        "producer's name)",
    )
    parser.add_argument(
        "--on-error",
        choices=("stop", "skip"),
        default="stop",
        help="a line that cannot be sent: stop reading there (default; what was read is still "
        "sent) or skip it and go on; either way it is named and the exit status is 1",
    )
    parser.add_argument(
        "--progress", action="store_true", help="show progress on stderr even when it is not a terminal (and for stdin)"
    )
    parser.set_defaults(func=_run)
