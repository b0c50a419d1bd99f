"""``kafkalog dump-log``: print and check the batches of log segments and the entries of their indexes.

Exit status: 0 when every byte is valid; 1 when the summary lists any problem (a bad CRC, records
that cannot be decoded, a torn tail, a bad index entry); 2 on a usage error or a path that cannot
be read (missing, not a regular file or directory, permission denied, an I/O error).
"""

import argparse
import json
import sys

from broker.arguments import Subcommands
from broker.coordinator.offsets_json import record_json
from broker.coordinator.offsets_records import OffsetsRecordError
from broker.log import dump

from .record_text import json_field, json_headers, text


def _dump_log(args) -> int:
    paths = args.paths + [path for files in args.files for path in files]
    if not paths:
        print(
            "kafkalog dump-log: give the segment files or partition directories: PATH ... or --files "
            "PATH[,PATH...] (see 'kafkalog dump-log --help')",
            file=sys.stderr,
        )
        return 2
    try:
        data = args.print_data or args.offsets_decoder
        show = _show_offsets if args.offsets_decoder else _show_data
        for kind, item in dump.dump(paths, records=args.records or data, data=data):
            for record in item.get("records", ()) if data else ():
                show(record, args.json)
            if args.json:
                if kind == "file":
                    continue
                payload = item if kind == "batch" else {kind if kind != "index" else "indexEntry": item}
                print(json.dumps(payload, sort_keys=True))
            else:
                print(dump.format_text(kind, item))
            if kind == "summary":
                summary = item
    except dump.DumpUsageError as exc:
        print(f"kafkalog dump-log: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 1 if summary["invalid"] else 0


def _file_list(text: str) -> list[str]:
    """kafka-dump-log's ``--files a.log,b.index``."""
    paths = [path.strip() for path in text.split(",")]
    if not all(paths):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of paths")
    return paths


def _show_data(record: dict, as_json: bool) -> None:
    """A record's key, payload and headers, as bytes from the dump, made printable in place."""
    key, payload, headers = record.pop("key"), record.pop("payload"), record.pop("headers")
    if as_json:
        json_field(record, "key", key)
        json_field(record, "payload", payload)
        record["headers"] = json_headers(headers)
    else:
        record.update(key=text(key), payload=text(payload), headers=[f"{k}={text(v)}" for k, v in headers])


def _show_offsets(record: dict, as_json: bool) -> None:
    """A ``__consumer_offsets`` record's key and value decoded (Kafka's JSON shape), in place; a
    record that does not decode is shown as --print-data shows it, with the reason."""
    key, payload = record["key"], record["payload"]
    _show_data(record, as_json)
    try:
        key_json, value_json = record_json(key, payload)
    except OffsetsRecordError as exc:
        record["offsetsDecoderError"] = str(exc)
        return
    if as_json:
        record.pop("keyEncoding", None)
        record.pop("payloadEncoding", None)
        record.update(key=key_json, payload=value_json)
    else:
        record.update(key=json.dumps(key_json), payload=json.dumps(value_json))


def add_parser(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "dump-log",
        help="print and check the batches of log segments and indexes",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print every batch of Kafka log segment files (.log), or the entries of their\n"
        "indexes (.index, .timeindex, .txnindex), checking sizes and CRCs. A partition\n"
        "directory stands for all of its .log files. Each batch shows its partitionLeaderEpoch;\n"
        "control batches show their type (COMMIT, ABORT) and coordinator epoch; a .txnindex\n"
        "lists aborted transactions; a partition's leader-epoch-checkpoint prints each epoch\n"
        "and the offset it starts at.",
        epilog="examples:\n"
        "  kafkalog dump-log /var/lib/kafkalog/events-0\n"
        "  kafkalog dump-log --records events-0/00000000000000000000.log\n"
        "  kafkalog dump-log --print-data events-0 | grep 'key: user-42'\n"
        "  kafkalog dump-log --json events-0 | jq 'select(.crcValid == false)'\n"
        "  kafkalog dump-log events-0/00000000000000000000.txnindex\n"
        "  kafkalog dump-log --offsets-decoder /var/lib/kafkalog/__consumer_offsets-12\n"
        "  kafkalog dump-log /var/lib/kafkalog/events-0/leader-epoch-checkpoint\n"
        "  kafkalog dump-log --files events-0/00000000000000000000.log --print-data-log   # Kafka's spelling\n\n"
        "exit status: 0 every byte is valid, 1 corruption found (any problem in the summary),\n"
        "2 usage error or a path that cannot be read",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="segment file, partition directory or leader-epoch-checkpoint"
    )
    parser.add_argument(
        "--files",
        type=_file_list,
        action="append",
        default=[],
        metavar="PATH[,PATH...]",
        help="kafka-dump-log's spelling: comma-separated paths (repeatable; with or instead of PATH)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per batch, then a summary")
    parser.add_argument(
        "--records",
        "--deep-iteration",
        action="store_true",
        help="also print each record's offset and sizes (--deep-iteration: kafka-dump-log's name)",
    )
    parser.add_argument(
        "--print-data",
        "--print-data-log",
        action="store_true",
        help="also print each record's key, payload and headers (implies --records; as "
        "kafka-dump-log --print-data-log)",
    )
    parser.add_argument(
        "--offsets-decoder",
        action="store_true",
        help="decode __consumer_offsets records: committed offsets and group metadata as "
        "JSON keys and payloads (implies --print-data; as kafka-dump-log --offsets-decoder)",
    )
    parser.set_defaults(func=_dump_log)
