"""The ``kafkalog`` command line: one entry point, one subcommand per tool.

Exit codes: 0 success, 1 the tool ran and found a problem (or failed), 2 usage errors.
"""

import argparse
import json
import sys

from broker.log import dump
from broker.log.config import ConfigError
from broker.log.errors import LogError


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


def _broker(args) -> int:
    from broker.server import config as broker_config
    from broker.server.broker import run
    try:
        properties = broker_config.read_properties(args.config) if args.config else {}
        properties.update(broker_config.parse_set_option(pair) for pair in args.set)
        config = broker_config.build(properties, log_dir=args.log_dir, host=args.host, port=args.port,
                                     broker_id=args.broker_id)
        return run(config)
    except (ConfigError, LogError, OSError) as exc:
        print(f"kafkalog broker: {exc}", file=sys.stderr)
        return 1


def add_broker_parser(commands) -> None:
    from broker.server.config import KNOWN_KEYS
    parser = commands.add_parser(
        "broker", help="run the broker (Kafka wire protocol) on a log directory",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Serve the logs in DIR over the Kafka protocol, so unmodified Kafka clients can\n"
                    "produce, consume and create topics. Prints one line when it accepts connections:\n"
                    "  kafkalog broker <id> listening on <host>:<port>\n"
                    "SIGTERM or Ctrl-C shuts it down cleanly (flush, checkpoints, clean-shutdown marker).",
        epilog="examples:\n"
               "  kafkalog broker --log-dir /var/lib/kafkalog\n"
               "  kafkalog broker --log-dir data --port 0 --set num.partitions=4 --set log.retention.hours=24\n"
               "  kafkalog broker --log-dir data --config server.properties\n\n"
               "settings (Kafka's names and meanings):\n  " + "\n  ".join(KNOWN_KEYS))
    parser.add_argument("--log-dir", help="the log directory (Kafka: log.dirs)")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 9092; 0 picks a free one)")
    parser.add_argument("--broker-id", type=int, help="broker id (default 0; Kafka: broker.id)")
    parser.add_argument("--config", metavar="FILE", help="a Kafka-style server.properties file")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a Kafka setting, for example --set log.segment.bytes=104857600 (repeatable)")
    parser.set_defaults(func=_broker)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafkalog", description="A Kafka-design log broker and its tools.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    dump_parser = commands.add_parser(
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
    dump_parser.add_argument("paths", nargs="+", metavar="PATH", help="segment file or partition directory")
    dump_parser.add_argument("--json", action="store_true", help="one JSON object per batch, then a summary")
    dump_parser.add_argument("--records", action="store_true", help="also print each record's offset and sizes")
    dump_parser.set_defaults(func=_dump_log)
    add_broker_parser(commands)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
