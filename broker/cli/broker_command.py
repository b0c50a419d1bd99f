"""``kafkalog broker``: run the broker on a log directory, with Kafka's settings. Failures to start
(a bad setting, the port taken, an unusable log directory, ZooKeeper unreachable, the broker id
taken, a log directory of another cluster) are one line naming what is wrong."""

import argparse
import errno
import sys

from broker.arguments import Subcommands
from broker.cluster.registry import RegistryError
from broker.common.settings import ConfigError
from broker.log.errors import LogError
from broker.security.acl_store import AclStoreError


def _broker(args) -> int:
    from broker.properties import read_properties
    from broker.server import config as broker_config
    from broker.server.broker import run

    try:
        properties = read_properties(args.config) if args.config else {}
        properties.update(broker_config.parse_set_option(pair) for pair in args.set)
        config = broker_config.build(
            properties, log_dir=args.log_dir, host=args.host, port=args.port, broker_id=args.broker_id
        )
    except (ConfigError, OSError) as exc:
        return _fail(str(exc))
    try:
        return run(config)
    except (LogError, RegistryError, AclStoreError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(_start_failure(exc))


def _start_failure(exc: OSError) -> str:
    """An OSError of the start as one line: the listener's address, or the file and its problem."""
    listener = getattr(exc, "listener", None)  # a BindError
    host, port = (listener.host or "0.0.0.0", listener.port) if listener else (None, None)
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is already in use (another broker?): choose another --port, or --port 0 "
            f"for a free one"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}:{port}: {host} is not an address of this machine (see --host)"
    if exc.errno in (errno.EEXIST, errno.ENOTDIR) and exc.filename is not None:
        return f"{exc.filename}: not a directory (the log directory, or a path inside it, is a file)"
    if exc.filename is not None:
        return f"{exc.filename}: {exc.strerror}"
    return exc.strerror or str(exc)


def _fail(message: str) -> int:
    print(f"kafkalog broker: {message}", file=sys.stderr)
    return 1


def add_parser(commands: Subcommands) -> None:
    from broker.server.config import KNOWN_KEYS

    parser = commands.add_parser(
        "broker",
        help="run the broker (Kafka wire protocol) on a log directory",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Serve the logs in DIR over the Kafka protocol, so unmodified Kafka clients can\n"
        "produce, consume and create topics. Prints one line when it accepts connections:\n"
        "  kafkalog broker <id> listening on <host>:<port>\n"
        "SIGTERM or Ctrl-C shuts it down cleanly (flush, checkpoints, clean-shutdown marker).",
        epilog="examples:\n"
        "  kafkalog broker --log-dir /var/lib/kafkalog\n"
        "  kafkalog broker --log-dir data --port 0 --set num.partitions=4 --set log.retention.hours=24\n"
        "  kafkalog broker --log-dir data --config server.properties\n\n"
        "exit status: 0 clean shutdown, 1 bad settings or the broker failed, 2 usage error\n\n"
        "settings (Kafka's names and meanings):\n  " + "\n  ".join(KNOWN_KEYS),
    )
    parser.add_argument("--log-dir", help="the log directory (Kafka: log.dirs)")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 9092; 0 picks a free one)")
    parser.add_argument("--broker-id", type=int, help="broker id (default 0; Kafka: broker.id)")
    parser.add_argument("--config", metavar="FILE", help="a Kafka-style server.properties file")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka setting, for example --set log.segment.bytes=104857600 (repeatable)",
    )
    parser.set_defaults(func=_broker)
