"""``kafkalog dump-log``: print and check the batches of log segments and the entries of their indexes."""

import argparse
import json
import sys

from broker.log import dump


def _dump_log(args) -> int:
    try:
        found_problem = False
        for kind, item in dump.dump(args.paths, records=args.records):
            if args.json:
                if kind == "file":
                    continue
                payload = item if kind == "batch" else {kind if kind != "index" else "indexEntry": item}
                print(json.dumps(payload, sort_keys=True))
            else:
                print(dump.format_text(kind, item))
            found_problem = found_problem or kind == "invalid" or (kind == "batch" and not item["crcValid"])
    except dump.DumpUsageError as exc:
        print(f"kafkalog dump-log: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 1 if found_problem else 0


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "dump-log", help="print and check the batches of log segments and indexes",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print every batch of Kafka log segment files (.log), or the entries of their\n"
                    "indexes (.index, .timeindex), checking sizes and CRCs. A partition directory\n"
                    "stands for all of its .log files.",
        epilog="examples:\n"
               "  kafkalog dump-log /var/lib/kafkalog/events-0\n"
               "  kafkalog dump-log --records events-0/00000000000000000000.log\n"
               "  kafkalog dump-log --json events-0 | jq 'select(.crcValid == false)'\n\n"
               "exit status: 0 every byte is valid, 1 corruption found, 2 usage error")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="segment file or partition directory")
    parser.add_argument("--json", action="store_true", help="one JSON object per batch, then a summary")
    parser.add_argument("--records", action="store_true", help="also print each record's offset and sizes")
    parser.set_defaults(func=_dump_log)
